package io.metaroce.nic.dma;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Copies between this test and an application address space: this very process's, through its
 * /proc/self/mem descriptor on the test's thread (the space bound without credentials), and with
 * process_vm_* on a copy thread ({@link DmaBatch#enterCopyThread}: no CAP_SYS_PTRACE) for a
 * space bound with this process's credentials. The copy tests run both ways ({@code vm}).
 */
class DmaBatchTest {
    private static ProcessMemory self;
    /** This process again, bound with its credentials: process_vm_* allowed. */
    private static ProcessMemory selfVm;
    /** A thread that called {@link DmaBatch#enterCopyThread}. */
    private static ExecutorService copyThread;

    @BeforeAll
    static void bindSelf() throws Exception {
        self = ProcessMemory.open(LibC.getpid(), LibC.pidfdOpen(LibC.getpid()));
        selfVm = ProcessMemory.open(LibC.getpid(), LibC.pidfdOpen(LibC.getpid()), LibC.getuid(), LibC.getgid());
        copyThread = Executors.newSingleThreadExecutor();
        assertThat(copyThread.submit(DmaBatch::enterCopyThread).get()).isTrue();
    }

    @AfterAll
    static void unbind() {
        copyThread.shutdownNow();
        self.close();
        selfVm.close();
    }

    /** A batch that tries process_vm_* whatever its size (the tests' copies are small). */
    private static DmaBatch batch(boolean toApp, int capacity) {
        DmaBatch b = new DmaBatch(toApp, capacity);
        b.processVmMinBytes(0);
        return b;
    }

    interface SpaceTest {
        void run(int space) throws Exception;
    }

    /** Runs {@code body} on the copy thread against {@link #selfVm} ({@code vm}), else here against {@link #self}. */
    private static void copying(boolean vm, SpaceTest body) throws Exception {
        if (!vm) {
            body.run(self.id());
            return;
        }
        copyThread
                .submit(() -> {
                    body.run(selfVm.id());
                    return null;
                })
                .get();
    }

    @ParameterizedTest(name = "process_vm: {0}")
    @ValueSource(booleans = {false, true})
    void gatherAndScatterManyPiecesInOneCall(boolean vm) throws Exception {
        copying(vm, DmaBatchTest::gatherAndScatter);
    }

    private static void gatherAndScatter(int pid) {
        try (Arena arena = Arena.ofConfined();
                DmaBatch read = batch(false, 64);
                DmaBatch write = batch(true, 64)) {
            MemorySegment app = arena.allocate(64 * 1000, 64);
            MemorySegment daemon = arena.allocate(64 * 1000, 64);
            byte[] data = new byte[64 * 1000];
            new Random(1).nextBytes(data);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, app, 0, data.length);
            read.begin(pid);
            for (int i = 0; i < 64; i++) { // reversed order, to see each piece lands in its place
                read.add(daemon.address() + i * 1000L, app.address() + (63 - i) * 1000L, 1000, i);
            }
            assertThat(read.flush()).isZero();
            boolean vm = pid == selfVm.id();
            assertThat(read.calls())
                    .as("reversed pieces: one process_vm_readv for all, or a descriptor call each")
                    .isEqualTo(vm ? 1 : 64);
            for (int i = 0; i < 64; i++) {
                assertThat(daemon.asSlice(i * 1000L, 1000).toArray(ValueLayout.JAVA_BYTE))
                        .isEqualTo(app.asSlice((63 - i) * 1000L, 1000).toArray(ValueLayout.JAVA_BYTE));
            }
            MemorySegment back = arena.allocate(64 * 1000, 64);
            write.begin(pid);
            for (int i = 0; i < 64; i++) {
                write.add(daemon.address() + i * 1000L, back.address() + (63 - i) * 1000L, 1000, i);
            }
            assertThat(write.flush()).isZero();
            assertThat(back.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);
            assertThat(read.processVmCalls() + write.processVmCalls())
                    .as("process_vm_* made every call, or none")
                    .isEqualTo(vm ? 2 : 0);
            assertThat(read.fallbacks() + write.fallbacks()).isZero();
        }
    }

    @ParameterizedTest(name = "process_vm: {0}")
    @ValueSource(booleans = {false, true})
    void aBadAddressFailsOnlyItsEntry(boolean vm) throws Exception {
        copying(vm, DmaBatchTest::badAddress);
    }

    private static void badAddress(int pid) {
        try (Arena arena = Arena.ofConfined();
                DmaBatch write = batch(true, 8)) {
            MemorySegment src = arena.allocate(300, 64);
            src.fill((byte) 7);
            MemorySegment dst = arena.allocate(300, 64);
            write.begin(pid);
            write.add(src.address(), dst.address(), 100, 0);
            write.add(src.address() + 100, 16, 100, 1); // page zero: EFAULT
            write.add(src.address() + 200, dst.address() + 200, 100, 2);
            assertThat(write.flush()).isEqualTo(1);
            assertThat(write.failed(0)).isFalse();
            assertThat(write.failed(1)).isTrue();
            assertThat(write.failed(2)).isFalse();
            assertThat(dst.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 7);
            assertThat(dst.get(ValueLayout.JAVA_BYTE, 299)).isEqualTo((byte) 7);
            assertThat(dst.get(ValueLayout.JAVA_BYTE, 150)).isZero();
            boolean vm = pid == selfVm.id();
            assertThat(write.processVmCalls())
                    .as("one process_vm_writev for the batch, stopped by the bad entry")
                    .isEqualTo(vm ? 1 : 0);
            assertThat(write.fallbacks())
                    .as("the entries from the bad one on went to the descriptor")
                    .isEqualTo(vm ? 1 : 0);
        }
    }

    @Test
    void aMissingProcessFailsEveryEntry() {
        try (Arena arena = Arena.ofConfined();
                DmaBatch read = batch(false, 4)) {
            MemorySegment buf = arena.allocate(64, 64);
            read.begin(Integer.MAX_VALUE - 7); // no such address space
            read.add(buf.address(), buf.address(), 8, 0);
            read.add(buf.address() + 8, buf.address() + 8, 8, 1);
            assertThat(read.flush()).isEqualTo(2);
            assertThat(read.lastErrno()).isEqualTo(io.metaroce.abi.Errno.ESRCH);
        }
    }

    @ParameterizedTest(name = "process_vm: {0}")
    @ValueSource(booleans = {false, true})
    void aRefusedEntryFailsWithoutCopyingAndTheOthersLand(boolean vm) throws Exception {
        copying(vm, DmaBatchTest::refusedEntry);
    }

    private static void refusedEntry(int pid) {
        try (Arena arena = Arena.ofConfined();
                DmaBatch write = batch(true, 8)) {
            MemorySegment src = arena.allocate(300, 64);
            src.fill((byte) 9);
            MemorySegment dst = arena.allocate(300, 64);
            write.begin(pid);
            write.add(src.address(), dst.address(), 100, 0);
            write.addFailed(1); // a piece whose region was deregistered
            write.add(src.address() + 200, dst.address() + 200, 100, 2);
            assertThat(write.flush()).isEqualTo(1);
            assertThat(write.failed(0)).isFalse();
            assertThat(write.failed(1)).isTrue();
            assertThat(write.failed(2)).isFalse();
            assertThat(write.calls()).isEqualTo(2);
            assertThat(dst.get(ValueLayout.JAVA_BYTE, 99)).isEqualTo((byte) 9);
            assertThat(dst.get(ValueLayout.JAVA_BYTE, 150)).isZero();
            assertThat(dst.get(ValueLayout.JAVA_BYTE, 200)).isEqualTo((byte) 9);
        }
    }

    @ParameterizedTest(name = "process_vm: {0}")
    @ValueSource(booleans = {false, true})
    void followingPiecesGoInOneCall(boolean vm) throws Exception {
        copying(vm, DmaBatchTest::followingPieces);
    }

    private static void followingPieces(int pid) {
        try (Arena arena = Arena.ofConfined();
                DmaBatch write = batch(true, 64)) {
            MemorySegment src = arena.allocate(64 * 100, 64);
            src.fill((byte) 3);
            MemorySegment dst = arena.allocate(64 * 100, 64);
            write.begin(pid);
            for (int i = 0; i < 64; i++) { // scattered daemon pieces, one app range
                write.add(src.address() + (63 - i) * 100L, dst.address() + i * 100L, 100, i);
            }
            assertThat(write.flush()).isZero();
            assertThat(write.calls()).isEqualTo(1);
            assertThat(dst.toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 3);
        }
    }

    @Test
    void aRevokedSpaceIsNeverReached() throws Exception {
        ProcessMemory m = ProcessMemory.open(LibC.getpid(), LibC.pidfdOpen(LibC.getpid()));
        try (Arena arena = Arena.ofConfined();
                DmaBatch write = batch(true, 4)) {
            MemorySegment src = arena.allocate(64, 64);
            src.fill((byte) 5);
            MemorySegment dst = arena.allocate(64, 64);
            m.revoke();
            write.begin(m.id());
            write.add(src.address(), dst.address(), 64, 0);
            assertThat(write.flush()).isEqualTo(1);
            assertThat(write.lastErrno()).isEqualTo(io.metaroce.abi.Errno.ESRCH);
            assertThat(dst.toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
        } finally {
            m.close();
        }
    }

    @Test
    void anExitedProcessCannotBeBoundAndItsSpaceFails() throws Exception {
        Process p = new ProcessBuilder("sleep", "1000").start();
        int pid = (int) p.pid();
        int pidFd = LibC.pidfdOpen(pid);
        ProcessMemory m = ProcessMemory.open(pid, LibC.pidfdOpen(pid));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment iov = arena.allocate(16, 8);
            MemorySegment buf = arena.allocate(8, 8);
            iov.set(ValueLayout.JAVA_LONG, 0, buf.address());
            iov.set(ValueLayout.JAVA_LONG, 8, 8L);
            p.destroyForcibly().waitFor(); // exited and reaped: the number is free for reuse
            assertThat(LibC.pidfdAlive(pidFd)).isFalse();
            long n = ProcessMemory.read(m.id(), iov, 0x400000);
            assertThat(n).as("the old address space is gone").isLessThanOrEqualTo(0);
            assertThatThrownBy(() -> ProcessMemory.open(pid, pidFd)) // ENOENT, or ESRCH had the number been reused
                    .isInstanceOf(io.metaroce.nic.sys.NativeException.class);
        } finally {
            m.close();
        }
    }

    @Test
    void aReadOnlyPageIsStillWrittenThroughTheDescriptor() throws Exception {
        copying(true, pid -> {
            MemorySegment page = LibC.mmap(4096, LibC.PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            try (Arena arena = Arena.ofConfined();
                    DmaBatch write = batch(true, 4)) {
                MemorySegment src = arena.allocate(100, 64);
                src.fill((byte) 4);
                write.begin(pid);
                write.add(src.address(), page.address() + 100, 100, 0);
                assertThat(write.flush()).isZero();
                assertThat(write.processVmCalls()).isEqualTo(1);
                assertThat(write.fallbacks())
                        .as("process_vm_writev: EFAULT on a read-only page")
                        .isEqualTo(1);
                assertThat(page.asSlice(100, 100).toArray(ValueLayout.JAVA_BYTE))
                        .containsOnly((byte) 4);
                assertThat(page.get(ValueLayout.JAVA_BYTE, 99)).isZero();
            } finally {
                LibC.munmap(page);
            }
        });
    }

    @Test
    void aSpaceBoundWithoutCredentialsNeverUsesProcessVm() throws Exception {
        copyThread
                .submit(() -> {
                    followingPieces(self.id());
                    try (Arena arena = Arena.ofConfined();
                            DmaBatch read = batch(false, 4)) {
                        MemorySegment buf = arena.allocate(64, 64);
                        read.begin(self.id());
                        read.add(buf.address(), buf.address() + 32, 32, 0);
                        assertThat(read.flush()).isZero();
                        assertThat(read.processVmCalls()).isZero();
                    }
                    return null;
                })
                .get();
    }

    /**
     * The binding argument of {@link ProcessMemory}, shown with the kernel: a root process, bound
     * with root's credentials (this test runs as root), execs a set-user-ID program of another
     * user. Before the exec the copy thread reads its memory with process_vm_readv; after it the
     * kernel refuses process_vm_* (the credentials no longer match and the copy thread holds no
     * CAP_SYS_PTRACE), the descriptor is bound to the address space that the exec dropped, and
     * so neither a read nor a write reaches the new program.
     */
    @Test
    void aProcessThatExecsASetUidProgramIsOutOfReach() throws Exception {
        Assumptions.assumeTrue(LibC.getuid() == 0, "needs root (chown of a set-user-ID copy of sleep)");
        Path dir = Files.createTempDirectory("mrce-dma-suid");
        Path suid = dir.resolve("sleep");
        Process p = null;
        ProcessMemory m = null;
        try {
            Files.copy(Path.of("/bin/sleep"), suid);
            run("chown", "65534:65534", suid.toString());
            run("chmod", "4755", suid.toString());
            run("chmod", "755", dir.toString());
            // the child reads one line, then execs the set-user-ID program
            p = new ProcessBuilder("sh", "-c", "read go; exec " + suid + " 1000").start();
            int pid = (int) p.pid();
            m = ProcessMemory.open(pid, LibC.pidfdOpen(pid), 0, 0);
            int space = m.id();
            long shellText = firstReadableMapping(pid);
            byte[] before =
                    copyThread.submit(() -> readFrom(space, shellText, 1, 0)).get();
            assertThat(before)
                    .as("read with process_vm_readv, nothing fell back")
                    .isNotNull();

            p.getOutputStream().write("go\n".getBytes(StandardCharsets.US_ASCII));
            p.getOutputStream().flush();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!effectiveUid(pid).equals("65534") && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            Assumptions.assumeTrue(
                    effectiveUid(pid).equals("65534"), "the set-user-ID bit took no effect (a nosuid file system?)");

            long newText = firstReadableMapping(pid);
            assertThat(copyThread.submit(() -> readFrom(space, newText, 1, 1)).get())
                    .as("the exec'd program's memory is not read")
                    .isNull();
            copyThread
                    .submit(() -> {
                        try (Arena arena = Arena.ofConfined();
                                DmaBatch write = batch(true, 4)) {
                            MemorySegment src = arena.allocate(64, 64);
                            write.begin(space);
                            write.add(src.address(), newText, 64, 0);
                            assertThat(write.flush()).as("nor written").isEqualTo(1);
                        }
                        return null;
                    })
                    .get();
        } finally {
            if (m != null) {
                m.close();
            }
            if (p != null) {
                p.destroyForcibly().waitFor();
            }
            Files.deleteIfExists(suid);
            Files.deleteIfExists(dir);
        }
    }

    /** 64 bytes at {@code addr} of {@code space}, or null when the copy failed; checks the calls made. */
    private static byte[] readFrom(int space, long addr, int vmCalls, int fallbacks) {
        try (Arena arena = Arena.ofConfined();
                DmaBatch read = batch(false, 4)) {
            MemorySegment buf = arena.allocate(64, 64);
            read.begin(space);
            read.add(buf.address(), addr, 64, 0);
            int failed = read.flush();
            assertThat(read.processVmCalls()).isEqualTo(vmCalls);
            assertThat(read.fallbacks()).isEqualTo(fallbacks);
            return failed == 0 ? buf.toArray(ValueLayout.JAVA_BYTE) : null;
        }
    }

    private static long firstReadableMapping(int pid) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
            if (line.split(" ")[1].startsWith("r")) {
                return Long.parseUnsignedLong(line.substring(0, line.indexOf('-')), 16);
            }
        }
        throw new AssertionError("no readable mapping in " + pid);
    }

    private static String effectiveUid(int pid) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (line.startsWith("Uid:")) {
                return line.split("\\s+")[2];
            }
        }
        return "";
    }

    private static void run(String... cmd) throws Exception {
        assertThat(new ProcessBuilder(cmd).inheritIO().start().waitFor())
                .as(String.join(" ", cmd))
                .isZero();
    }

    private static final int MAP_PRIVATE = 2;
    private static final int MAP_ANONYMOUS = 0x20;

    @Test
    void batchesBelowTheThresholdKeepToTheDescriptor() throws Exception {
        copying(true, pid -> {
            int piece = 8192;
            int pieces = (int) (DmaBatch.PROCESS_VM_MIN_BYTES / piece);
            try (Arena arena = Arena.ofConfined();
                    DmaBatch small = new DmaBatch(false, 64);
                    DmaBatch large = new DmaBatch(false, 64)) {
                MemorySegment app = arena.allocate((long) piece * pieces, 64);
                app.fill((byte) 6);
                MemorySegment local = arena.allocate((long) piece * pieces, 64);
                small.begin(pid);
                for (int i = 0; i < pieces - 1; i++) {
                    small.add(local.address() + (long) i * piece, app.address() + (long) i * piece, piece, i);
                }
                assertThat(small.flush()).isZero();
                assertThat(small.processVmCalls())
                        .as("one piece short of the threshold")
                        .isZero();
                large.begin(pid);
                for (int i = 0; i < pieces; i++) {
                    large.add(local.address() + (long) i * piece, app.address() + (long) i * piece, piece, i);
                }
                assertThat(large.flush()).isZero();
                assertThat(large.processVmCalls()).isEqualTo(1);
                assertThat(local.toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 6);
            }
        });
    }
}
