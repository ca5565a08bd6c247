package io.metaroce.nic.dma;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A batch of copies between this daemon's memory and one application address space (a
 * {@link ProcessMemory}), run through its {@code /proc/<pid>/mem} descriptor: one {@code preadv}
 * (gather: app to daemon) or {@code pwritev} (scatter: daemon to app) call per run of entries whose
 * application ranges follow each other (a message's packets usually do), with all their daemon-side
 * pieces as iovecs. The space is resolved when the batch runs, so a space revoked meanwhile
 * (its process exited) fails every entry and nothing reaches a process that reused the PID. The
 * kernel stops at the first byte it cannot access, so a short transfer marks that entry failed and
 * the rest of the batch is retried from the entry after it: every entry ends up done or failed on
 * its own.
 *
 * <p>Single-threaded (the engine's). Bounds and key checks happen before {@link #add}; this class
 * only moves bytes.
 */
public final class DmaBatch implements AutoCloseable {
    /** The kernel's IOV_MAX: most iovecs one process_vm_* call takes. */
    public static final int IOV_MAX = 1024;

    private final boolean toApp;
    private final int capacity;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment localIov;
    private final long[] remoteAddrs;
    private final long[] lengths;
    private final int[] tags;
    private final boolean[] failed;
    /** Entries that fail without a copy (their region was deregistered). */
    private final boolean[] refused;

    private int count;
    private int space;
    private int lastErrno;
    private long calls;
    private long bytes;

    /**
     * @param toApp true for process_vm_writev (daemon to application), false for readv
     * @param capacity entries per batch, at most {@link #IOV_MAX}
     */
    public DmaBatch(boolean toApp, int capacity) {
        if (capacity < 1 || capacity > IOV_MAX) {
            throw new IllegalArgumentException("capacity " + capacity);
        }
        this.toApp = toApp;
        this.capacity = capacity;
        this.localIov = arena.allocate(LibC.IOVEC.byteSize() * capacity, 8);
        this.remoteAddrs = new long[capacity];
        this.lengths = new long[capacity];
        this.tags = new int[capacity];
        this.failed = new boolean[capacity];
        this.refused = new boolean[capacity];
    }

    /** Starts an empty batch against address space {@code space} (a {@link ProcessMemory#id()}). */
    public void begin(int space) {
        this.space = space;
        this.count = 0;
    }

    /** The address space of the batch (a {@link ProcessMemory#id()}). */
    public int pid() {
        return space;
    }

    public int count() {
        return count;
    }

    /**
     * Adds one copy of {@code length} bytes between {@code localAddr} (daemon) and
     * {@code remoteAddr} (application). Returns false when the batch is full.
     */
    public boolean add(long localAddr, long remoteAddr, long length, int tag) {
        if (count == capacity) {
            return false;
        }
        long off = count * 16L;
        localIov.set(ValueLayout.JAVA_LONG, off, localAddr);
        localIov.set(ValueLayout.JAVA_LONG, off + 8, length);
        remoteAddrs[count] = remoteAddr;
        lengths[count] = length;
        tags[count] = tag;
        failed[count] = false;
        refused[count] = false;
        count++;
        return true;
    }

    /**
     * Adds an entry that fails without any copy, for a piece whose memory may no longer be
     * touched; it is reported by {@link #failed} like a fault. Returns false when the batch is full.
     */
    public boolean addFailed(int tag) {
        if (!add(0, 0, 0, tag)) {
            return false;
        }
        refused[count - 1] = true;
        return true;
    }

    /** Runs the batch; returns how many entries failed (see {@link #failed}). */
    public int flush() {
        int failures = 0;
        int start = 0;
        int fd = ProcessMemory.fd(space);
        while (start < count) {
            if (refused[start] || fd < 0) {
                failed[start] = true;
                failures++;
                if (fd < 0) {
                    lastErrno = io.metaroce.abi.Errno.ESRCH;
                }
                start++;
                continue;
            }
            int end = start + 1;
            while (end < count && !refused[end] && remoteAddrs[end] == remoteAddrs[end - 1] + lengths[end - 1]) {
                end++;
            }
            long total = 0;
            for (int k = start; k < end; k++) {
                total += lengths[k];
            }
            long n = total == 0 ? 0 : call(fd, start, end - start);
            if (n < 0) {
                // /proc/pid/mem answers EIO for an unmapped address where process_vm_* said EFAULT.
                lastErrno = n == -io.metaroce.abi.Errno.EIO ? io.metaroce.abi.Errno.EFAULT : (int) -n;
                failed[start] = true;
                failures++;
                start++;
                continue;
            }
            bytes += n;
            int i = start;
            while (i < end && n >= lengths[i]) {
                n -= lengths[i];
                i++;
            }
            if (i < end) {
                // The kernel stopped at entry i (it never splits an iovec... except on a fault
                // inside one, where n is what fitted before it): entry i failed.
                failed[i] = true;
                failures++;
                lastErrno = io.metaroce.abi.Errno.EFAULT;
                i++;
            }
            start = i;
        }
        return failures;
    }

    public boolean failed(int entry) {
        return failed[entry];
    }

    public int tag(int entry) {
        return tags[entry];
    }

    public int lastErrno() {
        return lastErrno;
    }

    public long calls() {
        return calls;
    }

    public long bytes() {
        return bytes;
    }

    private long call(int fd, int first, int n) {
        calls++;
        MemorySegment l = localIov.asSlice(first * 16L, n * 16L);
        return toApp ? LibC.pwritev(fd, l, n, remoteAddrs[first]) : LibC.preadv(fd, l, n, remoteAddrs[first]);
    }

    @Override
    public void close() {
        arena.close();
    }
}
