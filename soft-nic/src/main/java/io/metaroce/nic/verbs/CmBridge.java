package io.metaroce.nic.verbs;

import io.metaroce.abi.IpAddr;
import io.metaroce.control.cm.CmCodec;
import io.metaroce.control.cm.CmMessage;
import io.metaroce.control.cm.ConnectionManager;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.transport.Qp;
import io.metaroce.nic.transport.QpLifecycle;
import io.metaroce.nic.transport.RcRequester;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Joins the engine's RC QPs to the connection manager (docs/spec/connection-manager.md): on RTR a
 * QP draws its receive token and announces its endpoint; the requester holds its sends until the
 * peer's endpoint (and token) arrives; a destroyed QP is announced to its peer; a lost or
 * restarted peer daemon or a failed handshake moves the QP to ERR with IBV_EVENT_QP_FATAL at once,
 * a peer's DISCONNECT after a grace period.
 *
 * <p>The lifecycle callbacks run on the engine thread; the {@link ConnectionManager.Listener}
 * callbacks on the manager's event loop, which only reads the maps and submits engine commands.
 */
public final class CmBridge implements QpLifecycle, ConnectionManager.Listener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CmBridge.class);
    /** The receive window announced (packets): the requester's W (spec 3). */
    static final int WINDOW = 256;
    /** How long the start waits for the manager's handshake with itself (it finishes alone later). */
    static final int WARM_UP_WAIT_MS = 3000;

    private final EngineAgent engine;
    private final ConnectionManager cm;
    /** How long a QP whose peer QP was destroyed stays as it is before it fails. */
    private final int disconnectGraceMs;

    private final SecureRandom random = new SecureRandom();
    /** Every RC QP the engine serves, by QPN. */
    private final ConcurrentHashMap<Integer, Qp> qps = new ConcurrentHashMap<>();

    public final AtomicLong handshakes = new AtomicLong();
    public final AtomicLong failures = new AtomicLong();

    private CmBridge(
            EngineAgent engine, int localIp, ConnectionManager.Config config, int disconnectGraceMs, byte[] secret)
            throws IOException {
        this.engine = engine;
        this.disconnectGraceMs = disconnectGraceMs;
        this.cm = ConnectionManager.start(localIp, config, this, secret);
    }

    /** Starts the manager on {@code localIp} and hooks the engine's QP lifecycle to it. */
    public static CmBridge start(
            EngineAgent engine, int localIp, ConnectionManager.Config config, int disconnectGraceMs)
            throws IOException {
        return start(engine, localIp, config, disconnectGraceMs, null);
    }

    /** As {@link #start(EngineAgent, int, ConnectionManager.Config, int)}, authenticating peers with a cluster secret (null: none). */
    public static CmBridge start(
            EngineAgent engine, int localIp, ConnectionManager.Config config, int disconnectGraceMs, byte[] secret)
            throws IOException {
        CmBridge b = new CmBridge(engine, localIp, config, disconnectGraceMs, secret);
        engine.datapath().lifecycle = b;
        // The manager's first handshake, with itself: the first peer's runs on loaded code.
        // -Dmetaroce.cm.noWarmUp=true leaves it out (to measure what it gains: bench/warmup).
        if (Boolean.getBoolean("metaroce.cm.noWarmUp")) {
            return b;
        }
        try {
            b.cm.warmUp().get(WARM_UP_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
            LOG.debug("connection manager warm-up not done within {} ms; going on", WARM_UP_WAIT_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return b;
    }

    public ConnectionManager manager() {
        return cm;
    }

    // ---- engine thread ----

    @Override
    public void onAdded(Qp qp) {
        if (qp.ud == null) {
            qps.put(qp.qpn, qp);
        }
    }

    @Override
    public void onRtr(Qp qp) {
        int token;
        do {
            token = random.nextInt();
        } while (token == 0);
        qp.rxToken = token;
        qp.txToken = 0;
        qp.cmReady = false;
        int paths = RcRequester.pathCount(engine.datapath());
        int[] entropies = new int[paths];
        for (int i = 0; i < paths; i++) {
            entropies[i] = RcRequester.entropy(qp.qpn, i, paths, 0);
        }
        qp.peerLinkMtu = 0;
        CmMessage.Endpoint local = new CmMessage.Endpoint(
                qp.qpn,
                qp.destQpNum,
                Ibv.mtuBytes(qp.pathMtu),
                WINDOW,
                qp.rqPsn,
                token,
                entropies,
                announcedLinkMtu(qp.ifMtu));
        qp.cmLocal = local;
        int peer = qp.peerIp;
        long rtrNs = System.nanoTime();
        LOG.debug("QP {} at RTR: connecting to {}:{}", qp.qpn, IpAddr.toString(peer), qp.destQpNum);
        cm.connect(peer, local).whenComplete((remote, error) -> {
            while (!engine.submit(() -> established(qp, local, remote, error, rtrNs))) {
                Thread.onSpinWait();
            }
        });
    }

    /** Our link MTU as an endpoint carries it: 0 (not said) when it is outside what the field takes. */
    static int announcedLinkMtu(int ifMtu) {
        return ifMtu >= CmCodec.MIN_LINK_MTU && ifMtu <= 0xffff ? ifMtu : 0;
    }

    private void established(Qp qp, CmMessage.Endpoint local, CmMessage.Endpoint remote, Throwable error, long rtrNs) {
        if (qp.cmLocal != local) {
            return; // reset, re-connected or destroyed meanwhile
        }
        engine.wake(qp); // connected or failed: its step in the next cycle either way
        if (error != null) {
            failures.incrementAndGet();
            Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                    ? error.getCause()
                    : error;
            LOG.warn(
                    "QP {} -> {}:{}: connection manager handshake failed: {}",
                    qp.qpn,
                    IpAddr.toString(qp.peerIp),
                    qp.destQpNum,
                    cause.getMessage());
            qp.fatal(Ibv.EVENT_QP_FATAL);
            return;
        }
        handshakes.incrementAndGet();
        qp.peerLinkMtu = remote.linkMtu();
        qp.cmRemoteToken = remote.token();
        qp.txToken = remote.token();
        qp.cmReady = true;
        LOG.debug(
                "QP {} connected to {}:{} ({} paths), {} us after RTR",
                qp.qpn,
                IpAddr.toString(qp.peerIp),
                remote.qpn(),
                remote.paths(),
                (System.nanoTime() - rtrNs) / 1000);
    }

    @Override
    public void onReset(Qp qp) {
        disconnect(qp);
    }

    @Override
    public void onRemoved(Qp qp) {
        disconnect(qp);
        qps.remove(qp.qpn, qp);
    }

    private void disconnect(Qp qp) {
        CmMessage.Endpoint local = qp.cmLocal;
        qp.cmLocal = null;
        qp.cmRemoteToken = 0;
        qp.cmReady = true;
        qp.rxToken = 0;
        qp.txToken = 0;
        if (local != null) {
            // How far our responder placed the peer's requests: a last cumulative ACK for them, so
            // a peer whose final ACK was lost completes its work requests instead of waiting for
            // an ACK nobody will send (and failing them after the grace period).
            cm.disconnect(
                    qp.peerIp,
                    new CmMessage.Disconnect(
                            qp.qpn,
                            local.peerQpn(),
                            CmMessage.REASON_DESTROYED,
                            local.token(),
                            CmMessage.Disconnect.FLAG_PLACED,
                            qp.responder.expectedPsn()));
        }
    }

    // ---- manager's event loop ----

    @Override
    public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
        Qp qp = qps.get(remote.peerQpn());
        if (qp == null) {
            return new ConnectionManager.Decision.Reject(CmMessage.REASON_NO_QP);
        }
        CmMessage.Endpoint local = qp.cmLocal;
        if (local == null) {
            return new ConnectionManager.Decision.Later();
        }
        if (local.peerQpn() != remote.qpn() || qp.peerIp != peerIp) {
            return new ConnectionManager.Decision.Reject(CmMessage.REASON_MISMATCH);
        }
        // The peer may send requests (and want READ responses) before our own handshake completes.
        qp.peerLinkMtu = remote.linkMtu();
        return new ConnectionManager.Decision.Accept(local);
    }

    @Override
    public void onDisconnect(int peerIp, CmMessage.Disconnect d) {
        int remoteQpn = d.qpn();
        int reason = d.reason();
        Qp qp = qps.get(d.peerQpn());
        if (qp == null) {
            return;
        }
        CmMessage.Endpoint local = qp.cmLocal;
        // The token names the connection: a late DISCONNECT of an earlier connection between the
        // same QP numbers (reused after a restart) carries another one and is ignored.
        if (local != null
                && local.peerQpn() == remoteQpn
                && qp.peerIp == peerIp
                && d.token() != 0
                && d.token() == qp.cmRemoteToken) {
            if (d.placedKnown()) {
                int placed = d.placedRsn();
                while (!engine.submit(() -> {
                    if (qp.cmLocal == local) {
                        qp.requester.onFinalAck(engine.datapath(), placed, engine.nowNs());
                        engine.wake(qp); // what it acknowledged completes in the next cycle
                    }
                })) {
                    Thread.onSpinWait();
                }
            }
            // After a grace period: a peer that closes right after its last completion must not
            // race its last ACK, and a QP destroyed meanwhile is left alone.
            String why =
                    "peer QP " + remoteQpn + " on " + IpAddr.toString(peerIp) + " went away (reason " + reason + ")";
            CompletableFuture.delayedExecutor(disconnectGraceMs, TimeUnit.MILLISECONDS)
                    .execute(() -> fail(qp, local, false, why));
        }
    }

    @Override
    public void onPeerLost(int peerIp, String why) {
        for (Qp qp : qps.values()) {
            CmMessage.Endpoint local = qp.cmLocal;
            if (local != null && qp.peerIp == peerIp) {
                // Only connections made with the lost incarnation: a QP whose handshake is still
                // open learns its fate from its own request (failed when it had gone to the lost
                // daemon, sent on to a restarted one otherwise), and one the new incarnation
                // answered is established only after this command: the manager hears nothing of
                // the new daemon before its HELLO, and the engine runs commands in order.
                fail(qp, local, true, "peer daemon " + IpAddr.toString(peerIp) + " lost: " + why);
            }
        }
    }

    @Override
    public boolean dataPathActive(int peerIp, long withinNs) {
        long now = System.nanoTime();
        for (Qp qp : qps.values()) {
            if (qp.peerIp == peerIp && qp.cmLocal != null && qp.lastRxNs != 0 && now - qp.lastRxNs < withinNs) {
                return true;
            }
        }
        return false;
    }

    private void fail(Qp qp, CmMessage.Endpoint local, boolean onlyEstablished, String why) {
        while (!engine.submit(() -> {
            if (qp.cmLocal == local && qp.state != Ibv.QPS_ERR && (qp.cmReady || !onlyEstablished)) {
                failures.incrementAndGet();
                LOG.info("QP {} to error: {}", qp.qpn, why);
                qp.fatal(Ibv.EVENT_QP_FATAL);
            }
        })) {
            Thread.onSpinWait();
        }
    }

    @Override
    public void close() {
        cm.close();
    }
}
