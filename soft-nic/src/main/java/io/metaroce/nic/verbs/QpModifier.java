package io.metaroce.nic.verbs;

import io.metaroce.abi.Errno;
import io.metaroce.abi.IpAddr;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.transport.Qp;
import io.metaroce.nic.transport.QpLifecycle;

/**
 * ibv_modify_qp on the engine thread: the transition and mask rules come from
 * {@link QpStateMachine}; here are the value checks (RoCE v2 over IPv4 or IPv6 on port 1), the attribute
 * updates and what each new state starts or stops in the transport.
 */
public final class QpModifier {
    private static final int UNSUPPORTED = Ibv.QP_ALT_PATH | Ibv.QP_PATH_MIG_STATE | Ibv.QP_CAP;

    private QpModifier() {}

    /** Validates and applies; returns 0 or an errno, leaving the QP untouched on error. */
    public static int modify(Qp qp, int mask, QpAttrs a, io.metaroce.nic.transport.Datapath dp) {
        int err = QpStateMachine.validate(qp.qpType, qp.state, mask, a.qpState, a.curQpState);
        if (err != 0) {
            return err;
        }
        err = checkValues(mask, a);
        if (err != 0) {
            return err;
        }
        // The peer must be of the family the daemon serves: an IPv4 daemon's port cannot reach an
        // IPv6 peer, nor the reverse (docs/spec/transport.md T-1.3).
        if ((mask & Ibv.QP_AV) != 0 && IpAddr.isV6(IpAddr.fromGid(a.dgid)) != IpAddr.isV6(dp.port.localIp())) {
            return Errno.EINVAL;
        }
        apply(qp, mask, a);
        int from = qp.state;
        int to = (mask & Ibv.QP_STATE) != 0 ? a.qpState : from;
        if (to == from) {
            return 0;
        }
        switch (to) {
            case Ibv.QPS_RESET -> {
                qp.state = Ibv.QPS_RESET;
                dp.lifecycle.onReset(qp);
                if (dp.lifecycle == QpLifecycle.NONE) {
                    qp.rxToken = 0;
                    qp.txToken = 0;
                }
                qp.requester.reset();
                qp.responder.reset();
                if (qp.ud != null) {
                    qp.ud.reset();
                }
            }
            case Ibv.QPS_RTR -> {
                qp.responder.start();
                qp.state = Ibv.QPS_RTR;
                if (qp.ud == null) {
                    dp.lifecycle.onRtr(qp);
                    if (dp.lifecycle == QpLifecycle.NONE) {
                        qp.rxToken = derivedToken(qp.qpn, qp.destQpNum, qp.rqPsn);
                    }
                }
            }
            case Ibv.QPS_RTS -> {
                if (from == Ibv.QPS_RTR) {
                    if (qp.ud == null && dp.lifecycle == QpLifecycle.NONE) {
                        qp.txToken = derivedToken(qp.destQpNum, qp.qpn, qp.sqPsn);
                    }
                    qp.requester.start(dp);
                    if (qp.ud != null) {
                        qp.ud.start();
                    }
                }
                qp.state = Ibv.QPS_RTS;
            }
            case Ibv.QPS_ERR -> qp.toError();
            default -> qp.state = to;
        }
        return 0;
    }

    /**
     * The connection token without a connection manager (docs/spec/transport.md, security): what
     * QP {@code dstQpn} requires from QP {@code srcQpn} when its start PSN ({@code rq_psn}) is
     * {@code psn}, which the sender knows as its {@code sq_psn}. Nonzero. Its secrets are the
     * QPNs' random bits and the PSN the applications exchanged out of band.
     */
    public static int derivedToken(int dstQpn, int srcQpn, int psn) {
        long x = 0x4d52434554304b4eL
                ^ ((long) dstQpn << 32)
                ^ (srcQpn & 0xffffffffL)
                ^ ((psn & 0xffffffL) * 0x9e3779b97f4a7c15L);
        x = (x ^ (x >>> 30)) * 0xbf58476d1ce4e5b9L;
        x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
        x ^= x >>> 31;
        int t = (int) x ^ (int) (x >>> 32);
        return t == 0 ? 1 : t;
    }

    static int checkValues(int mask, QpAttrs a) {
        if ((mask & UNSUPPORTED) != 0) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_PORT) != 0 && a.portNum != 1) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_PKEY_INDEX) != 0 && a.pkeyIndex != 0) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_PATH_MTU) != 0 && Ibv.mtuBytes(a.pathMtu) == 0) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_AV) != 0) {
            // RoCE v2 needs a GRH: the GID is the peer's address (IPv4-mapped, or IPv6 unicast),
            // our GID index 0.
            if (a.isGlobal == 0
                    || a.sgidIndex != 0
                    || IpAddr.fromGid(a.dgid) == 0
                    || a.dgid[0] == (byte) 0xff
                    || (a.ahPortNum != 0 && a.ahPortNum != 1)) {
                return Errno.EINVAL;
            }
        }
        if ((mask & Ibv.QP_RETRY_CNT) != 0 && a.retryCnt > 7) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_RNR_RETRY) != 0 && a.rnrRetry > 7) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_MIN_RNR_TIMER) != 0 && a.minRnrTimer > 31) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_TIMEOUT) != 0 && a.timeout > 31) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_DEST_QPN) != 0 && (a.destQpNum & ~0xffffff) != 0) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_ACCESS_FLAGS) != 0
                && (a.qpAccessFlags
                                & ~(Ibv.ACCESS_LOCAL_WRITE
                                        | Ibv.ACCESS_REMOTE_WRITE
                                        | Ibv.ACCESS_REMOTE_READ
                                        | Ibv.ACCESS_REMOTE_ATOMIC))
                        != 0) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_MAX_QP_RD_ATOMIC) != 0 && a.maxRdAtomic > 16) {
            return Errno.EINVAL;
        }
        if ((mask & Ibv.QP_MAX_DEST_RD_ATOMIC) != 0 && a.maxDestRdAtomic > 16) {
            return Errno.EINVAL;
        }
        return 0;
    }

    private static void apply(Qp qp, int mask, QpAttrs a) {
        if ((mask & Ibv.QP_ACCESS_FLAGS) != 0) {
            qp.accessFlags = a.qpAccessFlags;
        }
        if ((mask & Ibv.QP_PKEY_INDEX) != 0) {
            qp.pkeyIndex = a.pkeyIndex;
        }
        if ((mask & Ibv.QP_PORT) != 0) {
            qp.portNum = a.portNum;
        }
        if ((mask & Ibv.QP_QKEY) != 0) {
            qp.qkey = a.qkey;
        }
        if ((mask & Ibv.QP_AV) != 0) {
            System.arraycopy(a.dgid, 0, qp.dgid, 0, 16);
            qp.peerIp = IpAddr.fromGid(a.dgid);
            qp.isGlobal = true;
            qp.sgidIndex = a.sgidIndex;
            qp.hopLimit = a.hopLimit;
            qp.trafficClass = a.trafficClass;
            qp.flowLabel = a.flowLabel;
            qp.sl = a.sl;
            qp.ahPortNum = a.ahPortNum;
        }
        if ((mask & Ibv.QP_PATH_MTU) != 0) {
            qp.pathMtu = a.pathMtu;
        }
        if ((mask & Ibv.QP_TIMEOUT) != 0) {
            qp.timeout = a.timeout;
        }
        if ((mask & Ibv.QP_RETRY_CNT) != 0) {
            qp.retryCnt = a.retryCnt;
        }
        if ((mask & Ibv.QP_RNR_RETRY) != 0) {
            qp.rnrRetry = a.rnrRetry;
        }
        if ((mask & Ibv.QP_RQ_PSN) != 0) {
            qp.rqPsn = a.rqPsn & 0xffffff;
        }
        if ((mask & Ibv.QP_SQ_PSN) != 0) {
            qp.sqPsn = a.sqPsn & 0xffffff;
        }
        if ((mask & Ibv.QP_MAX_QP_RD_ATOMIC) != 0) {
            qp.maxRdAtomic = a.maxRdAtomic;
        }
        if ((mask & Ibv.QP_MAX_DEST_RD_ATOMIC) != 0) {
            qp.maxDestRdAtomic = a.maxDestRdAtomic;
        }
        if ((mask & Ibv.QP_MIN_RNR_TIMER) != 0) {
            qp.minRnrTimer = a.minRnrTimer;
        }
        if ((mask & Ibv.QP_DEST_QPN) != 0) {
            qp.destQpNum = a.destQpNum;
        }
    }
}
