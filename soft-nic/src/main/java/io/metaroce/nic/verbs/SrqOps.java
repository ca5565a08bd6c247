package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static io.metaroce.nic.verbs.OpSupport.destroyUnused;
import static io.metaroce.nic.verbs.OpSupport.empty;
import static io.metaroce.nic.verbs.OpSupport.fail;
import static io.metaroce.nic.verbs.OpSupport.pow2;
import static io.metaroce.nic.verbs.OpSupport.resp;
import static io.metaroce.nic.verbs.OpSupport.unmap;
import static io.metaroce.nic.verbs.PdMrOps.use;

import io.metaroce.abi.CreateSrqReqDescriptor;
import io.metaroce.abi.CreateSrqRespDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.abi.ModifySrqReqDescriptor;
import io.metaroce.abi.SrqAttrDescriptor;
import io.metaroce.nic.model.AsyncEventSink;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The SRQ ops: CREATE_SRQ (its ring in a memfd handed to the provider), MODIFY_SRQ (the limit
 * only), QUERY_SRQ, DESTROY_SRQ.
 */
final class SrqOps {
    /** enum ibv_srq_attr_mask. */
    static final int SRQ_MAX_WR = 1;

    static final int SRQ_LIMIT = 2;

    private final Limits limits;
    private final UserUsage usage;
    private final DeviceCounts counts;

    SrqOps(Limits limits, UserUsage usage, DeviceCounts counts) {
        this.limits = limits;
        this.usage = usage;
        this.counts = counts;
    }

    // ---- SRQ ----

    void createSrq(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        Pd pd = s.pd(p.getInt((int) CreateSrqReqDescriptor.OFF_PD));
        int maxWr = p.getInt((int) CreateSrqReqDescriptor.OFF_MAX_WR);
        int maxSge = p.getInt((int) CreateSrqReqDescriptor.OFF_MAX_SGE);
        int limit = p.getInt((int) CreateSrqReqDescriptor.OFF_SRQ_LIMIT);
        if (pd == null) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.ENOENT);
            return;
        }
        // ibv_create_srq(3): EINVAL for values beyond the device's max_srq_wr / max_srq_sge.
        if (maxWr < 1 || maxWr > limits.maxSrqWr() || maxSge < 0 || maxSge > limits.maxSrqSge()) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.EINVAL);
            return;
        }
        int slots = pow2(maxWr);
        if (limit < 0 || limit > slots) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.EINVAL);
            return;
        }
        if (!usage.charge(s, UserQuota.SRQS, 1)) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.ENOMEM);
            return;
        }
        synchronized (counts) {
            if (counts.srqCount >= limits.maxSrq()) {
                usage.discharge(s, UserQuota.SRQS, 1);
                fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.ENOMEM);
                return;
            }
            counts.srqCount++;
        }
        long size = Srq.mapSize(slots);
        SharedMemory shm = SharedMemory.create("mrce-srq", size, () -> {
            counts.uncount(MRCE_OP_CREATE_SRQ);
            usage.discharge(s, UserQuota.SRQS, 1);
        });
        int fd = shm.fd();
        MemorySegment map = shm.map();
        int sge = Math.max(1, maxSge);
        Srq srq = new Srq(s.newHandle(), s.space, pd, map, slots, sge);
        srq.asyncEvents = s.events;
        srq.arm(limit);
        use(pd, 1);
        s.srqs.put(srq.handle, srq);
        ByteBuffer r = resp(CreateSrqRespDescriptor.SIZE);
        r.putInt((int) CreateSrqRespDescriptor.OFF_HANDLE, srq.handle);
        r.putInt((int) CreateSrqRespDescriptor.OFF_MAX_WR, slots);
        r.putInt((int) CreateSrqRespDescriptor.OFF_MAX_SGE, sge);
        r.putLong((int) CreateSrqRespDescriptor.OFF_MAP_SIZE, size);
        s.session.respond(MRCE_OP_CREATE_SRQ, seq, 0, r, fd);
        LibC.close(fd);
    }

    void modifySrq(SessionObjects s, int seq, ByteBuffer p) {
        Srq srq = s.srqs.get(p.getInt((int) ModifySrqReqDescriptor.OFF_HANDLE));
        if (srq == null) {
            fail(s, MRCE_OP_MODIFY_SRQ, seq, Errno.ENOENT);
            return;
        }
        int mask = p.getInt((int) ModifySrqReqDescriptor.OFF_ATTR_MASK);
        int limit = p.getInt((int) ModifySrqReqDescriptor.OFF_SRQ_LIMIT);
        // Resizing (IBV_SRQ_MAX_WR) is not supported: EINVAL, as for a device without
        // IBV_DEVICE_SRQ_RESIZE.
        if ((mask & ~SRQ_LIMIT) != 0) {
            fail(s, MRCE_OP_MODIFY_SRQ, seq, Errno.EINVAL);
            return;
        }
        if ((mask & SRQ_LIMIT) != 0) {
            if (limit < 0 || limit > srq.ring.slotCount()) {
                fail(s, MRCE_OP_MODIFY_SRQ, seq, Errno.EINVAL);
                return;
            }
            srq.arm(limit);
        }
        s.session.respond(MRCE_OP_MODIFY_SRQ, seq, 0, empty());
    }

    void querySrq(SessionObjects s, int seq, ByteBuffer p) {
        Srq srq = s.srqs.get(p.getInt((int) HandleReqDescriptor.OFF_HANDLE));
        if (srq == null) {
            fail(s, MRCE_OP_QUERY_SRQ, seq, Errno.ENOENT);
            return;
        }
        ByteBuffer r = resp(SrqAttrDescriptor.SIZE);
        r.putInt((int) SrqAttrDescriptor.OFF_MAX_WR, srq.ring.slotCount());
        r.putInt((int) SrqAttrDescriptor.OFF_MAX_SGE, srq.maxSge);
        r.putInt((int) SrqAttrDescriptor.OFF_SRQ_LIMIT, srq.limit());
        s.session.respond(MRCE_OP_QUERY_SRQ, seq, 0, r);
    }

    void destroySrq(SessionObjects s, int seq, ByteBuffer p) {
        // No QP uses it, so the engine no longer reads it: a QP's users count drops only after
        // the engine dropped that QP.
        destroyUnused(s, MRCE_OP_DESTROY_SRQ, seq, p, s.srqs, srq -> srq.qpUsers, srq -> {
            releaseSrq(srq);
            usage.discharge(s, UserQuota.SRQS, 1);
        });
    }

    /** Caller holds the session lock; no QP uses the SRQ any more. */
    void releaseSrq(Srq srq) {
        srq.asyncEvents = AsyncEventSink.NONE;
        use(srq.pd, -1);
        unmap(srq.mapping);
        counts.uncount(MRCE_OP_CREATE_SRQ);
    }
}
