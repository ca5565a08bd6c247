package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static io.metaroce.nic.verbs.OpSupport.empty;
import static io.metaroce.nic.verbs.OpSupport.fail;
import static io.metaroce.nic.verbs.OpSupport.pow2;
import static io.metaroce.nic.verbs.OpSupport.resp;
import static io.metaroce.nic.verbs.OpSupport.unmap;
import static io.metaroce.nic.verbs.PdMrOps.use;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.CreateQpReqDescriptor;
import io.metaroce.abi.CreateQpRespDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.abi.ModifyQpReqDescriptor;
import io.metaroce.abi.QpAttrDescriptor;
import io.metaroce.control.LocalSession;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.model.Cq;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import io.metaroce.nic.transport.Qp;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The QP ops: CREATE_QP (its SQ and RQ rings in a memfd handed to the provider), and MODIFY_QP,
 * QUERY_QP, DESTROY_QP, which run on the engine thread as commands that respond when done.
 */
final class QpOps {
    private final EngineAgent engine;
    private final NetInfo net;
    private final int udpPort;
    private final Limits limits;
    private final UserUsage usage;
    private final QpnAllocator qpns;

    QpOps(EngineAgent engine, NetInfo net, int udpPort, Limits limits, UserUsage usage, QpnAllocator qpns) {
        this.engine = engine;
        this.net = net;
        this.udpPort = udpPort;
        this.limits = limits;
        this.usage = usage;
        this.qpns = qpns;
    }

    void createQp(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        Pd pd = s.pd(p.getInt((int) CreateQpReqDescriptor.OFF_PD));
        Cq sendCq = s.cqs.get(p.getInt((int) CreateQpReqDescriptor.OFF_SEND_CQ));
        Cq recvCq = s.cqs.get(p.getInt((int) CreateQpReqDescriptor.OFF_RECV_CQ));
        int srqHandle = p.getInt((int) CreateQpReqDescriptor.OFF_SRQ);
        int type = p.getInt((int) CreateQpReqDescriptor.OFF_QP_TYPE);
        boolean sigAll = p.getInt((int) CreateQpReqDescriptor.OFF_SQ_SIG_ALL) != 0;
        int sendWr = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_WR);
        int recvWr = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_WR);
        int sendSge = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_SGE);
        int recvSge = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_SGE);
        int inline = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_INLINE_DATA);
        if (pd == null || sendCq == null || recvCq == null) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOENT);
            return;
        }
        Srq srq = null;
        if (srqHandle != AbiConstants.NO_HANDLE) {
            srq = s.srqs.get(srqHandle);
            if (srq == null) {
                fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOENT);
                return;
            }
            // ibv_create_qp(3): with an SRQ the receive capabilities are ignored; the QP's own
            // RQ ring still exists (one slot) and is never read.
            recvWr = 0;
            recvSge = 0;
        }
        if (!qpTypeSupported(type)) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.EOPNOTSUPP); // RC and UD only
            return;
        }
        if (sendWr < 0
                || sendWr > limits.maxQpWr()
                || recvWr < 0
                || recvWr > limits.maxQpWr()
                || sendSge < 0
                || sendSge > limits.maxSge()
                || recvSge < 0
                || recvSge > limits.maxSge()
                || inline < 0
                || inline > limits.maxInline()) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.EINVAL);
            return;
        }
        int sendSlots = pow2(Math.max(1, sendWr));
        int recvSlots = pow2(Math.max(1, recvWr));
        if (!usage.charge(s, UserQuota.QPS, 1)) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOMEM);
            return;
        }
        int qpn = qpns.allocate();
        if (qpn < 0) {
            usage.discharge(s, UserQuota.QPS, 1);
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOMEM);
            return;
        }
        long rqOffset = Qp.rqOffset(sendSlots);
        long size = Qp.mapSize(sendSlots, recvSlots);
        SharedMemory shm = SharedMemory.create("mrce-qp", size, () -> {
            qpns.free(qpn);
            usage.discharge(s, UserQuota.QPS, 1);
        });
        int fd = shm.fd();
        MemorySegment map = shm.map();
        int maxSendSge = Math.max(1, sendSge);
        int maxRecvSge = Math.max(1, recvSge);
        Qp qp = new Qp(
                s.newHandle(),
                qpn,
                s.session.id(),
                s.space,
                pd,
                sendCq,
                recvCq,
                type,
                sigAll,
                sendSlots,
                recvSlots,
                maxSendSge,
                maxRecvSge,
                inline,
                map,
                0,
                (int) rqOffset,
                net.mtu());
        qp.peerPort = udpPort;
        qp.srq = srq;
        qp.asyncEvents = s.events;
        qp.doorbellBits = s.doorbellPage != null;
        if (!engine.submit(() -> engine.addQp(qp))) {
            qp.requester.close();
            unmap(map);
            LibC.close(fd);
            qpns.free(qpn);
            usage.discharge(s, UserQuota.QPS, 1);
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.EAGAIN);
            return;
        }
        use(pd, 1);
        sendCq.qpUsers++;
        recvCq.qpUsers++;
        if (srq != null) {
            srq.qpUsers++;
        }
        s.qps.put(qp.handle, qp);
        ByteBuffer r = resp(CreateQpRespDescriptor.SIZE);
        r.putInt((int) CreateQpRespDescriptor.OFF_HANDLE, qp.handle);
        r.putInt((int) CreateQpRespDescriptor.OFF_QP_NUM, qpn);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_SEND_WR, sendSlots);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_RECV_WR, srq != null ? 0 : recvSlots);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_SEND_SGE, maxSendSge);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_RECV_SGE, srq != null ? 0 : maxRecvSge);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_INLINE_DATA, inline);
        r.putInt((int) CreateQpRespDescriptor.OFF_SQ_OFFSET, 0);
        r.putInt((int) CreateQpRespDescriptor.OFF_RQ_OFFSET, (int) rqOffset);
        r.putLong((int) CreateQpRespDescriptor.OFF_MAP_SIZE, size);
        s.session.respond(MRCE_OP_CREATE_QP, seq, 0, r, fd);
        LibC.close(fd);
    }

    /** QP types this daemon serves: RC and UD (UC, XRC and raw packet QPs are EOPNOTSUPP). */
    static boolean qpTypeSupported(int type) {
        return type == Ibv.QPT_RC || type == Ibv.QPT_UD;
    }

    void modifyQp(SessionObjects s, int seq, ByteBuffer p) {
        Qp qp = s.qps.get(p.getInt((int) ModifyQpReqDescriptor.OFF_HANDLE));
        if (qp == null) {
            fail(s, MRCE_OP_MODIFY_QP, seq, Errno.ENOENT);
            return;
        }
        int mask = p.getInt((int) ModifyQpReqDescriptor.OFF_ATTR_MASK);
        QpAttrs attrs = QpAttrs.read(p, (int) ModifyQpReqDescriptor.OFF_ATTR);
        LocalSession session = s.session;
        if (!engine.submit(() -> {
            int err = QpModifier.modify(qp, mask, attrs, engine.datapath());
            engine.wake(qp); // a new state or new attributes: its step in the next cycle
            session.respond(MRCE_OP_MODIFY_QP, seq, err, empty());
        })) {
            fail(s, MRCE_OP_MODIFY_QP, seq, Errno.EAGAIN);
        }
    }

    void queryQp(SessionObjects s, int seq, ByteBuffer p) {
        Qp qp = s.qps.get(p.getInt((int) HandleReqDescriptor.OFF_HANDLE));
        if (qp == null) {
            fail(s, MRCE_OP_QUERY_QP, seq, Errno.ENOENT);
            return;
        }
        LocalSession session = s.session;
        if (!engine.submit(() -> {
            ByteBuffer r = resp(QpAttrDescriptor.SIZE);
            QpAttrs.of(qp).write(r, 0);
            session.respond(MRCE_OP_QUERY_QP, seq, 0, r);
        })) {
            fail(s, MRCE_OP_QUERY_QP, seq, Errno.EAGAIN);
        }
    }

    void destroyQp(SessionObjects s, int seq, ByteBuffer p) {
        Qp qp = s.qps.remove(p.getInt((int) HandleReqDescriptor.OFF_HANDLE));
        if (qp == null) {
            fail(s, MRCE_OP_DESTROY_QP, seq, Errno.ENOENT);
            return;
        }
        LocalSession session = s.session;
        Runnable destroy = () -> {
            engine.removeQp(qp);
            synchronized (s) {
                releaseQp(qp);
                usage.discharge(s, UserQuota.QPS, 1);
            }
            session.respond(MRCE_OP_DESTROY_QP, seq, 0, empty());
        };
        while (!engine.submit(destroy)) {
            Thread.onSpinWait(); // a destroy must not be lost: the queue drains quickly
        }
    }

    /** After the engine dropped the QP. Caller holds the session lock. */
    void releaseQp(Qp qp) {
        use(qp.pd, -1);
        qp.sendCq.qpUsers--;
        qp.recvCq.qpUsers--;
        if (qp.srq != null) {
            qp.srq.qpUsers--;
        }
        unmap(qp.mapping);
        qpns.free(qp.qpn);
    }
}
