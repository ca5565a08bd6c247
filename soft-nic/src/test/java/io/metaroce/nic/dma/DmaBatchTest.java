package io.metaroce.nic.dma;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** process_vm_readv/writev against this very process. */
class DmaBatchTest {

    @Test
    void gatherAndScatterManyPiecesInOneCall() {
        int pid = LibC.getpid();
        try (Arena arena = Arena.ofConfined(); DmaBatch read = new DmaBatch(false, 64);
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
            assertThat(read.calls()).isEqualTo(1);
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
        int pid = LibC.getpid();
        try (Arena arena = Arena.ofConfined(); DmaBatch write = new DmaBatch(true, 8)) {
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
        try (Arena arena = Arena.ofConfined(); DmaBatch read = new DmaBatch(false, 4)) {
            MemorySegment buf = arena.allocate(64, 64);
            read.begin(Integer.MAX_VALUE - 7); // no such pid
            read.add(buf.address(), buf.address(), 8, 0);
            read.add(buf.address() + 8, buf.address() + 8, 8, 1);
            assertThat(read.flush()).isEqualTo(2);
            assertThat(read.lastErrno()).isEqualTo(io.metaroce.nic.sys.Errno.ESRCH);
        }
    }

    @Test
    void aRefusedEntryFailsWithoutCopyingAndTheOthersLand() {
        int pid = LibC.getpid();
        try (Arena arena = Arena.ofConfined(); DmaBatch write = new DmaBatch(true, 8)) {
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
}
