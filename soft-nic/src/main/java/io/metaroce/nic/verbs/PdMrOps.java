package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static io.metaroce.nic.verbs.OpSupport.empty;
import static io.metaroce.nic.verbs.OpSupport.fail;
import static io.metaroce.nic.verbs.OpSupport.resp;

import io.metaroce.abi.Errno;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.abi.HandleRespDescriptor;
import io.metaroce.abi.RegMrReqDescriptor;
import io.metaroce.abi.RegMrRespDescriptor;
import io.metaroce.abi.ReregMrReqDescriptor;
import io.metaroce.abi.ShareMrReqDescriptor;
import io.metaroce.control.LocalSession;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.dma.ProcessMemory;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The PD and MR ops: ALLOC_PD, DEALLOC_PD, REG_MR, DEREG_MR, REREG_MR, with the argument rules of
 * ibv_reg_mr(3), the page probe and the PD's user count the other objects take.
 */
final class PdMrOps {
    /** enum ibv_rereg_mr_flags. */
    static final int REREG_MR_CHANGE_TRANSLATION = 1;

    static final int REREG_MR_CHANGE_PD = 2;
    static final int REREG_MR_CHANGE_ACCESS = 4;
    private static final int SUPPORTED_ACCESS = Ibv.ACCESS_LOCAL_WRITE
            | Ibv.ACCESS_REMOTE_WRITE
            | Ibv.ACCESS_REMOTE_READ
            | Ibv.ACCESS_REMOTE_ATOMIC
            | Ibv.ACCESS_RELAXED_ORDERING
            | Ibv.ACCESS_ON_DEMAND;

    private final EngineAgent engine;
    private final MrTable mrTable;
    private final Limits limits;
    private final UserUsage usage;
    private final DeviceCounts counts;

    PdMrOps(EngineAgent engine, MrTable mrTable, Limits limits, UserUsage usage, DeviceCounts counts) {
        this.engine = engine;
        this.mrTable = mrTable;
        this.limits = limits;
        this.usage = usage;
        this.counts = counts;
    }

    // ---- PD ----

    void allocPd(SessionObjects s, int seq) {
        if (!usage.charge(s, UserQuota.PDS, 1)) {
            fail(s, MRCE_OP_ALLOC_PD, seq, Errno.ENOMEM);
            return;
        }
        synchronized (counts) {
            if (counts.pdCount >= limits.maxPd()) {
                usage.discharge(s, UserQuota.PDS, 1);
                fail(s, MRCE_OP_ALLOC_PD, seq, Errno.ENOMEM);
                return;
            }
            counts.pdCount++;
        }
        Pd pd = new Pd(s.newHandle(), s.session.id());
        s.pds.put(pd.handle, pd);
        if (s.context != null) {
            s.context.pds.put(pd.handle, pd);
        }
        ByteBuffer r = resp(HandleRespDescriptor.SIZE);
        r.putInt((int) HandleRespDescriptor.OFF_HANDLE, pd.handle);
        s.session.respond(MRCE_OP_ALLOC_PD, seq, 0, r);
    }

    void deallocPd(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        Pd pd = s.pds.get(handle);
        if (pd == null) {
            // An imported PD is destroyed by the connection that made it (ibv_unimport_pd here).
            fail(s, MRCE_OP_DEALLOC_PD, seq, s.importedPds.containsKey(handle) ? Errno.EPERM : Errno.ENOENT);
            return;
        }
        // Under the PD's lock, so that no other member of the context imports it meanwhile.
        synchronized (pd) {
            if (pd.users > 0) {
                fail(s, MRCE_OP_DEALLOC_PD, seq, Errno.EBUSY);
                return;
            }
            if (s.context != null) {
                s.context.pds.remove(handle, pd);
            }
        }
        s.pds.remove(handle);
        synchronized (counts) {
            counts.pdCount--;
        }
        usage.discharge(s, UserQuota.PDS, 1);
        s.session.respond(MRCE_OP_DEALLOC_PD, seq, 0, empty());
    }

    /**
     * Adds {@code delta} to the PD's users (MRs, QPs, SRQs of any member of its context, and
     * imports). Under the PD's own lock: members of one context update it under different
     * session locks.
     */
    static void use(Pd pd, int delta) {
        synchronized (pd) {
            pd.users += delta;
        }
    }

    // ---- MR ----

    void regMr(SessionObjects s, int seq, ByteBuffer p) {
        Pd pd = s.pd(p.getInt((int) RegMrReqDescriptor.OFF_PD));
        int access = p.getInt((int) RegMrReqDescriptor.OFF_ACCESS);
        long addr = p.getLong((int) RegMrReqDescriptor.OFF_ADDR);
        long length = p.getLong((int) RegMrReqDescriptor.OFF_LENGTH);
        long iova = p.getLong((int) RegMrReqDescriptor.OFF_IOVA);
        int err = checkMr(pd, access, addr, length, iova);
        if (err == 0 && (access & Ibv.ACCESS_ON_DEMAND) == 0) {
            err = probe(s.space, addr, length); // ODP: pages may be mapped later
        }
        if (err != 0) {
            fail(s, MRCE_OP_REG_MR, seq, err);
            return;
        }
        if (!usage.charge(s, UserQuota.MRS, 1)) {
            fail(s, MRCE_OP_REG_MR, seq, Errno.ENOMEM);
            return;
        }
        if (!usage.charge(s, UserQuota.MR_BYTES, pinned(access, length))) {
            usage.discharge(s, UserQuota.MRS, 1);
            fail(s, MRCE_OP_REG_MR, seq, Errno.ENOMEM);
            return;
        }
        Mr mr;
        synchronized (counts) {
            mr = counts.mrCount < limits.maxMr()
                    ? mrTable.register(s.newHandle(), pd, s.space, addr, length, iova, access)
                    : null;
            if (mr != null) {
                counts.mrCount++;
            }
        }
        if (mr == null) {
            usage.discharge(s, UserQuota.MRS, 1);
            usage.discharge(s, UserQuota.MR_BYTES, pinned(access, length));
            fail(s, MRCE_OP_REG_MR, seq, Errno.ENOMEM);
            return;
        }
        use(pd, 1);
        s.mrs.put(mr.handle, mr);
        if (s.context != null) {
            s.context.mrs.put(mr.handle, mr);
        }
        ByteBuffer r = resp(RegMrRespDescriptor.SIZE);
        r.putInt((int) RegMrRespDescriptor.OFF_HANDLE, mr.handle);
        r.putInt((int) RegMrRespDescriptor.OFF_LKEY, mr.lkey);
        r.putInt((int) RegMrRespDescriptor.OFF_RKEY, mr.rkey);
        s.session.respond(MRCE_OP_REG_MR, seq, 0, r);
    }

    /**
     * The bytes an MR counts against the user's MR_BYTES quota: its length, none for an
     * on-demand-paging MR (nothing of it is resident on the daemon's account, and an implicit
     * one spans the whole address space).
     */
    static long pinned(int access, long length) {
        return (access & Ibv.ACCESS_ON_DEMAND) != 0 ? 0 : length;
    }

    /**
     * An implicit ODP registration: ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...),
     * the whole address space, the keys valid at any address.
     */
    static boolean implicitOdp(int access, long addr, long length, long iova) {
        return (access & Ibv.ACCESS_ON_DEMAND) != 0 && addr == 0 && iova == 0 && length == -1L;
    }

    /** ibv_reg_mr(3) argument rules; 0 or an errno. */
    private int checkMr(Pd pd, int access, long addr, long length, long iova) {
        if (pd == null) {
            return Errno.ENOENT;
        }
        if ((access & ~SUPPORTED_ACCESS) != 0) {
            return (access & (Ibv.ACCESS_ZERO_BASED | Ibv.ACCESS_MW_BIND | Ibv.ACCESS_HUGETLB)) != 0
                    ? Errno.EOPNOTSUPP
                    : Errno.EINVAL;
        }
        if ((access & (Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_ATOMIC)) != 0
                && (access & Ibv.ACCESS_LOCAL_WRITE) == 0) {
            return Errno.EINVAL;
        }
        if (implicitOdp(access, addr, length, iova)) {
            return 0; // above max_mr_size by definition; Mr.contains compares unsigned
        }
        if (length <= 0 || Long.compareUnsigned(length, limits.maxMrSize()) > 0) {
            return Errno.EINVAL;
        }
        if (Long.compareUnsigned(addr + length, addr) < 0 || Long.compareUnsigned(iova + length, iova) < 0) {
            return Errno.EINVAL;
        }
        return 0;
    }

    /** Like ibv_reg_mr pinning pages: the first and last byte must be readable in the process. */
    private static int probe(int space, long addr, long length) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(1);
            MemorySegment local = arena.allocate(16, 8);
            local.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, buf.address());
            local.set(java.lang.foreign.ValueLayout.JAVA_LONG, 8, 1L);
            for (long a : new long[] {addr, addr + length - 1}) {
                long n = a < 0 ? -Errno.EFAULT : ProcessMemory.read(space, local, a);
                if (n == -Errno.EIO) {
                    return Errno.EFAULT; // /proc/pid/mem's word for an unmapped address
                }
                if (n < 0) {
                    return (int) -n;
                }
                if (n != 1) {
                    return Errno.EFAULT;
                }
            }
        }
        return 0;
    }

    void deregMr(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        Mr mr = s.mrs.remove(handle);
        if (mr == null) {
            fail(s, MRCE_OP_DEREG_MR, seq, s.importedMrs.containsKey(handle) ? Errno.EPERM : Errno.ENOENT);
            return;
        }
        if (s.context != null) {
            s.context.mrs.remove(handle, mr);
        }
        releaseMr(mr);
        usage.discharge(s, UserQuota.MRS, 1);
        usage.discharge(s, UserQuota.MR_BYTES, pinned(mr.access, mr.length));
        LocalSession session = s.session;
        // Answer only after the engine revoked it: no copy touches the region once dereg returns.
        Runnable revoke = () -> {
            mr.revoke();
            session.respond(MRCE_OP_DEREG_MR, seq, 0, empty());
        };
        while (!engine.submit(revoke)) {
            Thread.onSpinWait();
        }
    }

    void releaseMr(Mr mr) {
        mrTable.remove(mr);
        use(mr.pd, -1);
        synchronized (counts) {
            counts.mrCount--;
        }
    }

    // ---- share ----

    /**
     * SHARE_MR (control-protocol.md, "Shared regions"): the application backs region {@code handle}
     * with a memfd, file offset 0 at {@code base}; the daemon takes a copy of that descriptor from
     * the process itself (pidfd_getfd on the session's pidfd: the kernel's ptrace check, and no
     * descriptor of anyone else), refuses a file that can shrink (a copy past its end would fault
     * the daemon), one not on shmem (a hugetlbfs page the pool cannot supply would fault it too)
     * or one that does not cover the region, maps it shared, and from then on copies to and from
     * the region through the mapping. Answered once the engine took the mapping; it goes with the
     * region (dereg, rereg, the session's end). Errors leave the region as it was.
     */
    void shareMr(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt(ShareMrReqDescriptor.OFF_HANDLE);
        int fd = p.getInt(ShareMrReqDescriptor.OFF_FD);
        long base = p.getLong(ShareMrReqDescriptor.OFF_BASE);
        Mr mr = s.mrs.get(handle);
        ProcessMemory space = s.memory;
        if (mr == null || space == null) {
            fail(s, MRCE_OP_SHARE_MR, seq, mr == null ? Errno.ENOENT : Errno.ESRCH);
            return;
        }
        long end = mr.addr + mr.length;
        if ((mr.access & Ibv.ACCESS_ON_DEMAND) != 0
                || (base & (PAGE - 1)) != 0
                || Long.compareUnsigned(base, mr.addr) > 0
                || Long.compareUnsigned(end, mr.addr) < 0
                || fd < 0) {
            fail(s, MRCE_OP_SHARE_MR, seq, fd < 0 ? Errno.EBADF : Errno.EINVAL);
            return;
        }
        long need = (end - base + PAGE - 1) & -PAGE;
        int file = LibC.pidfdGetfd(space.pidFd(), fd);
        if (file < 0) {
            fail(s, MRCE_OP_SHARE_MR, seq, -file);
            return;
        }
        MemorySegment mapping;
        try {
            int seals = LibC.fcntl(file, LibC.F_GET_SEALS, 0);
            long size = LibC.fileSize(file);
            // shmem only: a hugetlbfs memfd can be sealed too, but a fault on a page its pool
            // cannot supply would be SIGBUS in the daemon
            if (seals < 0
                    || (seals & LibC.F_SEAL_SHRINK) == 0
                    || size < need
                    || LibC.fileSystemType(file) != LibC.TMPFS_MAGIC) {
                fail(s, MRCE_OP_SHARE_MR, seq, Errno.EINVAL);
                return;
            }
            mapping = LibC.mmap(need, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, file, 0);
        } catch (NativeException e) {
            fail(s, MRCE_OP_SHARE_MR, seq, e.errno());
            return;
        } finally {
            LibC.close(file);
        }
        LocalSession session = s.session;
        Runnable attach = () -> {
            ProcessMemory.Shared shared = space.share(base, mapping);
            int err = 0;
            if (shared == null) {
                OpSupport.unmap(mapping);
                err = Errno.ENOMEM;
            } else if (!mr.attachShared(shared)) {
                err = Errno.EBUSY; // deregistered meanwhile, or shared already: unmapped again
            }
            session.respond(MRCE_OP_SHARE_MR, seq, err, empty());
        };
        while (!engine.submit(attach)) {
            Thread.onSpinWait();
        }
    }

    /** The page size the shared regions' bases and mappings are rounded to. */
    private static final long PAGE = 4096;

    // ---- rereg ----

    void reregMr(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) ReregMrReqDescriptor.OFF_HANDLE);
        int flags = p.getInt((int) ReregMrReqDescriptor.OFF_FLAGS);
        Mr old = s.mrs.get(handle);
        if (old == null) {
            fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOENT);
            return;
        }
        int all = REREG_MR_CHANGE_TRANSLATION | REREG_MR_CHANGE_PD | REREG_MR_CHANGE_ACCESS;
        if (flags == 0 || (flags & ~all) != 0) {
            fail(s, MRCE_OP_REREG_MR, seq, Errno.EINVAL);
            return;
        }
        Pd pd = old.pd;
        if ((flags & REREG_MR_CHANGE_PD) != 0) {
            pd = s.pd(p.getInt((int) ReregMrReqDescriptor.OFF_PD));
            if (pd == null) {
                fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOENT);
                return;
            }
        }
        int access =
                (flags & REREG_MR_CHANGE_ACCESS) != 0 ? p.getInt((int) ReregMrReqDescriptor.OFF_ACCESS) : old.access;
        boolean move = (flags & REREG_MR_CHANGE_TRANSLATION) != 0;
        long addr = move ? p.getLong((int) ReregMrReqDescriptor.OFF_ADDR) : old.addr;
        long length = move ? p.getLong((int) ReregMrReqDescriptor.OFF_LENGTH) : old.length;
        long iova = move ? p.getLong((int) ReregMrReqDescriptor.OFF_IOVA) : old.iova;
        int err = checkMr(pd, access, addr, length, iova);
        if (err == 0 && move && (access & Ibv.ACCESS_ON_DEMAND) == 0) {
            err = probe(s.space, addr, length);
        }
        if (err != 0) {
            fail(s, MRCE_OP_REREG_MR, seq, err);
            return;
        }
        long grown = pinned(access, length) - pinned(old.access, old.length);
        if (!usage.charge(s, UserQuota.MR_BYTES, grown)) {
            fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOMEM);
            return;
        }
        // New keys first: if none is free the region stays as it was.
        Mr mr = mrTable.register(handle, pd, s.space, addr, length, iova, access);
        if (mr == null) {
            usage.discharge(s, UserQuota.MR_BYTES, grown);
            fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOMEM);
            return;
        }
        mrTable.remove(old);
        use(old.pd, -1);
        use(pd, 1);
        s.mrs.put(handle, mr);
        if (s.context != null) {
            s.context.mrs.put(handle, mr);
        }
        ByteBuffer r = resp(RegMrRespDescriptor.SIZE);
        r.putInt((int) RegMrRespDescriptor.OFF_HANDLE, mr.handle);
        r.putInt((int) RegMrRespDescriptor.OFF_LKEY, mr.lkey);
        r.putInt((int) RegMrRespDescriptor.OFF_RKEY, mr.rkey);
        LocalSession session = s.session;
        // As for DEREG_MR: answer once the engine revoked the old keys, so no copy touches the
        // old range (or uses the old rights) after ibv_rereg_mr returns.
        Runnable revoke = () -> {
            old.revoke();
            session.respond(MRCE_OP_REREG_MR, seq, 0, r);
        };
        while (!engine.submit(revoke)) {
            Thread.onSpinWait();
        }
    }
}
