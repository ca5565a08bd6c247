package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static io.metaroce.nic.verbs.OpSupport.destroyUnused;
import static io.metaroce.nic.verbs.OpSupport.fail;
import static io.metaroce.nic.verbs.OpSupport.pow2;
import static io.metaroce.nic.verbs.OpSupport.resp;
import static io.metaroce.nic.verbs.OpSupport.unmap;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.CreateCqReqDescriptor;
import io.metaroce.abi.CreateCqRespDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.HandleRespDescriptor;
import io.metaroce.nic.model.CompChannel;
import io.metaroce.nic.model.Cq;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The completion channel and CQ ops: CREATE_COMP_CHANNEL, DESTROY_COMP_CHANNEL, CREATE_CQ (its
 * ring in a memfd handed to the provider), DESTROY_CQ.
 */
final class CqOps {
    private final Limits limits;
    private final UserUsage usage;
    private final DeviceCounts counts;

    CqOps(Limits limits, UserUsage usage, DeviceCounts counts) {
        this.limits = limits;
        this.usage = usage;
        this.counts = counts;
    }

    // ---- completion channels ----

    void createChannel(SessionObjects s, int seq) throws NativeException {
        if (s.channels.size() >= limits.maxCompChannel()) {
            fail(s, MRCE_OP_CREATE_COMP_CHANNEL, seq, Errno.ENOMEM);
            return;
        }
        // Blocking semaphore eventfd: the application's ibv_get_cq_event reads it and may block.
        int fd = LibC.eventfd(0, LibC.EFD_SEMAPHORE | LibC.EFD_CLOEXEC);
        CompChannel ch = new CompChannel(s.newHandle(), fd);
        s.channels.put(ch.handle, ch);
        ByteBuffer r = resp(HandleRespDescriptor.SIZE);
        r.putInt((int) HandleRespDescriptor.OFF_HANDLE, ch.handle);
        s.session.respond(MRCE_OP_CREATE_COMP_CHANNEL, seq, 0, r, fd);
    }

    void destroyChannel(SessionObjects s, int seq, ByteBuffer p) {
        destroyUnused(
                s, MRCE_OP_DESTROY_COMP_CHANNEL, seq, p, s.channels, ch -> ch.cqUsers, ch -> LibC.close(ch.eventFd));
    }

    // ---- CQ ----

    void createCq(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        int cqe = p.getInt((int) CreateCqReqDescriptor.OFF_CQE);
        int chHandle = p.getInt((int) CreateCqReqDescriptor.OFF_CHANNEL);
        CompChannel ch = null;
        if (chHandle != AbiConstants.NO_HANDLE) {
            ch = s.channels.get(chHandle);
            if (ch == null) {
                fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOENT);
                return;
            }
        }
        if (cqe < 1 || cqe > limits.maxCqe()) {
            fail(s, MRCE_OP_CREATE_CQ, seq, Errno.EINVAL);
            return;
        }
        int slots = pow2(cqe);
        if (!usage.charge(s, UserQuota.CQS, 1)) {
            fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOMEM);
            return;
        }
        if (!usage.charge(s, UserQuota.CQ_ENTRIES, slots)) {
            usage.discharge(s, UserQuota.CQS, 1);
            fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOMEM);
            return;
        }
        synchronized (counts) {
            if (counts.cqCount >= limits.maxCq()) {
                usage.discharge(s, UserQuota.CQ_ENTRIES, slots);
                usage.discharge(s, UserQuota.CQS, 1);
                fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOMEM);
                return;
            }
            counts.cqCount++;
        }
        long size = (io.metaroce.nic.abi.RingFlyweight.byteSize(MRCE_CQE_SIZE, slots) + 4095) & ~4095L;
        SharedMemory shm = SharedMemory.create("mrce-cq", size, () -> {
            counts.uncount(MRCE_OP_CREATE_CQ);
            usage.discharge(s, UserQuota.CQ_ENTRIES, slots);
            usage.discharge(s, UserQuota.CQS, 1);
        });
        int fd = shm.fd();
        MemorySegment map = shm.map();
        Cq cq = new Cq(s.newHandle(), map, slots, ch);
        if (ch != null) {
            ch.cqUsers++;
        }
        s.cqs.put(cq.handle, cq);
        ByteBuffer r = resp(CreateCqRespDescriptor.SIZE);
        r.putInt((int) CreateCqRespDescriptor.OFF_HANDLE, cq.handle);
        r.putInt((int) CreateCqRespDescriptor.OFF_CQE, slots);
        r.putLong((int) CreateCqRespDescriptor.OFF_MAP_SIZE, size);
        s.session.respond(MRCE_OP_CREATE_CQ, seq, 0, r, fd);
        LibC.close(fd);
    }

    void destroyCq(SessionObjects s, int seq, ByteBuffer p) {
        destroyUnused(s, MRCE_OP_DESTROY_CQ, seq, p, s.cqs, cq -> cq.qpUsers, cq -> {
            releaseCq(cq);
            usage.discharge(s, UserQuota.CQ_ENTRIES, cq.slots());
            usage.discharge(s, UserQuota.CQS, 1);
        });
    }

    void releaseCq(Cq cq) {
        if (cq.channel != null) {
            cq.channel.cqUsers--;
        }
        unmap(cq.mapping);
        counts.uncount(MRCE_OP_CREATE_CQ);
    }
}
