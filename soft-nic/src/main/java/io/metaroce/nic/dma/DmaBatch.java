package io.metaroce.nic.dma;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A batch of copies between this daemon's memory and one application address space (a
 * {@link ProcessMemory}). For a batch of {@link #PROCESS_VM_MIN_BYTES} or more where the space
 * allows it and this thread gave up {@code CAP_SYS_PTRACE} ({@link #enterCopyThread}; the binding
 * argument is in {@link ProcessMemory}): one {@code process_vm_readv} (gather: app to daemon) or
 * {@code process_vm_writev} (scatter: daemon to app) for every entry between refused ones, an
 * iovec per entry on the daemon's side and one per run of following application ranges on the
 * application's (the kernel pins the pages of each remote iovec apart, so a message's following
 * packets go as one range). Else, and for whatever that call refuses or does short: one
 * {@code preadv/pwritev} on the space's {@code /proc/<pid>/mem} descriptor per run of entries whose
 * application ranges follow each other (a message's packets usually do), with all their
 * daemon-side pieces as iovecs (the descriptor takes one application offset per call; a write
 * through it reaches pages process_vm_writev may not, such as read-only ones a region registered
 * for remote write covers). One process_vm_* call per run made four times the calls of one per
 * batch under {@code ib_send_bw}, whose messages all come from one buffer (docs/benchmarks.md).
 * The space is resolved when the batch runs, so a space revoked meanwhile (its process exited)
 * fails every entry and nothing reaches a process that reused the PID. The kernel stops at the
 * first byte it cannot access, so a short transfer marks that entry failed and the rest of the
 * batch is retried from the entry after it: every entry ends up done or failed on its own.
 *
 * <p>An entry that falls wholly inside a region the process shared with the daemon (SHARE_MR,
 * {@link ProcessMemory#share}) is copied at once by {@link #add}, through the daemon's mapping of
 * the region's memfd: no system call, and it never fails.
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
    /** The remote iovecs of a process_vm_* call: its runs of following application ranges. */
    private final MemorySegment remoteIov;

    private final long[] remoteAddrs;
    private final long[] lengths;
    private final int[] tags;
    private final boolean[] failed;
    /** Entries that fail without a copy (their region was deregistered). */
    private final boolean[] refused;
    /** Entries already copied through a shared region's mapping by {@link #add}. */
    private final boolean[] done;
    /** The batch's space when it has shared regions, else null (set by {@link #begin}). */
    private ProcessMemory sharedSpace;
    /** Every address: copies between absolute addresses (the shared regions' mappings). */
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private int count;
    /** Bytes of the entries added since {@link #begin}. */
    private long batchBytes;
    /** Smallest batch that tries process_vm_* ({@link #PROCESS_VM_MIN_BYTES}; tests lower it). */
    private long processVmMinBytes = PROCESS_VM_MIN_BYTES;

    /**
     * Batches smaller than this keep to the descriptor: per call the two paths cost about the same
     * up to some 8 KiB (reads, 64 B: 1.77 us through /proc/pid/mem, 1.95 with process_vm_readv;
     * 64 KiB: 6.13 against 4.60 us; 1 MiB: 90.5 against 53.2; bench/dma/proc_mem_bench.c, recorded
     * in docs/benchmarks.md), and the pidfd check that binds process_vm_* to the process costs 1.2
     * us per batch.
     */
    public static final long PROCESS_VM_MIN_BYTES = 32 * 1024;

    private int space;
    private int lastErrno;
    private long calls;
    private long bytes;
    private long processVmCalls;
    private long fallbacks;
    private long sharedCopies;

    /** Whether this thread may copy with process_vm_* (see {@link #enterCopyThread}). */
    private static final ThreadLocal<Boolean> COPY_THREAD = new ThreadLocal<>();

    /**
     * Makes the calling thread one that copies with {@code process_vm_*} where a space allows it:
     * it drops {@code CAP_SYS_PTRACE} from its own effective set (the process's other threads
     * keep theirs), so that the kernel's ptrace check binds each call to the process's
     * credentials (see {@link ProcessMemory}). The engine thread calls this once when it starts.
     * Returns false, and the thread keeps to the descriptors, when the capability cannot be
     * dropped or {@code -Dmetaroce.dma.procmem=true} asks for the descriptors only.
     */
    public static boolean enterCopyThread() {
        boolean ok = !Boolean.getBoolean("metaroce.dma.procmem") && LibC.dropEffectiveCapability(LibC.CAP_SYS_PTRACE);
        COPY_THREAD.set(ok);
        return ok;
    }

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
        this.remoteIov = arena.allocate(LibC.IOVEC.byteSize() * capacity, 8);
        this.remoteAddrs = new long[capacity];
        this.lengths = new long[capacity];
        this.tags = new int[capacity];
        this.failed = new boolean[capacity];
        this.refused = new boolean[capacity];
        this.done = new boolean[capacity];
    }

    /** Starts an empty batch against address space {@code space} (a {@link ProcessMemory#id()}). */
    public void begin(int space) {
        this.space = space;
        this.count = 0;
        this.batchBytes = 0;
        ProcessMemory m = space == 0 ? null : ProcessMemory.get(space);
        this.sharedSpace = m != null && m.hasShared() ? m : null;
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
        long daemonAddr = sharedSpace != null && length > 0 ? sharedSpace.sharedAddress(remoteAddr, length) : 0;
        if (daemonAddr != 0) {
            if (toApp) {
                MemorySegment.copy(ALL, localAddr, ALL, daemonAddr, length);
            } else {
                MemorySegment.copy(ALL, daemonAddr, ALL, localAddr, length);
            }
            bytes += length;
            sharedCopies++;
        } else {
            localIov.set(ValueLayout.JAVA_LONG, count * 16L, localAddr);
            localIov.set(ValueLayout.JAVA_LONG, count * 16L + 8, length);
            batchBytes += length;
        }
        remoteAddrs[count] = remoteAddr;
        lengths[count] = length;
        tags[count] = tag;
        failed[count] = false;
        refused[count] = false;
        done[count] = daemonAddr != 0;
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
        ProcessMemory m = ProcessMemory.get(space);
        // Before the call: the process is unreaped, so its PID names it (see ProcessMemory).
        boolean vm = batchBytes >= processVmMinBytes
                && m != null
                && m.processVm()
                && COPY_THREAD.get() == Boolean.TRUE
                && LibC.pidfdAlive(m.pidFd());
        while (start < count) {
            if (done[start]) {
                start++;
                continue;
            }
            if (refused[start] || m == null) {
                failed[start] = true;
                failures++;
                if (m == null) {
                    lastErrno = io.metaroce.abi.Errno.ESRCH;
                }
                start++;
                continue;
            }
            if (vm && m.processVm()) {
                int stretch = start + 1;
                while (stretch < count && !refused[stretch] && !done[stretch]) {
                    stretch++;
                }
                int next = processVmStretch(m, start, stretch);
                if (next != stretch) {
                    vm = false; // what it left goes to the descriptor (a fault, a read-only page, a refusal)
                }
                start = next;
                continue;
            }
            int end = start + 1;
            while (end < count
                    && !refused[end]
                    && !done[end]
                    && remoteAddrs[end] == remoteAddrs[end - 1] + lengths[end - 1]) {
                end++;
            }
            long total = 0;
            for (int k = start; k < end; k++) {
                total += lengths[k];
            }
            long n = total == 0 ? 0 : call(m, start, end - start);
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

    /** Tests: the smallest batch that tries process_vm_* ({@link #PROCESS_VM_MIN_BYTES} by default). */
    void processVmMinBytes(long bytes) {
        processVmMinBytes = bytes;
    }

    /** Calls made with process_vm_* (the rest of {@link #calls} went to the descriptor). */
    public long processVmCalls() {
        return processVmCalls;
    }

    /** Entries copied through a shared region's mapping (no system call). */
    public long sharedCopies() {
        return sharedCopies;
    }

    /** The counters, for the daemon's exit log. */
    public String summary() {
        return String.format(
                "%d calls (%d process_vm_*, %d fallbacks), %d bytes, %d shared copies",
                calls, processVmCalls, fallbacks, bytes, sharedCopies);
    }

    /** Runs that went to the descriptor after process_vm_* refused them or did them short. */
    public long fallbacks() {
        return fallbacks;
    }

    /**
     * Entries {@code first..end-1} (none refused) in one process_vm_* call; returns the first entry
     * it did not do whole ({@code end} when it did them all). A refusal (EPERM: the credentials no
     * longer match; ESRCH) sends the space to the descriptor for good.
     */
    private int processVmStretch(ProcessMemory m, int first, int end) {
        int n = end - first;
        long total = 0;
        for (int k = first; k < end; k++) {
            total += lengths[k];
        }
        if (total == 0) {
            return end;
        }
        int runs = 0;
        long runStart = remoteAddrs[first];
        long runLength = lengths[first];
        for (int k = first + 1; k < end; k++) {
            if (remoteAddrs[k] == runStart + runLength) {
                runLength += lengths[k];
                continue;
            }
            remoteIov.set(ValueLayout.JAVA_LONG, runs * 16L, runStart);
            remoteIov.set(ValueLayout.JAVA_LONG, runs * 16L + 8, runLength);
            runs++;
            runStart = remoteAddrs[k];
            runLength = lengths[k];
        }
        remoteIov.set(ValueLayout.JAVA_LONG, runs * 16L, runStart);
        remoteIov.set(ValueLayout.JAVA_LONG, runs * 16L + 8, runLength);
        runs++;
        calls++;
        processVmCalls++;
        MemorySegment l = localIov.asSlice(first * 16L, n * 16L);
        MemorySegment r = remoteIov.asSlice(0, runs * 16L);
        long done = toApp ? LibC.processVmWritev(m.pid(), l, n, r, runs) : LibC.processVmReadv(m.pid(), l, n, r, runs);
        if (done == total) {
            bytes += done;
            return end;
        }
        if (done == -io.metaroce.abi.Errno.EPERM || done == -io.metaroce.abi.Errno.ESRCH) {
            m.refuseProcessVm();
        }
        fallbacks++;
        int i = first;
        while (done > 0 && i < end && done >= lengths[i]) {
            done -= lengths[i];
            bytes += lengths[i];
            i++;
        }
        return i;
    }

    /** One run through the descriptor: entries {@code first..first+n-1}, from {@code remoteAddrs[first]} on. */
    private long call(ProcessMemory m, int first, int n) {
        calls++;
        MemorySegment l = localIov.asSlice(first * 16L, n * 16L);
        int fd = m.memFd();
        return toApp ? LibC.pwritev(fd, l, n, remoteAddrs[first]) : LibC.preadv(fd, l, n, remoteAddrs[first]);
    }

    @Override
    public void close() {
        arena.close();
    }
}
