package io.metaroce.nic.dma;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Copies through /proc/self/mem: this very process's address space. */
class DmaBatchTest {
    private static ProcessMemory self;

    @org.junit.jupiter.api.BeforeAll
    static void bindSelf() throws Exception {
        self = ProcessMemory.open(LibC.getpid(), LibC.pidfdOpen(LibC.getpid()));
    }

    @org.junit.jupiter.api.AfterAll
    static void unbind() {
        self.close();
    }

    @Test
    void gatherAndScatterManyPiecesInOneCall() {
        int pid = self.id();
        try (Arena arena = Arena.ofConfined();
                DmaBatch read = new DmaBatch(false, 64);
                DmaBatch write = new DmaBatch(true, 64)) {
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
            assertThat(read.calls()).as("reversed pieces: one call each").isEqualTo(64);
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
        }
    }

    @Test
    void aBadAddressFailsOnlyItsEntry() {
        int pid = self.id();
        try (Arena arena = Arena.ofConfined();
                DmaBatch write = new DmaBatch(true, 8)) {
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
        }
    }

    @Test
    void aMissingProcessFailsEveryEntry() {
        try (Arena arena = Arena.ofConfined();
                DmaBatch read = new DmaBatch(false, 4)) {
            MemorySegment buf = arena.allocate(64, 64);
            read.begin(Integer.MAX_VALUE - 7); // no such address space
            read.add(buf.address(), buf.address(), 8, 0);
            read.add(buf.address() + 8, buf.address() + 8, 8, 1);
            assertThat(read.flush()).isEqualTo(2);
            assertThat(read.lastErrno()).isEqualTo(io.metaroce.abi.Errno.ESRCH);
        }
    }

    @Test
    void aRefusedEntryFailsWithoutCopyingAndTheOthersLand() {
        int pid = self.id();
        try (Arena arena = Arena.ofConfined();
                DmaBatch write = new DmaBatch(true, 8)) {
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

    @Test
    void followingPiecesGoInOneCall() {
        try (Arena arena = Arena.ofConfined();
                DmaBatch write = new DmaBatch(true, 64)) {
            MemorySegment src = arena.allocate(64 * 100, 64);
            src.fill((byte) 3);
            MemorySegment dst = arena.allocate(64 * 100, 64);
            write.begin(self.id());
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
                DmaBatch write = new DmaBatch(true, 4)) {
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
}
