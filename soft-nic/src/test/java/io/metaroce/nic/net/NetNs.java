package io.metaroce.nic.net;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Network namespaces for tests: random names, created with iproute2, all removed by
 * {@link #close()} even when the test failed; {@link #call} runs code on a thread that has
 * entered one (setns affects only the calling thread, and a netlink socket stays in the
 * namespace it was opened in).
 */
final class NetNs implements AutoCloseable {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle OPEN = LINKER.downcallHandle(
            LINKER.defaultLookup().find("open").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SETNS = LINKER.downcallHandle(
            LINKER.defaultLookup().find("setns").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(
            LINKER.defaultLookup().find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final int O_RDONLY_CLOEXEC = 0x80000;
    private static final int CLONE_NEWNET = 0x40000000;

    private final String prefix =
            "mrce-nl-" + Integer.toHexString(ThreadLocalRandom.current().nextInt()) + "-";
    private final List<String> created = new ArrayList<>();

    /** Why these tests cannot run here, or null when they can. */
    static String missingCapability() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "needs root to create network namespaces";
        }
        if (!Files.isExecutable(Path.of("/usr/sbin/ip"))
                && !Files.isExecutable(Path.of("/sbin/ip"))
                && !Files.isExecutable(Path.of("/usr/bin/ip"))) {
            return "needs iproute2 (ip)";
        }
        return null;
    }

    /** Creates a namespace with lo up and IPv6 off; returns its full name. */
    String add(String shortName) throws IOException {
        String ns = prefix + shortName;
        ip("netns", "add", ns);
        created.add(ns);
        sh(
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
                "net.ipv4.ip_forward=1");
        ip("-n", ns, "link", "set", "lo", "up");
        return ns;
    }

    /** A single-queue veth pair {@code nameA}@nsA - {@code nameB}@nsB, both up, with addresses. */
    void veth(String nsA, String nameA, String cidrA, String nsB, String nameB, String cidrB) throws IOException {
        ip(
                "link",
                "add",
                nameA,
                "netns",
                nsA,
                "numtxqueues",
                "1",
                "numrxqueues",
                "1",
                "type",
                "veth",
                "peer",
                "name",
                nameB,
                "netns",
                nsB,
                "numtxqueues",
                "1",
                "numrxqueues",
                "1");
        ip("-n", nsA, "addr", "add", cidrA, "dev", nameA);
        ip("-n", nsB, "addr", "add", cidrB, "dev", nameB);
        ip("-n", nsA, "link", "set", nameA, "up");
        ip("-n", nsB, "link", "set", nameB, "up");
    }

    /** The contents of a /sys/class/net file of {@code dev} as seen inside {@code ns}. */
    static String sys(String ns, String dev, String file) throws IOException {
        return sh("ip", "netns", "exec", ns, "cat", "/sys/class/net/" + dev + "/" + file)
                .strip();
    }

    static void ip(String... args) throws IOException {
        String[] cmd = new String[args.length + 1];
        cmd[0] = "ip";
        System.arraycopy(args, 0, cmd, 1, args.length);
        sh(cmd);
    }

    static String sh(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (p.waitFor() != 0) {
                throw new IOException(String.join(" ", cmd) + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        return out;
    }

    /** Runs {@code body} on a fresh thread inside namespace {@code ns}. */
    static <T> T call(String ns, Callable<T> body) throws Exception {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(
                () -> {
                    try (Arena arena = Arena.ofConfined()) {
                        int fd = (int) OPEN.invokeExact(arena.allocateFrom("/var/run/netns/" + ns), O_RDONLY_CLOEXEC);
                        if (fd < 0) {
                            throw new IOException("open netns " + ns + " failed");
                        }
                        int rc = (int) SETNS.invokeExact(fd, CLONE_NEWNET);
                        int ignored = (int) CLOSE.invokeExact(fd);
                        if (rc < 0) {
                            throw new IOException("setns " + ns + " failed");
                        }
                        result.set(body.call());
                    } catch (Throwable e) {
                        failure.set(e);
                    }
                },
                "netns-" + ns);
        t.start();
        t.join();
        if (failure.get() instanceof Exception e) {
            throw e;
        }
        if (failure.get() instanceof Error e) {
            throw e;
        }
        return result.get();
    }

    @Override
    public void close() {
        for (int i = created.size() - 1; i >= 0; i--) {
            try {
                ip("netns", "del", created.get(i));
            } catch (IOException e) {
                System.err.println("NetNs: " + e.getMessage());
            }
        }
        created.clear();
    }
}
