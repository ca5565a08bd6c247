package io.metaroce.nic.dma;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The 8-byte read-modify-write of an RDMA atomic in another process's address space (a
 * {@link ProcessMemory} id): a read of the old value through its {@code /proc/<pid>/mem}, then a
 * write of the new one (compare and swap writes only when
 * the comparison holds). The value is a native-order (host) 64-bit integer, as with rxe.
 *
 * <p>Atomicity: the engine thread runs every MetaRoCE operation of a daemon one after the other,
 * so the read-modify-write is atomic with respect to every other RDMA operation (atomics, WRITEs,
 * READs) this daemon executes; it is <b>not</b> atomic with respect to the target process's own CPU
 * accesses to that word (as with HCAs that report IBV_ATOMIC_HCA). Single-threaded (the engine's).
 */
public final class RemoteAtomic implements AutoCloseable {
    private final Arena arena = Arena.ofShared();
    private final MemorySegment value = arena.allocate(8, 8);
    private final MemorySegment localIov = arena.allocate(LibC.IOVEC.byteSize(), 8);
    private long original;
    private long addr;
    private int lastErrno;

    public RemoteAtomic() {
        localIov.set(ValueLayout.JAVA_LONG, 0, value.address());
        localIov.set(ValueLayout.JAVA_LONG, 8, 8L);
    }

    /** Compare and swap at {@code addr} of address space {@code pid}; false when the memory is not accessible. */
    public boolean compareAndSwap(int pid, long addr, long compare, long swap) {
        if (!read(pid, addr)) {
            return false;
        }
        return original != compare || write(pid, swap);
    }

    /** Fetch and add at {@code addr} of address space {@code pid}; false when the memory is not accessible. */
    public boolean fetchAndAdd(int pid, long addr, long add) {
        return read(pid, addr) && write(pid, original + add);
    }

    /** The value found at the target by the last successful operation. */
    public long original() {
        return original;
    }

    public int lastErrno() {
        return lastErrno;
    }

    private boolean read(int pid, long addr) {
        this.addr = addr;
        int fd = ProcessMemory.fd(pid);
        long n = fd < 0 ? -io.metaroce.abi.Errno.ESRCH : LibC.preadv(fd, localIov, 1, addr);
        if (n != 8) {
            lastErrno = n < 0 ? (int) -n : io.metaroce.abi.Errno.EFAULT;
            return false;
        }
        original = value.get(ValueLayout.JAVA_LONG, 0);
        return true;
    }

    private boolean write(int pid, long v) {
        value.set(ValueLayout.JAVA_LONG, 0, v);
        int fd = ProcessMemory.fd(pid);
        long n = fd < 0 ? -io.metaroce.abi.Errno.ESRCH : LibC.pwritev(fd, localIov, 1, addr);
        if (n != 8) {
            lastErrno = n < 0 ? (int) -n : io.metaroce.abi.Errno.EFAULT;
            return false;
        }
        return true;
    }

    @Override
    public void close() {
        arena.close();
    }
}
