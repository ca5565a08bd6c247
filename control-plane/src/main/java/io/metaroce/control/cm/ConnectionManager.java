package io.metaroce.control.cm;

import io.metaroce.abi.IpAddr;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection manager between daemons (docs/spec/connection-manager.md): one TCP connection per
 * pair of daemons, opened on demand, carrying HELLO, the CONNECT / ACCEPT / REJECT handshake of
 * each RC QP, DISCONNECT when a QP goes away, and PING/PONG keepalives. A peer that sends nothing
 * for {@link Config#peerTimeoutMs} or comes back with another boot id is lost: the daemon fails
 * every QP connected to it ({@link Listener#onPeerLost}). With a cluster secret each connection
 * first proves it on both sides (AUTH_CHALLENGE / AUTH_PROOF, {@link CmAuth}) and carries its
 * tokens masked (section 8).
 *
 * <p>All state lives on one event loop; the public methods may be called from any thread.
 *
 * <p>Long because peers, handshakes, services and keepalives share one event loop's state.
 */
public final class ConnectionManager implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionManager.class);

    /** Settings (milliseconds). */
    public record Config(int port, int heartbeatMs, int peerTimeoutMs, int connectTimeoutMs) {
        public static final int DEFAULT_PORT = 4792;

        public Config {
            if (heartbeatMs < 1 || heartbeatMs > 65535 || peerTimeoutMs < 2 * heartbeatMs || connectTimeoutMs < 1) {
                throw new IllegalArgumentException(
                        "need 1 <= heartbeat <= 65535 ms, peer timeout >= 2 heartbeats," + " connect timeout >= 1 ms");
            }
        }

        public static Config defaults() {
            return new Config(DEFAULT_PORT, 500, 3000, 10_000);
        }
    }

    /** What the daemon decides about a peer's CONNECT. */
    public sealed interface Decision {
        /** Take the peer's endpoint; answer with ours. */
        record Accept(CmMessage.Endpoint local) implements Decision {}

        /** Our QP exists but is not at RTR yet: keep the peer's endpoint, our own CONNECT follows. */
        record Later() implements Decision {}

        record Reject(int reason) implements Decision {}
    }

    /** The daemon's side. Called on the manager's event loop: return quickly, never block. */
    public interface Listener {
        /** A peer's QP {@code remote.qpn()} asks to be connected to our QP {@code remote.peerQpn()}. */
        Decision onConnect(int peerIp, CmMessage.Endpoint remote);

        /**
         * The peer's QP {@code d.qpn()} left the connection with our {@code d.peerQpn()};
         * {@code d.token()} is the receive token it had announced for that connection (ours to send
         * with); {@code d.placedRsn()}, when known, is how far it had placed our requests.
         */
        void onDisconnect(int peerIp, CmMessage.Disconnect d);

        /** The peer daemon is gone (silent past the timeout, or restarted): fail its QPs. */
        void onPeerLost(int peerIp, String why);

        /**
         * Whether the data path heard from that peer within the last {@code withinNs}: a peer whose
         * packets still arrive is alive even while the manager's own TCP connection stalls (a
         * failed link under it, until TCP moves to another).
         */
        default boolean dataPathActive(int peerIp, long withinNs) {
            return false;
        }
    }

    /**
     * The daemon's rdma_cm-style service side (connection-manager.md, "Service"). Called on the
     * manager's event loop: return quickly, never block.
     */
    public interface ServiceHandler {
        /**
         * A peer's application asks for service {@code r.serviceId()}. Return 0 to keep the request
         * (answer it later with {@link #acceptService} or {@link #rejectService}), or one of the
         * {@code CmMessage.SVC_*} reasons to reject it at once.
         */
        int onServiceRequest(int peerIp, CmMessage.SvcRequest r);

        /**
         * A request kept earlier and not answered yet is gone: its requester gave up
         * ({@code SVC_TIMEOUT}, {@code SVC_CANCELLED}) or its daemon was lost or restarted
         * ({@code SVC_CANCELLED}). An answer to it now fails.
         */
        void onServiceCancel(int peerIp, int requestId, int reason);
    }

    /** Inbound service requests kept per peer at most; more are rejected {@code SVC_BUSY}. */
    static final int MAX_INBOUND = 4096;

    private final Config config;
    private final int localIp;
    private final Listener listener;
    private final long bootId = new SecureRandom().nextLong();
    private final EventLoopGroup group;
    private final EventLoop loop;
    private final Channel server;
    private final Map<Integer, Peer> peers = new HashMap<>();
    /** The cluster secret's handshake (section 8); null: connections are not authenticated. */
    private final CmAuth auth;

    private final java.util.concurrent.atomic.AtomicLong authRefusals = new java.util.concurrent.atomic.AtomicLong();
    private long lastRefusalLogNs = System.nanoTime() - TimeUnit.SECONDS.toNanos(2);
    private int nextRequestId = 1;
    private volatile ServiceHandler serviceHandler;
    private volatile boolean closed;

    private ConnectionManager(
            Config config, int localIp, Listener listener, EventLoopGroup group, Channel server, CmAuth auth) {
        this.config = config;
        this.auth = auth;
        this.localIp = localIp;
        this.listener = listener;
        this.group = group;
        this.loop = group.next();
        this.server = server;
    }

    /**
     * Listens on {@code localIp:config.port} ({@link IpAddr}: host-order IPv4 or an IPv6 handle) and
     * starts the keepalive timer.
     */
    public static ConnectionManager start(int localIp, Config config, Listener listener) throws IOException {
        return start(localIp, config, listener, null);
    }

    /**
     * As {@link #start(int, Config, Listener)}, with a cluster secret ({@link CmAuth#loadSecret}):
     * every connection must then prove it holds the same secret before anything else is read from
     * it (section 8). Null: no authentication, with a warning in the log.
     */
    public static ConnectionManager start(int localIp, Config config, Listener listener, byte[] secret)
            throws IOException {
        CmAuth auth = secret == null ? null : new CmAuth(secret);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory("mrce-cm", true), EpollIoHandler.newFactory());
        ConnectionManager[] self = new ConnectionManager[1];
        try {
            Channel server = new ServerBootstrap()
                    .group(group)
                    .channel(EpollServerSocketChannel.class)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            self[0].initChannel(ch, 0);
                        }
                    })
                    .bind(new InetSocketAddress(address(localIp), config.port()))
                    .sync()
                    .channel();
            ConnectionManager cm = new ConnectionManager(config, localIp, listener, group, server, auth);
            self[0] = cm;
            cm.loop.scheduleAtFixedRate(cm::tick, config.heartbeatMs(), config.heartbeatMs(), TimeUnit.MILLISECONDS);
            LOG.info(
                    "connection manager on {}:{} (heartbeat {} ms, peer timeout {} ms)",
                    address(localIp).getHostAddress(),
                    config.port(),
                    config.heartbeatMs(),
                    config.peerTimeoutMs());
            if (auth == null) {
                LOG.warn(
                        "connection manager without a cluster secret (--cm-secret-file): any process that reaches"
                                + " TCP port {} can pose as a peer daemon, learn connection tokens and fake a restart;"
                                + " see README, Deploying it safely",
                        config.port());
            } else {
                LOG.info("connection manager: peer daemons authenticate with the cluster secret (HMAC-SHA256)");
            }
            return cm;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("interrupted", e);
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException(
                    "connection manager cannot listen on " + address(localIp).getHostAddress() + ":" + config.port()
                            + ": " + e.getMessage(),
                    e);
        }
    }

    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    public long bootId() {
        return bootId;
    }

    /** Connections refused for authentication: wrong or missing secret, replayed or missing proof. */
    public long authRefusals() {
        return authRefusals.get();
    }

    /** Whether this manager requires peers to prove the cluster secret. */
    public boolean authenticated() {
        return auth != null;
    }

    /**
     * Sends our QP's endpoint to the peer daemon; completes with the peer QP's endpoint (from its
     * ACCEPT, or from its own CONNECT), or exceptionally with {@link CmRejectedException} or on
     * timeout / peer loss.
     */
    public CompletableFuture<CmMessage.Endpoint> connect(int peerIp, CmMessage.Endpoint local) {
        CompletableFuture<CmMessage.Endpoint> f = new CompletableFuture<>();
        loop.execute(() -> {
            if (closed) {
                f.completeExceptionally(
                        new CmRejectedException(CmMessage.REASON_SHUTDOWN, "connection manager closed"));
                return;
            }
            Peer p = peer(peerIp);
            int id = nextRequestId++;
            Pending pending = new Pending(id, local, f);
            p.pending.put(id, pending);
            pending.timeout = loop.schedule(
                    () -> {
                        if (!CmConformanceBreak.NO_CONNECT_TIMEOUT && p.pending.remove(id) != null) {
                            f.completeExceptionally(new CmRejectedException(
                                    CmMessage.REASON_TIMEOUT,
                                    "no answer from " + ip(peerIp) + " within " + config.connectTimeoutMs() + " ms"
                                            + (p.refused == null
                                                    ? ""
                                                    : " (its connection was refused: " + p.refused + ")")));
                        }
                    },
                    config.connectTimeoutMs(),
                    TimeUnit.MILLISECONDS);
            pending.sent = p.send(new CmMessage.Connect(id, local));
            LOG.debug(
                    "CONNECT {} QP {} -> {}:{} {}",
                    id,
                    local.qpn(),
                    ip(peerIp),
                    local.peerQpn(),
                    pending.sent ? "sent" : "queued until the connection is up");
        });
        return f;
    }

    /** The QP number the start-up handshake with ourselves asks for ({@link #warmUp}): no QP has it. */
    public static final int WARM_UP_QPN = 0;

    /**
     * One handshake with ourselves, over our own address and port, before any peer needs one: the
     * dial and the accept, HELLO both ways (and the authentication with a cluster secret), a
     * CONNECT for QP {@link #WARM_UP_QPN} that the listener rejects ({@code REASON_NO_QP}) and the
     * REJECT back. A fresh daemon's first handshake with a peer otherwise runs all that code cold
     * (class loading and initialisation, first calls) while the application waits in its first
     * round trip: 300 to 600 ms of the first iteration of {@code ibv_rc_pingpong} on a loaded
     * 2-core machine (docs/architecture.md, "Start-up"). Nothing is left: the connections are
     * closed and the manager forgets the address, as if it had never been dialed. Completes
     * normally either way (a failure only means a cold first handshake; logged at DEBUG). Call it
     * before peers can reach this manager (a daemon: before it says ready).
     */
    public CompletableFuture<Void> warmUp() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        long t0 = System.nanoTime();
        CmMessage.Endpoint probe =
                new CmMessage.Endpoint(WARM_UP_QPN, WARM_UP_QPN, 1024, 1, 0, 1, new int[] {0}, CmCodec.MIN_LINK_MTU);
        connect(localIp, probe).whenComplete((remote, error) -> {
            try {
                loop.execute(() -> forgetSelf(t0, error, done));
            } catch (java.util.concurrent.RejectedExecutionException closing) {
                done.complete(null);
            }
        });
        return done;
    }

    /** The end of {@link #warmUp}: the connections with ourselves closed, our address forgotten. */
    private void forgetSelf(long t0, Throwable error, CompletableFuture<Void> done) {
        Peer self = peers.remove(localIp);
        if (self != null) {
            self.failAll(new CmRejectedException(CmMessage.REASON_SHUTDOWN, "warm-up done"));
            for (Channel c : self.helloChannels) {
                c.close();
            }
            if (self.channel != null) {
                self.channel.close();
            }
            if (self.dialed != null) {
                self.dialed.close();
            }
        }
        Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                ? error.getCause()
                : error;
        boolean expected = cause instanceof CmRejectedException r && r.reason() == CmMessage.REASON_NO_QP;
        LOG.debug(
                "handshake with ourselves in {} us{}",
                (System.nanoTime() - t0) / 1000,
                expected ? "" : " did not end as expected: " + (cause == null ? "accepted" : cause.toString()));
        done.complete(null);
    }

    /**
     * Tells the peer daemon that our QP {@code d.qpn()} no longer talks to its {@code d.peerQpn()}
     * ({@link CmMessage.Disconnect}). Sent only on a live connection, never queued for a later one.
     */
    public void disconnect(int peerIp, CmMessage.Disconnect d) {
        int localQpn = d.qpn();
        int reason = d.reason();
        loop.execute(() -> {
            Peer p = peers.get(peerIp);
            if (p != null
                    && p.channel != null
                    && p.channel.isActive()
                    && p.helloSeen
                    && !CmConformanceBreak.NO_DISCONNECT) {
                p.send(d);
            }
            if (p != null) {
                p.pending
                        .values()
                        .removeIf(x -> x.local.qpn() == localQpn
                                && x.fail(new CmRejectedException(reason, "QP " + localQpn + " went away")));
            }
        });
    }

    /** Sets who answers the service requests of peers; without one every request is rejected SVC_NO_LISTENER. */
    public void serviceHandler(ServiceHandler h) {
        this.serviceHandler = h;
    }

    /**
     * Asks the peer daemon at {@code peerIp} for service {@code serviceId} on behalf of a local
     * application whose QP is {@code qpn}/{@code psn}/{@code gid}. Completes with the peer's
     * {@link CmMessage.SvcReply} (the peer application accepted; the manager has already answered
     * {@code SVC_READY}) or {@link CmMessage.SvcReject}; exceptionally with a
     * {@link CmRejectedException}: {@code REASON_TIMEOUT} after {@code timeoutMs} (the peer is then
     * told {@code SVC_CANCEL TIMEOUT}), {@code REASON_ERROR} when the peer daemon is lost or
     * restarted, {@code REASON_SHUTDOWN} when this manager closes. Cancelling the future withdraws
     * the request ({@code SVC_CANCEL CANCELLED}).
     */
    public CompletableFuture<CmMessage> requestService(
            int peerIp, int serviceId, int qpn, int psn, byte[] gid, byte[] privateData, int timeoutMs) {
        if (serviceId == 0 || (qpn & ~0xffffff) != 0 || (psn & ~0xffffff) != 0 || gid.length != 16 || timeoutMs < 1) {
            throw new IllegalArgumentException(
                    "service id 0, QPN or PSN beyond 24 bits, GID not 16 bytes or timeout < 1");
        }
        CompletableFuture<CmMessage> f = new CompletableFuture<>();
        byte[] g = gid.clone();
        byte[] pd = privateData.clone();
        if (pd.length > CmMessage.SVC_PRIVATE_DATA_MAX) {
            throw new IllegalArgumentException("private data of " + pd.length + " bytes");
        }
        loop.execute(() -> {
            if (closed) {
                f.completeExceptionally(
                        new CmRejectedException(CmMessage.REASON_SHUTDOWN, "connection manager closed"));
                return;
            }
            Peer p = peer(peerIp);
            int id = nextRequestId++;
            CmMessage.SvcRequest m = new CmMessage.SvcRequest(id, serviceId, qpn, psn, g, pd);
            SvcPending x = new SvcPending(m, f);
            p.svcPending.put(id, x);
            x.timeout = loop.schedule(
                    () -> {
                        if (p.svcPending.remove(id) == x) {
                            p.withdraw(x, CmMessage.SVC_TIMEOUT);
                            f.completeExceptionally(new CmRejectedException(
                                    CmMessage.REASON_TIMEOUT,
                                    "no answer from "
                                            + ip(peerIp) + " for service " + Integer.toUnsignedString(serviceId)
                                            + " within " + timeoutMs
                                            + " ms"));
                        }
                    },
                    timeoutMs,
                    TimeUnit.MILLISECONDS);
            x.sent = p.send(m);
        });
        f.whenComplete((r, e) -> {
            if (e instanceof java.util.concurrent.CancellationException) {
                loop.execute(() -> {
                    Peer p = peers.get(peerIp);
                    if (p == null) {
                        return;
                    }
                    for (Iterator<SvcPending> it = p.svcPending.values().iterator(); it.hasNext(); ) {
                        SvcPending x = it.next();
                        if (x.future == f) {
                            it.remove();
                            x.timeout.cancel(false);
                            p.withdraw(x, CmMessage.SVC_CANCELLED);
                        }
                    }
                });
            }
        });
        return f;
    }

    /**
     * Accepts the peer's request {@code requestId} (one the {@link ServiceHandler} kept): sends
     * {@code SVC_REPLY} with our QP's {@code qpn}/{@code psn}/{@code gid} and private data.
     * Completes when the requester answers {@code SVC_READY}; exceptionally with a
     * {@link CmRejectedException}: {@code REASON_DESTROYED} when the request is gone (the
     * requester cancelled it, or it was never kept or already answered), {@code REASON_TIMEOUT}
     * after the connect timeout, {@code REASON_ERROR} when the peer daemon is lost or restarted,
     * {@code REASON_SHUTDOWN} when this manager closes.
     */
    public CompletableFuture<Void> acceptService(
            int peerIp, int requestId, int qpn, int psn, byte[] gid, byte[] privateData) {
        CmMessage.SvcReply reply = new CmMessage.SvcReply(requestId, qpn & 0xffffff, psn & 0xffffff, gid, privateData);
        CompletableFuture<Void> f = new CompletableFuture<>();
        loop.execute(() -> {
            Peer p = peers.get(peerIp);
            Inbound x = p == null ? null : p.inbound.get(requestId);
            if (closed || x == null || x.accepted != null) {
                f.completeExceptionally(new CmRejectedException(
                        closed ? CmMessage.REASON_SHUTDOWN : CmMessage.REASON_DESTROYED,
                        "request " + requestId + " of " + ip(peerIp) + " is gone (cancelled by its requester)"));
                return;
            }
            x.accepted = f;
            x.timeout = loop.schedule(
                    () -> {
                        if (p.inbound.remove(requestId, x)) {
                            f.completeExceptionally(new CmRejectedException(
                                    CmMessage.REASON_TIMEOUT,
                                    "no SVC_READY from " + ip(peerIp) + " for request " + requestId + " within "
                                            + config.connectTimeoutMs() + " ms"));
                        }
                    },
                    config.connectTimeoutMs(),
                    TimeUnit.MILLISECONDS);
            p.send(reply);
        });
        return f;
    }

    /** Rejects the peer's request {@code requestId} (one the {@link ServiceHandler} kept), with {@code reason} and private data. */
    public void rejectService(int peerIp, int requestId, int reason, byte[] privateData) {
        CmMessage.SvcReject reject = new CmMessage.SvcReject(requestId, reason, privateData);
        loop.execute(() -> {
            Peer p = peers.get(peerIp);
            Inbound x = p == null ? null : p.inbound.get(requestId);
            if (x != null && x.accepted == null) {
                p.inbound.remove(requestId);
                p.send(reject);
            }
        });
    }

    /** Peer daemons with a live connection (for mrce-ctl). */
    public int livePeers() {
        CompletableFuture<Integer> n = new CompletableFuture<>();
        loop.execute(() -> n.complete(
                (int) peers.values().stream().filter(p -> p.helloSeen).count()));
        return n.join();
    }

    /** Whether a connection to the peer daemon at {@code peerIp} is up (its HELLO seen). */
    public boolean peerConnected(int peerIp) {
        CompletableFuture<Boolean> up = new CompletableFuture<>();
        loop.execute(() -> {
            Peer p = peers.get(peerIp);
            up.complete(p != null && p.helloSeen && p.channel != null && p.channel.isActive());
        });
        return up.join();
    }

    @Override
    public void close() {
        closed = true;
        loop.execute(() -> {
            for (Peer p : peers.values()) {
                p.failAll(new CmRejectedException(CmMessage.REASON_SHUTDOWN, "connection manager closed"));
                if (p.channel != null) {
                    p.channel.close();
                }
            }
        });
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    // ---- event loop ----

    private Peer peer(int ip) {
        return peers.computeIfAbsent(ip, Peer::new);
    }

    private void initChannel(SocketChannel ch, int dialedIp) {
        ch.pipeline().addLast(new CmCodec.Decoder(), CmCodec.Encoder.INSTANCE, new Handler(dialedIp));
    }

    private void tick() {
        long now = System.nanoTime();
        for (Iterator<Peer> it = peers.values().iterator(); it.hasNext(); ) {
            Peer p = it.next();
            if (p.channel != null && p.channel.isActive() && p.helloSeen) {
                p.send(new CmMessage.Ping(++p.pingSeq));
            }
            long timeoutNs = TimeUnit.MILLISECONDS.toNanos(config.peerTimeoutMs());
            boolean silent = now - p.lastHeardNs > timeoutNs;
            if (p.helloSeen
                    && silent
                    && !CmConformanceBreak.NO_PEER_TIMEOUT
                    && !listener.dataPathActive(p.ip, timeoutNs)) {
                lost(p, "silent for more than " + config.peerTimeoutMs() + " ms");
            }
            if (p.channel == null || !p.channel.isActive()) {
                if (!p.pending.isEmpty() || !p.svcPending.isEmpty() || p.helloSeen) {
                    p.dial();
                } else if (silent && p.inbound.isEmpty()) {
                    it.remove(); // nothing to do with this peer any more
                }
            }
        }
    }

    private void lost(Peer p, String reason) {
        // a peer that came back with another secret (or none) is silent to us: say so
        String why = p.refused == null ? reason : reason + " (its connection was refused: " + p.refused + ")";
        LOG.warn("peer daemon {} lost: {}", ip(p.ip), why);
        p.helloSeen = false;
        p.bootId = 0;
        p.failAll(new CmRejectedException(CmMessage.REASON_ERROR, "peer daemon " + ip(p.ip) + " lost: " + why));
        Channel c = p.channel;
        p.channel = null;
        if (c != null) {
            c.close();
        }
        for (Channel other : new ArrayList<>(p.helloChannels)) {
            other.close();
        }
        p.helloChannels.clear();
        listener.onPeerLost(p.ip, why);
    }

    /** The peer came back with a new boot id: its old QPs are gone; requests not sent yet still go. */
    private void restarted(Peer p) {
        LOG.warn("peer daemon {} restarted", ip(p.ip));
        for (Iterator<Pending> it = p.pending.values().iterator(); it.hasNext(); ) {
            Pending x = it.next();
            if (x.sent) {
                it.remove();
                x.fail(new CmRejectedException(CmMessage.REASON_ERROR, "peer daemon " + ip(p.ip) + " restarted"));
            }
        }
        CmRejectedException gone =
                new CmRejectedException(CmMessage.REASON_ERROR, "peer daemon " + ip(p.ip) + " restarted");
        for (Iterator<SvcPending> it = p.svcPending.values().iterator(); it.hasNext(); ) {
            SvcPending x = it.next();
            if (x.sent) {
                it.remove();
                x.timeout.cancel(false);
                x.future.completeExceptionally(gone);
            }
        }
        p.dropInbound(gone);
        listener.onPeerLost(p.ip, "restarted (new boot id)");
    }

    private void onMessage(Channel ch, int ip, CmMessage m) {
        Peer p = peer(ip);
        if (m instanceof CmMessage.Hello) {
            if (ch.attr(HELLO).get() != null) {
                throw new CmProtocolException("second HELLO");
            }
            ch.attr(HELLO).set(Boolean.TRUE);
        } else if (ch.attr(HELLO).get() == null) {
            throw new CmProtocolException("message before HELLO");
        }
        p.lastHeardNs = System.nanoTime();
        switch (m) {
            case CmMessage.Hello h -> onHello(ch, p, ip, h);
            case CmMessage.Connect c -> onConnect(p, ip, c);
            case CmMessage.Accept a -> onAccept(p, a);
            case CmMessage.Reject r when CmConformanceBreak.IGNORE_REJECT -> {}
            case CmMessage.Reject r -> onReject(p, ip, r);
            case CmMessage.Disconnect d -> listener.onDisconnect(ip, d);
            case CmMessage.Ping ping when CmConformanceBreak.NO_PONG -> {}
            case CmMessage.Ping ping -> p.send(new CmMessage.Pong(ping.sequence()));
            case CmMessage.Pong pong -> {} // lastHeardNs already updated
            case CmMessage.SvcRequest r -> onSvcRequest(p, ip, r);
            case CmMessage.SvcReply r -> onSvcReply(p, r);
            case CmMessage.SvcReject r -> onSvcReject(p, r);
            case CmMessage.SvcReady r -> onSvcReady(p, r);
            case CmMessage.SvcCancel c -> onSvcCancel(p, ip, c);
            case CmMessage.AuthChallenge x -> throw new CmProtocolException("AUTH_CHALLENGE outside the handshake");
            case CmMessage.AuthProof x -> throw new CmProtocolException("AUTH_PROOF outside the handshake");
        }
    }

    /** A HELLO: the version spoken, the served address checked, a restart (new boot id) noticed. */
    private void onHello(Channel ch, Peer p, int ip, CmMessage.Hello h) {
        // Each side announces the highest version it speaks; the connection speaks the
        // lower of the two (CM-2.6): a newer peer speaks ours, an older one is refused.
        if (h.version() < CmCodec.VERSION) {
            throw new CmProtocolException("version " + h.version() + " (we speak " + CmCodec.VERSION + ")");
        }
        // A peer is the daemon serving the address it announces; its connections come from
        // that address (it binds them there), whatever the kernel would have picked.
        // Over IPv6 the field is 0: the connection's remote address is the one the peer
        // serves, as it dials from that address (section 1).
        if (h.servedIp() != (IpAddr.isV6(ip) ? 0 : ip)) {
            throw new CmProtocolException("peer announces served address "
                    + (h.servedIp() >>> 24) + "." + ((h.servedIp() >>> 16) & 0xff) + "." + ((h.servedIp() >>> 8) & 0xff)
                    + "." + (h.servedIp() & 0xff) + " on a connection with " + ip(ip));
        }
        if (p.bootId != 0 && p.bootId != h.bootId() && !CmConformanceBreak.IGNORE_RESTART) {
            restarted(p);
        }
        // Several connections to one peer can exist (both dialed at once): each is read;
        // the newest carries what we send.
        p.channel = ch;
        p.helloChannels.add(ch);
        p.bootId = h.bootId();
        p.helloSeen = true;
        LOG.debug(
                "peer daemon {}: HELLO seen on the {} connection ({} with HELLO), {} queued messages go out",
                ip(ip),
                ch.parent() == null ? "dialed" : "accepted",
                p.helloChannels.size(),
                p.queued.size());
        p.flush();
    }

    /** A CONNECT: the daemon accepts, answers later (its QP is not at RTR yet) or rejects. */
    private void onConnect(Peer p, int ip, CmMessage.Connect c) {
        Decision d = listener.onConnect(ip, c.endpoint());
        LOG.debug(
                "CONNECT {} from {}: QP {} -> our {}: {}",
                c.requestId(),
                ip(ip),
                c.endpoint().qpn(),
                c.endpoint().peerQpn(),
                d.getClass().getSimpleName());
        switch (d) {
            case Decision.Accept a -> {
                p.send(new CmMessage.Accept(c.requestId(), a.local()));
                completeFrom(p, c.endpoint());
            }
            case Decision.Later l -> completeFrom(p, c.endpoint());
            case Decision.Reject r when CmConformanceBreak.NO_REJECT_UNKNOWN_QP -> {}
            case Decision.Reject r ->
                p.send(new CmMessage.Reject(
                        c.requestId(), c.endpoint().peerQpn(), c.endpoint().qpn(), r.reason()));
        }
    }

    /** An ACCEPT: completes our request, or (unsolicited) a request for the same QPs. */
    private void onAccept(Peer p, CmMessage.Accept a) {
        Pending x = p.pending.remove(a.requestId());
        LOG.debug(
                "ACCEPT {} from {}: QP {} -> our {}{}",
                a.requestId(),
                ip(p.ip),
                a.endpoint().qpn(),
                a.endpoint().peerQpn(),
                x != null ? "" : " (unsolicited)");
        if (x != null) {
            x.complete(a.endpoint());
        } else {
            completeFrom(p, a.endpoint());
        }
    }

    /** A REJECT: fails our request. */
    private void onReject(Peer p, int ip, CmMessage.Reject r) {
        Pending x = p.pending.remove(r.requestId());
        if (x != null) {
            x.fail(new CmRejectedException(
                    r.reason(),
                    "peer " + ip(ip) + " rejected QP " + r.peerQpn() + " -> " + r.qpn() + " (reason " + r.reason()
                            + ")"));
        }
    }

    /** A service request: kept for the listener, or refused (no listener, busy, the handler's reason). */
    private void onSvcRequest(Peer p, int ip, CmMessage.SvcRequest r) {
        if (p.inbound.containsKey(r.requestId())) {
            LOG.debug("peer daemon {}: repeated service request {}", ip(ip), r.requestId());
            return;
        }
        ServiceHandler h = serviceHandler;
        int reason = h == null
                ? CmMessage.SVC_NO_LISTENER
                : p.inbound.size() >= MAX_INBOUND ? CmMessage.SVC_BUSY : h.onServiceRequest(ip, r);
        if (reason == 0) {
            p.inbound.put(r.requestId(), new Inbound());
        } else {
            p.send(new CmMessage.SvcReject(r.requestId(), reason, new byte[0]));
        }
    }

    /** A service reply: completes our request and confirms it (SVC_READY), or cancels one we gave up. */
    private void onSvcReply(Peer p, CmMessage.SvcReply r) {
        SvcPending x = p.svcPending.remove(r.requestId());
        if (x != null) {
            x.timeout.cancel(false);
            p.send(new CmMessage.SvcReady(r.requestId()));
            x.future.complete(r);
        } else {
            p.send(new CmMessage.SvcCancel(r.requestId(), CmMessage.SVC_CANCELLED)); // too late: we gave up
        }
    }

    /** A service reject: completes our request with it. */
    private void onSvcReject(Peer p, CmMessage.SvcReject r) {
        SvcPending x = p.svcPending.remove(r.requestId());
        if (x != null) {
            x.timeout.cancel(false);
            x.future.complete(r);
        }
    }

    /** SVC_READY: the requester took our accept; the accepted request is done. */
    private void onSvcReady(Peer p, CmMessage.SvcReady r) {
        Inbound x = p.inbound.get(r.requestId());
        if (x != null && x.accepted != null) {
            p.inbound.remove(r.requestId());
            x.timeout.cancel(false);
            x.accepted.complete(null);
        }
    }

    /** A requester withdrew its request: an accept in progress fails, a kept one is dropped. */
    private void onSvcCancel(Peer p, int ip, CmMessage.SvcCancel c) {
        Inbound x = p.inbound.remove(c.requestId());
        if (x == null) {
            return;
        }
        if (x.accepted != null) {
            x.timeout.cancel(false);
            x.accepted.completeExceptionally(new CmRejectedException(
                    CmMessage.REASON_DESTROYED,
                    "request " + c.requestId() + " of " + ip(ip) + " was cancelled by its requester (reason "
                            + c.reason() + ")"));
        } else {
            ServiceHandler h = serviceHandler;
            if (h != null) {
                h.onServiceCancel(ip, c.requestId(), c.reason());
            }
        }
    }

    /** The peer QP's endpoint arrived in its own CONNECT (or an unsolicited ACCEPT): complete our request. */
    private static void completeFrom(Peer p, CmMessage.Endpoint remote) {
        for (Iterator<Pending> it = p.pending.values().iterator(); it.hasNext(); ) {
            Pending x = it.next();
            if (x.local.qpn() == remote.peerQpn() && x.local.peerQpn() == remote.qpn()) {
                it.remove();
                x.complete(remote);
            }
        }
    }

    private static final io.netty.util.AttributeKey<Boolean> HELLO =
            io.netty.util.AttributeKey.valueOf("mrce-cm-hello");

    private final class Peer {
        final int ip;
        Channel channel;
        /**
         * Every connection with this peer that said HELLO, oldest first; {@link #channel} is the
         * newest. When it closes, the newest one left carries what we send.
         */
        final List<Channel> helloChannels = new ArrayList<>(2);
        /** The connection we dialed, while it waits for the peer's HELLO. */
        Channel dialed;

        boolean helloSeen;
        boolean dialing;
        long bootId;
        long pingSeq;
        long lastHeardNs = System.nanoTime();
        /** Why the last connection with this peer was refused by authentication (null: never). */
        String refused;

        final Map<Integer, Pending> pending = new HashMap<>();
        /** Our service requests to this peer, by request id. */
        final Map<Integer, SvcPending> svcPending = new HashMap<>();
        /** This peer's service requests we kept (answer pending), by its request id. */
        final Map<Integer, Inbound> inbound = new HashMap<>();

        final List<CmMessage> queued = new ArrayList<>();

        Peer(int ip) {
            this.ip = ip;
        }

        /** Sends now (true) or queues until the connection is up. */
        boolean send(CmMessage m) {
            if (channel != null && channel.isActive() && (helloSeen || m instanceof CmMessage.Hello)) {
                channel.writeAndFlush(m);
                return true;
            }
            if (queued.size() < 4096) {
                queued.add(m);
            }
            dial();
            return false;
        }

        void flush() {
            for (CmMessage m : queued) {
                channel.write(m);
                if (m instanceof CmMessage.Connect c && pending.get(c.requestId()) != null) {
                    pending.get(c.requestId()).sent = true;
                }
                if (m instanceof CmMessage.SvcRequest r && svcPending.get(r.requestId()) != null) {
                    svcPending.get(r.requestId()).sent = true;
                }
            }
            queued.clear();
            channel.flush();
        }

        void dial() {
            if (dialing || closed || (channel != null && channel.isActive()) || (dialed != null && dialed.isActive())) {
                return;
            }
            dialing = true;
            LOG.debug("dialing peer daemon {}:{}", ip(ip), config.port());
            // From the address we serve, never the kernel's choice of source (on lo, or with a
            // secondary address, that is another address): the peer knows us by this one.
            ChannelFuture f = new Bootstrap()
                    .group(loop)
                    .channel(EpollSocketChannel.class)
                    .localAddress(new InetSocketAddress(address(localIp), 0))
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, Math.max(100, config.heartbeatMs()))
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ConnectionManager.this.initChannel(ch, ip);
                        }
                    })
                    .connect(new InetSocketAddress(address(ip), config.port()));
            f.addListener(done -> {
                dialing = false;
                if (done.isSuccess()) {
                    dialed = f.channel();
                    LOG.debug("peer daemon {}: dialed connection up", ip(ip));
                } else {
                    LOG.debug(
                            "cannot reach peer daemon {}:{}: {}",
                            ip(ip),
                            config.port(),
                            done.cause().toString());
                }
            });
        }

        void failAll(CmRejectedException e) {
            for (Pending x : pending.values()) {
                x.fail(e);
            }
            pending.clear();
            for (SvcPending x : svcPending.values()) {
                x.timeout.cancel(false);
                x.future.completeExceptionally(e);
            }
            svcPending.clear();
            dropInbound(e);
            queued.removeIf(m -> m instanceof CmMessage.Connect || m instanceof CmMessage.SvcRequest);
        }

        /** Every request of this peer we hold goes: the handler forgets the kept ones, accepts fail. */
        void dropInbound(CmRejectedException e) {
            ServiceHandler h = serviceHandler;
            for (Map.Entry<Integer, Inbound> en : inbound.entrySet()) {
                Inbound x = en.getValue();
                if (x.accepted != null) {
                    x.timeout.cancel(false);
                    x.accepted.completeExceptionally(e);
                } else if (h != null) {
                    h.onServiceCancel(ip, en.getKey(), CmMessage.SVC_CANCELLED);
                }
            }
            inbound.clear();
        }

        /** Takes back a request of ours: unsent, it leaves the queue; sent, the peer is told. */
        void withdraw(SvcPending x, int reason) {
            if (!queued.remove(x.request)) {
                send(new CmMessage.SvcCancel(x.request.requestId(), reason));
            }
        }
    }

    private final class Pending {
        final int id;
        final CmMessage.Endpoint local;
        final CompletableFuture<CmMessage.Endpoint> future;
        ScheduledFuture<?> timeout;
        boolean sent;

        Pending(int id, CmMessage.Endpoint local, CompletableFuture<CmMessage.Endpoint> future) {
            this.id = id;
            this.local = local;
            this.future = future;
        }

        void complete(CmMessage.Endpoint remote) {
            if (timeout != null) {
                timeout.cancel(false);
            }
            future.complete(remote);
        }

        boolean fail(CmRejectedException e) {
            if (timeout != null) {
                timeout.cancel(false);
            }
            future.completeExceptionally(e);
            return true;
        }
    }

    /** A service request of ours, waiting for the peer's answer. */
    private static final class SvcPending {
        final CmMessage.SvcRequest request;
        final CompletableFuture<CmMessage> future;
        ScheduledFuture<?> timeout;
        boolean sent;

        SvcPending(CmMessage.SvcRequest request, CompletableFuture<CmMessage> future) {
            this.request = request;
            this.future = future;
        }
    }

    /** A peer's service request we kept: unanswered ({@code accepted} null) or accepted, waiting for SVC_READY. */
    private static final class Inbound {
        CompletableFuture<Void> accepted;
        ScheduledFuture<?> timeout;
    }

    private final class Handler extends io.netty.channel.ChannelDuplexHandler {
        private int ip;
        private final boolean dialer;
        // With a cluster secret (section 8): this connection's handshake, then its session.
        private CmMessage.Hello ownHello;
        private byte[] ownNonce;
        private CmMessage.Hello peerHello;
        private byte[] peerNonce;
        private CmAuth.Session session;
        // Without one: the peer's HELLO asked for a secret (it will refuse us), and whether we refused it.
        private boolean peerRequiresAuth;
        private boolean refusedHere;

        Handler(int dialedIp) {
            this.ip = dialedIp;
            this.dialer = dialedIp != 0;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            if (ip == 0) {
                InetSocketAddress remote = (InetSocketAddress) ctx.channel().remoteAddress();
                ip = IpAddr.of(remote.getAddress());
                if (ip == 0 || IpAddr.isV6(ip) != IpAddr.isV6(localIp)) {
                    ctx.close();
                    return;
                }
            }
            ownHello = new CmMessage.Hello(
                    CmCodec.VERSION,
                    auth == null ? 0 : CmMessage.CAP_AUTH,
                    bootId,
                    0,
                    CmConformanceBreak.HELLO_HEARTBEAT_ZERO ? 0 : config.heartbeatMs(),
                    IpAddr.isV6(localIp) ? 0 : localIp);
            ctx.write(ownHello);
            if (auth != null) {
                ownNonce = auth.nonce(); // sent once the peer's HELLO shows the extension (CM-2.8)
                ctx.executor()
                        .schedule(
                                () -> {
                                    if (session == null && ctx.channel().isActive()) {
                                        refuse(ctx, "no authentication within " + config.connectTimeoutMs() + " ms");
                                    }
                                },
                                config.connectTimeoutMs(),
                                TimeUnit.MILLISECONDS);
            }
            ctx.flush();
            LOG.debug("peer daemon {}: HELLO sent on the {} connection", ip(ip), dialer ? "dialed" : "accepted");
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof CmMessage m)) {
                ctx.fireChannelRead(msg);
            } else if (!ctx.channel().isActive()) {
                return; // refused or failed: the rest of what it sent is ignored
            } else if (auth == null) {
                // The AUTH bit is not in force without our own (CM-2.7): the peer refuses us, not we it.
                if (m instanceof CmMessage.AuthChallenge || m instanceof CmMessage.AuthProof) {
                    refuse(ctx, "it requires a cluster secret and this daemon has none (--cm-secret-file)");
                } else {
                    if (m instanceof CmMessage.Hello h && (h.capabilities() & CmMessage.CAP_AUTH) != 0) {
                        peerRequiresAuth = true;
                    }
                    onMessage(ctx.channel(), ip, m);
                }
            } else if (session != null) {
                if (m instanceof CmMessage.Hello
                        || m instanceof CmMessage.AuthChallenge
                        || m instanceof CmMessage.AuthProof) {
                    throw new CmProtocolException("second handshake message " + m);
                }
                onMessage(ctx.channel(), ip, session.inbound(m));
            } else {
                authenticate(ctx, m);
            }
        }

        /** The handshake of section 8: HELLO, AUTH_CHALLENGE, AUTH_PROOF from the peer, in that order. */
        private void authenticate(ChannelHandlerContext ctx, CmMessage m) {
            switch (m) {
                case CmMessage.Hello h
                when peerHello == null -> {
                    if ((h.capabilities() & CmMessage.CAP_AUTH) == 0) {
                        refuse(ctx, "it has no cluster secret and this daemon requires one");
                        return;
                    }
                    peerHello = h;
                    ctx.writeAndFlush(new CmMessage.AuthChallenge(ownNonce));
                }
                case CmMessage.AuthChallenge c
                when peerHello != null && peerNonce == null -> {
                    byte[] n = c.nonce();
                    if (java.util.Arrays.equals(n, ownNonce)) {
                        refuse(ctx, "it echoed our nonce");
                        return;
                    }
                    peerNonce = n;
                    ctx.writeAndFlush(new CmMessage.AuthProof(auth.proof(dialer, ownHello, ownNonce, peerNonce)));
                }
                case CmMessage.AuthProof p
                when peerNonce != null -> {
                    if (!auth.verify(p.mac(), !dialer, peerHello, peerNonce, ownNonce)) {
                        refuse(ctx, "wrong proof: another cluster secret, or a replayed handshake");
                        return;
                    }
                    session =
                            dialer ? auth.session(true, ownNonce, peerNonce) : auth.session(false, peerNonce, ownNonce);
                    Peer known = peers.get(ip);
                    if (known != null) {
                        known.refused = null;
                    }
                    onMessage(ctx.channel(), ip, peerHello);
                }
                default -> refuse(ctx, "unexpected " + m.getClass().getSimpleName() + " before authentication");
            }
        }

        /** Closes a connection that failed authentication: logged with the reason and counted. */
        private void refuse(ChannelHandlerContext ctx, String why) {
            refusedHere = true;
            authRefusals.incrementAndGet();
            // a misconfigured peer redials every heartbeat: one warning a second at most
            long now = System.nanoTime();
            if (now - lastRefusalLogNs >= TimeUnit.SECONDS.toNanos(1)) {
                lastRefusalLogNs = now;
                LOG.warn(
                        "peer daemon {}: connection refused: {}; closing it ({} refused so far)",
                        ip(ip),
                        why,
                        authRefusals.get());
            } else {
                LOG.debug("peer daemon {}: connection refused: {}; closing it", ip(ip), why);
            }
            Peer known = peers.get(ip);
            if (known != null) {
                known.refused = why;
            }
            ctx.close();
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, io.netty.channel.ChannelPromise promise) {
            ctx.write(session != null && msg instanceof CmMessage m ? session.outbound(m) : msg, promise);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (peerRequiresAuth && !refusedHere) {
                refuse(
                        ctx,
                        "it requires a cluster secret and this daemon has none (--cm-secret-file); it closed"
                                + " the connection");
            }
            Peer p = peers.get(ip);
            if (p != null) {
                p.helloChannels.remove(ctx.channel());
                if (p.channel == ctx.channel()) {
                    // Another connection with the peer that said HELLO (both dialed at once) carries
                    // on; with none, the peer is given until the peer timeout to come back with
                    // the same boot id, and the tick redials it.
                    p.channel = null;
                    for (Channel c : p.helloChannels) {
                        if (c.isActive()) {
                            p.channel = c;
                        }
                    }
                    if (p.channel != null) {
                        p.flush();
                    }
                }
            }
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Throwable c = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null
                    ? cause.getCause()
                    : cause;
            if (c instanceof CmProtocolException) {
                LOG.warn("peer daemon {}: protocol error: {}; closing its connection", ip(ip), c.getMessage());
            } else {
                LOG.debug("peer daemon {}: {}", ip(ip), c.toString());
            }
            ctx.close();
        }
    }

    static InetAddress address(int ip) {
        return IpAddr.toInet(ip);
    }

    static String ip(int ip) {
        return IpAddr.toString(ip);
    }
}
