package io.metaroce.control.cm;

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
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
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
 * every QP connected to it ({@link Listener#onPeerLost}).
 *
 * <p>All state lives on one event loop; the public methods may be called from any thread.
 */
public final class ConnectionManager implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionManager.class);

    /** Settings (milliseconds). */
    public record Config(int port, int heartbeatMs, int peerTimeoutMs, int connectTimeoutMs) {
        public static final int DEFAULT_PORT = 4792;

        public Config {
            if (heartbeatMs < 1 || heartbeatMs > 65535 || peerTimeoutMs < 2 * heartbeatMs || connectTimeoutMs < 1) {
                throw new IllegalArgumentException("need 1 <= heartbeat <= 65535 ms, peer timeout >= 2 heartbeats,"
                        + " connect timeout >= 1 ms");
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

        /** The peer's QP {@code remoteQpn} left the connection with our {@code localQpn}. */
        void onDisconnect(int peerIp, int localQpn, int remoteQpn, int reason);

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

    private final Config config;
    private final int localIp;
    private final Listener listener;
    private final long bootId = new SecureRandom().nextLong();
    private final EventLoopGroup group;
    private final EventLoop loop;
    private final Channel server;
    private final Map<Integer, Peer> peers = new HashMap<>();
    private int nextRequestId = 1;
    private volatile boolean closed;

    private ConnectionManager(Config config, int localIp, Listener listener, EventLoopGroup group, Channel server) {
        this.config = config;
        this.localIp = localIp;
        this.listener = listener;
        this.group = group;
        this.loop = group.next();
        this.server = server;
    }

    /** Listens on {@code localIp:config.port} (host-order IPv4) and starts the keepalive timer. */
    public static ConnectionManager start(int localIp, Config config, Listener listener) throws IOException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("mrce-cm", true),
                EpollIoHandler.newFactory());
        ConnectionManager[] self = new ConnectionManager[1];
        try {
            Channel server = new ServerBootstrap().group(group).channel(EpollServerSocketChannel.class)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            self[0].initChannel(ch, 0);
                        }
                    })
                    .bind(new InetSocketAddress(address(localIp), config.port())).sync().channel();
            ConnectionManager cm = new ConnectionManager(config, localIp, listener, group, server);
            self[0] = cm;
            cm.loop.scheduleAtFixedRate(cm::tick, config.heartbeatMs(), config.heartbeatMs(), TimeUnit.MILLISECONDS);
            LOG.info("connection manager on {}:{} (heartbeat {} ms, peer timeout {} ms)",
                    address(localIp).getHostAddress(), config.port(), config.heartbeatMs(), config.peerTimeoutMs());
            return cm;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("interrupted", e);
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("connection manager cannot listen on " + address(localIp).getHostAddress() + ":"
                    + config.port() + ": " + e.getMessage(), e);
        }
    }

    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    public long bootId() {
        return bootId;
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
                f.completeExceptionally(new CmRejectedException(CmMessage.REASON_SHUTDOWN, "connection manager closed"));
                return;
            }
            Peer p = peer(peerIp);
            int id = nextRequestId++;
            Pending pending = new Pending(id, local, f);
            p.pending.put(id, pending);
            pending.timeout = loop.schedule(() -> {
                if (p.pending.remove(id) != null) {
                    f.completeExceptionally(new CmRejectedException(CmMessage.REASON_TIMEOUT,
                            "no answer from " + ip(peerIp) + " within " + config.connectTimeoutMs() + " ms"));
                }
            }, config.connectTimeoutMs(), TimeUnit.MILLISECONDS);
            pending.sent = p.send(new CmMessage.Connect(id, local));
        });
        return f;
    }

    /** Tells the peer daemon that our QP {@code localQpn} no longer talks to its {@code remoteQpn}. */
    public void disconnect(int peerIp, int localQpn, int remoteQpn, int reason) {
        loop.execute(() -> {
            Peer p = peers.get(peerIp);
            if (p != null && p.channel != null && p.channel.isActive()) {
                p.send(new CmMessage.Disconnect(localQpn, remoteQpn, reason));
            }
            if (p != null) {
                p.pending.values().removeIf(x -> x.local.qpn() == localQpn && x.fail(
                        new CmRejectedException(reason, "QP " + localQpn + " went away")));
            }
        });
    }

    /** Peer daemons with a live connection (for mrce-ctl). */
    public int livePeers() {
        CompletableFuture<Integer> n = new CompletableFuture<>();
        loop.execute(() -> n.complete((int) peers.values().stream().filter(p -> p.helloSeen).count()));
        return n.join();
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
            if (p.helloSeen && silent && !listener.dataPathActive(p.ip, timeoutNs)) {
                lost(p, "silent for more than " + config.peerTimeoutMs() + " ms");
            }
            if (p.channel == null || !p.channel.isActive()) {
                if (!p.pending.isEmpty() || p.helloSeen) {
                    p.dial();
                } else if (silent) {
                    it.remove(); // nothing to do with this peer any more
                }
            }
        }
    }

    private void lost(Peer p, String why) {
        LOG.warn("peer daemon {} lost: {}", ip(p.ip), why);
        p.helloSeen = false;
        p.bootId = 0;
        p.failAll(new CmRejectedException(CmMessage.REASON_ERROR, "peer daemon " + ip(p.ip) + " lost: " + why));
        if (p.channel != null) {
            p.channel.close();
            p.channel = null;
        }
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
            case CmMessage.Hello h -> {
                if (h.version() != CmCodec.VERSION) {
                    throw new CmProtocolException("version " + h.version() + " (we speak " + CmCodec.VERSION + ")");
                }
                if (p.bootId != 0 && p.bootId != h.bootId()) {
                    restarted(p);
                }
                // Several connections to one peer can exist (both dialed at once): each is read;
                // the newest carries what we send.
                p.channel = ch;
                p.bootId = h.bootId();
                p.helloSeen = true;
                p.flush();
            }
            case CmMessage.Connect c -> {
                Decision d = listener.onConnect(ip, c.endpoint());
                switch (d) {
                    case Decision.Accept a -> {
                        p.send(new CmMessage.Accept(c.requestId(), a.local()));
                        completeFrom(p, c.endpoint());
                    }
                    case Decision.Later l -> completeFrom(p, c.endpoint());
                    case Decision.Reject r -> p.send(new CmMessage.Reject(c.requestId(), c.endpoint().peerQpn(),
                            c.endpoint().qpn(), r.reason()));
                }
            }
            case CmMessage.Accept a -> {
                Pending x = p.pending.remove(a.requestId());
                if (x != null) {
                    x.complete(a.endpoint());
                } else {
                    completeFrom(p, a.endpoint());
                }
            }
            case CmMessage.Reject r -> {
                Pending x = p.pending.remove(r.requestId());
                if (x != null) {
                    x.fail(new CmRejectedException(r.reason(), "peer " + ip(ip) + " rejected QP " + r.peerQpn()
                            + " -> " + r.qpn() + " (reason " + r.reason() + ")"));
                }
            }
            case CmMessage.Disconnect d -> listener.onDisconnect(ip, d.peerQpn(), d.qpn(), d.reason());
            case CmMessage.Ping ping -> p.send(new CmMessage.Pong(ping.sequence()));
            case CmMessage.Pong pong -> {
                // lastHeardNs already updated
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

    private static final io.netty.util.AttributeKey<Boolean> HELLO = io.netty.util.AttributeKey.valueOf("mrce-cm-hello");

    private final class Peer {
        final int ip;
        Channel channel;
        /** The connection we dialed, while it waits for the peer's HELLO. */
        Channel dialed;
        boolean helloSeen;
        boolean dialing;
        long bootId;
        long pingSeq;
        long lastHeardNs = System.nanoTime();
        final Map<Integer, Pending> pending = new HashMap<>();
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
            }
            queued.clear();
            channel.flush();
        }

        void dial() {
            if (dialing || closed || (channel != null && channel.isActive()) || (dialed != null && dialed.isActive())) {
                return;
            }
            dialing = true;
            ChannelFuture f = new Bootstrap().group(loop).channel(EpollSocketChannel.class)
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
                } else {
                    LOG.debug("cannot reach peer daemon {}:{}: {}", ip(ip), config.port(), done.cause().toString());
                }
            });
        }

        void failAll(CmRejectedException e) {
            for (Pending x : pending.values()) {
                x.fail(e);
            }
            pending.clear();
            queued.removeIf(m -> m instanceof CmMessage.Connect);
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

    private final class Handler extends SimpleChannelInboundHandler<CmMessage> {
        private int ip;

        Handler(int dialedIp) {
            this.ip = dialedIp;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            if (ip == 0) {
                InetSocketAddress remote = (InetSocketAddress) ctx.channel().remoteAddress();
                byte[] a = remote.getAddress().getAddress();
                if (a.length != 4) {
                    ctx.close();
                    return;
                }
                ip = ((a[0] & 0xff) << 24) | ((a[1] & 0xff) << 16) | ((a[2] & 0xff) << 8) | (a[3] & 0xff);
            }
            ctx.writeAndFlush(new CmMessage.Hello(CmCodec.VERSION, 0, bootId, 0, config.heartbeatMs()));
            ctx.fireChannelActive();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, CmMessage msg) {
            onMessage(ctx.channel(), ip, msg);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            Peer p = peers.get(ip);
            if (p != null && p.channel == ctx.channel()) {
                p.channel = null;
                // A peer that closed its connection is given until the peer timeout to come back with
                // the same boot id; the tick redials it.
            }
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Throwable c = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null
                    ? cause.getCause() : cause;
            if (c instanceof CmProtocolException) {
                LOG.warn("peer daemon {}: protocol error: {}; closing its connection", ip(ip), c.getMessage());
            } else {
                LOG.debug("peer daemon {}: {}", ip(ip), c.toString());
            }
            ctx.close();
        }
    }

    static InetAddress address(int ip) {
        try {
            return InetAddress.getByAddress(new byte[] {(byte) (ip >>> 24), (byte) (ip >>> 16), (byte) (ip >>> 8), (byte) ip});
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(e);
        }
    }

    static String ip(int ip) {
        return address(ip).getHostAddress();
    }
}
