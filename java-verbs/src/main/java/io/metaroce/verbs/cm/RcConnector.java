package io.metaroce.verbs.cm;

import io.metaroce.verbs.AddressHandle;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Gid;
import io.metaroce.verbs.PortAttributes;
import io.metaroce.verbs.QueuePair;

/**
 * The manual path: this side's endpoint, and RTR/RTS toward a peer's, as ibv_rc_pingpong does,
 * with the RC parameters of the {@link ConnectOptions}. Stateless, thread-safe (the QP's own
 * rules apply to the QP).
 */
public final class RcConnector {

    private RcConnector() {}

    /** This QP's endpoint: the port's LID, the QP number, the PSN of the options, the GID at gidIndex (or zero). */
    public static QpEndpoint localEndpoint(QueuePair qp, ConnectOptions o) {
        Context ctx = qp.protectionDomain().context();
        PortAttributes port = ctx.queryPort(o.port());
        if (!port.isEthernet() && port.lid() == 0) {
            throw new IllegalStateException("Couldn't get local LID (port " + o.port() + " of " + ctx.deviceName()
                    + " is InfiniBand with LID 0)");
        }
        Gid gid = o.gidIndex() >= 0 ? ctx.queryGid(o.port(), o.gidIndex()) : Gid.ZERO;
        return new QpEndpoint(port.lid(), qp.qpNum(), o.psn(), gid);
    }

    /**
     * Moves {@code qp} (in INIT) to RTR toward {@code remote}, then to RTS with the local PSN,
     * with the options' {@link ConnectOptions.RcParameters}.
     */
    public static void connect(QueuePair qp, ConnectOptions o, QpEndpoint remote) {
        AddressHandle.Attributes path = AddressHandle.Attributes.forPeer(
                remote.gid(), remote.lid(), o.sl(), Math.max(o.gidIndex(), 0), o.port());
        ConnectOptions.RcParameters rc = o.rc();
        qp.toRtr(o.mtu(), remote.qpn(), remote.psn(), path, rc.maxDestRdAtomic(), rc.minRnrTimer());
        qp.toRts(o.psn(), rc.timeout(), rc.retryCount(), rc.rnrRetry(), rc.maxRdAtomic());
    }

    /** Connects two QPs of this process (both in INIT, on the same port) to each other: a loopback pair. */
    public static void connectToEachOther(QueuePair a, QueuePair b, ConnectOptions o) {
        QpEndpoint ea = localEndpoint(a, o);
        QpEndpoint eb = localEndpoint(b, o);
        connect(a, o, eb);
        connect(b, o, ea);
    }
}
