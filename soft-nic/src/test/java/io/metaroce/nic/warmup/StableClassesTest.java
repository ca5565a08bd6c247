package io.metaroce.nic.warmup;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link StableClasses} loads, before the data path is compiled, the classes that the control
 * channel's first fd passing and the first route lookup loaded after it (and whose loading
 * deoptimized the compiled data path). Each case runs in a fresh JVM with {@code
 * -Xlog:class+load}, so that what loads when is this test's own and not the test runner's.
 */
class StableClassesTest {

    /** A fresh JVM: optionally {@link StableClasses#load}, then MARK, then the late operations. */
    public static final class Probe {
        public static void main(String[] args) {
            if (args.length > 0 && args[0].equals("load")) {
                StableClasses.load();
            }
            System.out.println("MARK");
            lateOperations();
            System.out.println("END");
        }

        /** What the daemon does after ready, off the data path, that once loaded new classes. */
        static void lateOperations() {
            try (Arena arena = Arena.ofConfined()) {
                // the control channel's sendmsg: a pointer stored into an iovec and a msghdr
                MemorySegment data = arena.allocate(1);
                MemorySegment iov = arena.allocate(16, 8);
                iov.set(ValueLayout.ADDRESS, 0, data);
                iov.set(ValueLayout.JAVA_LONG, 8, 1L);
                // the route lookup: a MAC address copied out of a netlink reply
                MemorySegment reply = arena.allocate(64, 8);
                byte[] mac = reply.asSlice(4, 6).toArray(ValueLayout.JAVA_BYTE);
                if (mac.length != 6 || iov.get(ValueLayout.ADDRESS, 0).address() != data.address()) {
                    throw new AssertionError("the late operations went wrong");
                }
            }
        }
    }

    @Test
    void afterLoadTheLateOperationsLoadNoClass() throws Exception {
        assertThat(classesLoadedAfterMark(true))
                .as("classes the late operations loaded after StableClasses.load()")
                .isEmpty();
    }

    @Test
    void withoutItTheyLoadTheClassesThatDeoptimized() throws Exception {
        // the control: without load() the same operations load what StableClasses is for
        assertThat(classesLoadedAfterMark(false))
                .contains("java.lang.invoke.IndirectVarHandle", "jdk.internal.foreign.HeapMemorySegmentImpl");
    }

    @Test
    void loadIsIdempotent() {
        StableClasses.load();
        StableClasses.load();
        Probe.lateOperations();
    }

    /**
     * Names of the memory access classes (segments, layouts, var and method handles; hidden ones left
     * out: no class extends them) loaded between MARK and END.
     */
    private static List<String> classesLoadedAfterMark(boolean load) throws IOException, InterruptedException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(
                java,
                "-Xshare:auto",
                "-Xlog:class+load=info:stdout:none",
                "-cp",
                System.getProperty("java.class.path"),
                Probe.class.getName()));
        if (load) {
            cmd.add("load");
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        int mark = out.indexOf("\nMARK\n");
        int end = out.indexOf("\nEND\n");
        assertThat(mark).as(out).isPositive();
        assertThat(end).as(out).isGreaterThan(mark);
        List<String> loaded = new ArrayList<>();
        for (String line : out.substring(mark, end).split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length >= 2 && f[1].equals("source:") && !f[0].contains("/0x") && memoryAccess(f[0])) {
                loaded.add(f[0]);
            }
        }
        return loaded;
    }

    /** The families whose late loading deoptimized the data path; the rest (a map's node) may vary. */
    private static boolean memoryAccess(String name) {
        return name.startsWith("jdk.internal.foreign.")
                || name.startsWith("java.lang.foreign.")
                || name.startsWith("java.lang.invoke.");
    }
}
