package io.metaroce.nic.dma;

import io.metaroce.abi.Errno;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The address space of one application process, bound at session start so that no access can
 * ever reach another process that later gets the same PID (or the same process after an exec):
 *
 * <ul>
 *   <li>a pidfd of the process, from the control socket ({@code SO_PEERPIDFD}: the process that
 *       connected, not whoever holds the number now), which the daemon watches for the exit;
 *   <li>a descriptor of {@code /proc/<pid>/mem}, which stays tied to the address space it was
 *       opened on: once that process exits or execs, every access through it fails. It is opened
 *       while the pidfd shows the process not yet reaped, so the number named that process.
 * </ul>
 *
 * <p>The descriptor is the path that always holds; it is also the slower one (the kernel copies
 * through a bounce page). {@link DmaBatch} copies with {@code process_vm_readv/writev} instead,
 * one copy, where the kernel itself guarantees the same binding: the process's credentials
 * (SO_PEERCRED at connect) are the daemon's own real user and group, and the copying thread holds
 * no {@code CAP_SYS_PTRACE} ({@link DmaBatch#enterCopyThread}). Then the kernel's ptrace access
 * check, made under the exec lock of the target, refuses the call whenever the process no longer
 * has exactly those credentials or is not dumpable: after an exec of a set-user-ID or
 * set-group-ID program or one with file capabilities, and for any other user's process that took
 * the PID. A process of the same user that took the PID is excluded by the pidfd: the batch
 * checks that the process is unreaped before the call, and PIDs are handed out cyclically. What
 * stays reachable through {@code process_vm_*} is the same process after an exec of an ordinary
 * program of its own user, until the daemon sees the session end (no privilege is gained: that
 * user could ptrace it). Anything the call refuses or does short goes through the descriptor.
 *
 * <p>Objects (MRs, QPs, SRQs) name the space by {@link #id()}, a number never reused in this JVM;
 * the engine resolves it with {@link #get(int)} on every batch, lock-free and allocation-free, and
 * gets null once the space was {@link #revoke() revoked}. The descriptors are closed by
 * {@link #close()} on the thread that copies (the engine's), so a closed number cannot be reused
 * under a copy in progress.
 */
public final class ProcessMemory {
    /** Simultaneous address spaces; ids carry a generation above these bits. */
    static final int SLOT_BITS = 12;

    private static final int SLOTS = 1 << SLOT_BITS;
    private static final AtomicReferenceArray<ProcessMemory> TABLE = new AtomicReferenceArray<>(SLOTS);
    private static final AtomicInteger NEXT = new AtomicInteger(1);

    private final int id;
    private final int pid;
    private final int memFd;
    private final int pidFd;
    /**
     * Whether copies may use {@code process_vm_*} (the credentials match the daemon's; see the
     * class comment); cleared by the copying thread when the kernel refuses one.
     */
    private boolean processVm;

    private boolean closed;

    /**
     * The process's shared regions (SHARE_MR): application range [start, end) is daemon memory
     * from {@code daemon[i]} on. Engine thread only; at most {@link #MAX_SHARED}, the rest keep to
     * the copies above.
     */
    static final int MAX_SHARED = 64;

    private final long[] sharedStart = new long[MAX_SHARED];
    private final long[] sharedEnd = new long[MAX_SHARED];
    private final long[] sharedDaemon = new long[MAX_SHARED];
    private final Shared[] sharedOwner = new Shared[MAX_SHARED];
    private int sharedCount;

    private ProcessMemory(int id, int pid, int memFd, int pidFd, boolean processVm) {
        this.id = id;
        this.pid = pid;
        this.memFd = memFd;
        this.pidFd = pidFd;
        this.processVm = processVm;
    }

    /**
     * Binds process {@code pid} (as this daemon's /proc numbers it) whose pidfd is {@code pidFd}
     * (this object owns it from now on, also on failure), with its credentials unknown: copies go
     * through the descriptor only.
     *
     * @throws NativeException ESRCH when the process is gone, EACCES when the daemon may not
     *     access its memory, ENOMEM when every slot is taken
     */
    public static ProcessMemory open(int pid, int pidFd) throws NativeException {
        return open(pid, pidFd, -1, -1);
    }

    /**
     * As {@link #open(int, int)}, for a process whose credentials at connect were {@code uid} and
     * {@code gid}: when they are the daemon's real user and group, copies may use
     * {@code process_vm_*} (class comment).
     */
    public static ProcessMemory open(int pid, int pidFd, int uid, int gid) throws NativeException {
        int memFd;
        try {
            memFd = LibC.open("/proc/" + pid + "/mem", LibC.O_RDWR | LibC.O_CLOEXEC);
        } catch (NativeException e) {
            LibC.close(pidFd);
            throw e.errno() == Errno.ENOENT
                    ? new NativeException("process " + pid + " exited before its session began", Errno.ESRCH)
                    : e;
        }
        if (!LibC.pidfdAlive(pidFd)) {
            // Reaped before the open ended: the number may already name someone else.
            LibC.close(memFd);
            LibC.close(pidFd);
            throw new NativeException("process " + pid + " exited before its session began", Errno.ESRCH);
        }
        for (int attempt = 0; attempt < SLOTS; attempt++) {
            int id = NEXT.getAndIncrement() & 0x7fffffff;
            if (id == 0) {
                continue;
            }
            ProcessMemory m =
                    new ProcessMemory(id, pid, memFd, pidFd, uid != -1 && uid == LibC.getuid() && gid == LibC.getgid());
            if (TABLE.compareAndSet(id & (SLOTS - 1), null, m)) {
                return m;
            }
        }
        LibC.close(memFd);
        LibC.close(pidFd);
        throw new NativeException("no free address-space slot for process " + pid, Errno.ENOMEM);
    }

    /**
     * Binds this very process once and runs every call a session start and a copy make (pidfd,
     * open, getsockopt, preadv, pwritev), so their first use, which links and compiles the native
     * calls, happens at daemon start and not in a client's first HELLO (whose probe times out).
     */
    public static void warmUp() throws NativeException {
        int self = LibC.getpid();
        int pidFd = LibC.pidfdOpen(self);
        if (pidFd < 0) {
            throw new NativeException("pidfd_open(" + self + ")", -pidFd);
        }
        ProcessMemory m = open(self, pidFd, LibC.getuid(), LibC.getgid());
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment buf = arena.allocate(8, 8);
            java.lang.foreign.MemorySegment iov = arena.allocate(16, 8);
            iov.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, buf.address());
            iov.set(java.lang.foreign.ValueLayout.JAVA_LONG, 8, 8L);
            read(m.id, iov, buf.address());
            LibC.pwritev(m.memFd, iov, 0, buf.address());
            LibC.processVmReadv(self, iov, 1, iov, 1);
            LibC.processVmWritev(self, iov, 0, iov, 0);
            LibC.pidfdAlive(m.pidFd);
            LibC.getsockoptInt(-1, LibC.SOL_SOCKET, LibC.SO_PEERPIDFD); // EBADF: only the call
        } finally {
            m.close();
        }
    }

    /** The /proc/pid/mem descriptor of space {@code id}, or -1 when it is unknown or revoked. */
    public static int fd(int id) {
        ProcessMemory m = get(id);
        return m != null ? m.memFd : -1;
    }

    /** Space {@code id}, or null when it is unknown or revoked. */
    static ProcessMemory get(int id) {
        ProcessMemory m = TABLE.get(id & (SLOTS - 1));
        return m != null && m.id == id ? m : null;
    }

    int memFd() {
        return memFd;
    }

    /** Whether copies may try {@code process_vm_*} (copying thread only). */
    boolean processVm() {
        return processVm;
    }

    /** The kernel refused {@code process_vm_*} for this process: the descriptor from now on. */
    void refuseProcessVm() {
        processVm = false;
    }

    public int id() {
        return id;
    }

    public int pid() {
        return pid;
    }

    /** The pidfd: readable once the process has exited. */
    public int pidFd() {
        return pidFd;
    }

    /** Any thread: from now on no new copy resolves this space (one in flight may finish). */
    public void revoke() {
        TABLE.compareAndSet(id & (SLOTS - 1), this, null);
    }

    /**
     * A daemon mapping of a memfd that backs application memory (a region the application
     * shared, SHARE_MR): copies that fall wholly inside it are a plain
     * memory copy, no system call. {@link #close()} on the engine thread removes and unmaps it.
     */
    public static final class Shared implements AutoCloseable {
        private final ProcessMemory space;
        private final MemorySegment mapping;
        private boolean closed;

        private Shared(ProcessMemory space, MemorySegment mapping) {
            this.space = space;
            this.mapping = mapping;
        }

        /** Engine thread: no copy goes through the mapping from now on, and it is unmapped. */
        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            space.removeShared(this);
            try {
                LibC.munmap(mapping);
            } catch (io.metaroce.nic.sys.NativeException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /**
     * Engine thread: from now on copies inside application range [appStart, appStart +
     * mapping.byteSize()) go through {@code mapping} (the daemon's shared mapping of the memfd
     * that backs that range in the process). Returns its handle, or null when the space is closed
     * or its table is full: then the caller unmaps, and the range keeps to {@code process_vm_*}.
     */
    public Shared share(long appStart, MemorySegment mapping) {
        if (closed || sharedCount == MAX_SHARED) {
            return null;
        }
        Shared h = new Shared(this, mapping);
        sharedStart[sharedCount] = appStart;
        sharedEnd[sharedCount] = appStart + mapping.byteSize();
        sharedDaemon[sharedCount] = mapping.address();
        sharedOwner[sharedCount] = h;
        sharedCount++;
        return h;
    }

    private void removeShared(Shared h) {
        for (int i = 0; i < sharedCount; i++) {
            if (sharedOwner[i] == h) {
                int last = --sharedCount;
                sharedStart[i] = sharedStart[last];
                sharedEnd[i] = sharedEnd[last];
                sharedDaemon[i] = sharedDaemon[last];
                sharedOwner[i] = sharedOwner[last];
                sharedOwner[last] = null;
                return;
            }
        }
    }

    /** Engine thread: whether any shared region is mapped. */
    boolean hasShared() {
        return sharedCount > 0;
    }

    /**
     * Engine thread: the daemon address of application range [addr, addr + length) when it lies
     * wholly inside one shared region, else 0.
     */
    long sharedAddress(long addr, long length) {
        for (int i = 0; i < sharedCount; i++) {
            long start = sharedStart[i];
            if (Long.compareUnsigned(addr, start) >= 0
                    && Long.compareUnsigned(length, sharedEnd[i] - start) <= 0
                    && Long.compareUnsigned(addr - start, sharedEnd[i] - start - length) <= 0) {
                return sharedDaemon[i] + (addr - start);
            }
        }
        return 0;
    }

    /** Revokes and closes both descriptors; on the copying (engine) thread, or when none copies. */
    public synchronized void close() {
        revoke();
        while (sharedCount > 0) {
            sharedOwner[sharedCount - 1].close();
        }
        if (!closed) {
            closed = true;
            LibC.close(memFd);
            LibC.close(pidFd);
        }
    }

    /**
     * Reads {@code length} bytes at {@code addr} of space {@code id} into {@code local}
     * (control-path probes): bytes read, or -errno (ESRCH once revoked).
     */
    public static long read(int id, java.lang.foreign.MemorySegment iov, long addr) {
        int fd = fd(id);
        return fd < 0 ? -Errno.ESRCH : LibC.preadv(fd, iov, 1, addr);
    }
}
