package io.metaroce.control.cm;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.slf4j.LoggerFactory;

/**
 * Coverage-guided fuzzing (Jazzer) of the connection manager's state machine: a fake peer daemon
 * (127.77.0.2) speaks to a real {@link ConnectionManager} (127.77.0.1) through the manager's own
 * pipeline (codec and handler, reached by reflection) on an EmbeddedChannel, run on the manager's
 * event loop: a TCP round trip per input would allow a few hundred inputs a second. Each input is a
 * sequence of up to 8 well-encoded messages of any type with fuzzer-chosen fields (a HELLO with
 * the same or a new boot id, CONNECT for QPs the daemon accepts, defers or rejects, ACCEPT and
 * REJECT for requests never made, DISCONNECT, PING/PONG, the service messages, rarely an
 * authentication message, which this manager without a cluster secret refuses), then a PING whose
 * PONG marks the end of the input. Checked after every input: the manager answered the PING (or closed
 * the connection on a protocol error, after which the peer connects again), everything it sent decodes,
 * every ACCEPT it sent carries the endpoint the daemon chose for that CONNECT, and no exception other
 * than a protocol error reached its channel handler.
 *
 * <p>Runs in its own surefire execution with JAZZER_FUZZ=1 (control-plane/pom.xml): 10^5 inputs in
 * every build, 10^7 with -Pfuzz-long (docs/fuzzing.md).
 */
class CmStateFuzzing {
    private static final int CM_IP = 0x7f4d0001; // 127.77.0.1
    private static final int PEER_IP = 0x7f4d0002; // 127.77.0.2

    /** The daemon: QPN % 3 == 0 accepts with a fixed endpoint, 1 defers, 2 rejects. */
    static final class Daemon implements ConnectionManager.Listener, ConnectionManager.ServiceHandler {
        final java.util.Set<CmMessage.Endpoint> accepted = ConcurrentHashMap.newKeySet();
        long connects;
        long disconnects;
        long lost;
        long serviceRequests;

        @Override
        public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
            connects++;
            int q = remote.peerQpn() & 0xffffff;
            return switch (Integer.remainderUnsigned(q, 3)) {
                case 0 -> {
                    CmMessage.Endpoint ours = new CmMessage.Endpoint(
                            q, remote.qpn(), 1024, 64, q * 7, 0x5eed0000 | (q & 0xffff), new int[] {1, 2, 3});
                    accepted.add(ours);
                    yield new ConnectionManager.Decision.Accept(ours);
                }
                case 1 -> new ConnectionManager.Decision.Later();
                default -> new ConnectionManager.Decision.Reject(CmMessage.REASON_NO_QP);
            };
        }

        @Override
        public void onDisconnect(int peerIp, CmMessage.Disconnect d) {
            disconnects++;
        }

        @Override
        public void onPeerLost(int peerIp, String why) {
            lost++;
        }

        @Override
        public int onServiceRequest(int peerIp, CmMessage.SvcRequest r) {
            serviceRequests++;
            return (r.serviceId() & 1) == 0 ? CmMessage.SVC_NO_LISTENER : 0;
        }

        @Override
        public void onServiceCancel(int peerIp, int requestId, int reason) {}
    }

    /** Collects what the manager logs about exceptions that are not protocol errors. */
    static final class Unexpected extends AppenderBase<ILoggingEvent> {
        final List<String> seen = new ArrayList<>();

        @Override
        protected synchronized void append(ILoggingEvent e) {
            // exceptionCaught logs a protocol error at WARN, anything else at DEBUG as "peer daemon {}: {}"
            String m = e.getFormattedMessage();
            boolean handlerCaught = "peer daemon {}: {}".equals(e.getMessage())
                    && !m.contains("IOException")
                    && !m.contains("Connection reset");
            if (e.getThrowableProxy() != null || handlerCaught) {
                seen.add(e.getLevel() + " " + m
                        + (e.getThrowableProxy() != null
                                ? " " + e.getThrowableProxy().getClassName() + ": "
                                        + e.getThrowableProxy().getMessage()
                                : ""));
            }
        }
    }

    private static ConnectionManager cm;
    private static Daemon daemon;
    private static Unexpected unexpected;
    private static EventLoop loop;
    private static java.lang.reflect.Constructor<?> handlerClass;
    private static EmbeddedChannel channel;
    private static EmbeddedChannel decoder;
    private static long lastPong;
    private static long bootId = 0x1000;
    private static long pingSeq;
    private static long inputs;
    private static long messages;
    private static long replies;
    private static long closedByCm;
    private static long acceptsSeen;

    private static final long[] perType = new long[13];

    @FuzzTest(maxExecutions = 100_000)
    void peer(FuzzedDataProvider data) throws Exception {
        if (cm == null) {
            start();
        }
        inputs++;
        ByteBuf out = Unpooled.buffer();
        int n = data.consumeInt(1, 8);
        for (int i = 0; i < n && data.remainingBytes() > 0; i++) {
            CmMessage m = message(data);
            perType[type(m)]++;
            CmCodec.encode(m, out);
            messages++;
        }
        CmCodec.encode(new CmMessage.Ping(++pingSeq), out);
        long seq = pingSeq;
        // everything the manager does happens on its event loop, as with a socket
        loop.submit(() -> {
                    if (channel == null) {
                        connect();
                    }
                    channel.writeInbound(out);
                    drain();
                    if (!channel.isOpen()) { // a protocol error, or a HELLO it refused
                        closedByCm++;
                        channel.finishAndReleaseAll();
                        channel = null;
                    } else if (lastPong != seq) {
                        throw new AssertionError("the connection manager did not answer PING " + seq);
                    }
                    return null;
                })
                .get();
        synchronized (unexpected) {
            if (!unexpected.seen.isEmpty()) {
                String what = String.join("; ", unexpected.seen);
                unexpected.seen.clear();
                throw new AssertionError("connection manager: " + what);
            }
        }
    }

    private static CmMessage message(FuzzedDataProvider d) {
        int qpn = d.consumeInt(0, 15);
        int peerQpn = d.consumeBoolean() ? d.consumeInt() : d.consumeInt(0, 31);
        // a second HELLO on a connection is a protocol error (the manager closes it): keep it rare
        int type = d.consumeInt(0, 12);
        if ((type == 0 || type == 12) && d.consumeInt(0, 15) != 15) {
            type = 5;
        }
        return switch (type) {
            case 0 ->
                new CmMessage.Hello(
                        d.consumeBoolean() ? CmCodec.VERSION : d.consumeInt(),
                        d.consumeInt(),
                        d.consumeBoolean() ? bootId : ++bootId,
                        d.consumeInt(0, 65535),
                        d.consumeInt(0, 65535),
                        d.consumeBoolean() ? PEER_IP : d.consumeInt());
            case 1 -> new CmMessage.Connect(d.consumeInt(), endpoint(d, qpn, peerQpn));
            case 2 -> new CmMessage.Accept(d.consumeInt(0, 7), endpoint(d, qpn, peerQpn));
            case 3 -> new CmMessage.Reject(d.consumeInt(0, 7), qpn, peerQpn, d.consumeInt(0, 8));
            case 4 ->
                new CmMessage.Disconnect(
                        qpn, peerQpn, d.consumeInt(0, 8), d.consumeInt(), d.consumeInt(0, 1), d.consumeInt());
            case 5 -> new CmMessage.Ping(d.consumeLong());
            case 6 -> new CmMessage.Pong(d.consumeLong());
            case 7 ->
                new CmMessage.SvcRequest(
                        d.consumeInt(0, 7),
                        d.consumeInt(0, 3),
                        qpn,
                        d.consumeInt(),
                        new byte[16],
                        d.consumeBytes(d.consumeInt(0, CmMessage.SVC_PRIVATE_DATA_MAX)));
            case 8 ->
                new CmMessage.SvcReply(
                        d.consumeInt(0, 7),
                        qpn,
                        d.consumeInt(),
                        new byte[16],
                        d.consumeBytes(d.consumeInt(0, CmMessage.SVC_PRIVATE_DATA_MAX)));
            case 9 ->
                new CmMessage.SvcReject(
                        d.consumeInt(0, 7),
                        d.consumeInt(0, 5),
                        d.consumeBytes(d.consumeInt(0, CmMessage.SVC_PRIVATE_DATA_MAX)));
            case 10 -> new CmMessage.SvcReady(d.consumeInt(0, 7));
            case 11 -> new CmMessage.SvcCancel(d.consumeInt(0, 7), d.consumeInt(0, 5));
            // authentication messages to a manager without a cluster secret: refused, connection closed
            default ->
                d.consumeBoolean()
                        ? new CmMessage.AuthChallenge(fixed(d, CmMessage.AuthChallenge.NONCE_BYTES))
                        : new CmMessage.AuthProof(fixed(d, CmMessage.AuthProof.MAC_BYTES));
        };
    }

    private static byte[] fixed(FuzzedDataProvider d, int n) {
        return java.util.Arrays.copyOf(d.consumeBytes(n), n);
    }

    private static CmMessage.Endpoint endpoint(FuzzedDataProvider d, int qpn, int peerQpn) {
        int[] entropies = new int[d.consumeInt(1, 8)];
        for (int i = 0; i < entropies.length; i++) {
            entropies[i] = d.consumeInt(0, 65535);
        }
        return new CmMessage.Endpoint(
                qpn,
                peerQpn,
                d.pickValue(new int[] {256, 512, 1024, 2048, 4096}),
                d.consumeInt(1, 1024),
                d.consumeInt(0, 0xffffff),
                d.consumeInt(),
                entropies,
                d.consumeInt(0, 9000));
    }

    private static int type(CmMessage m) {
        return switch (m) {
            case CmMessage.Hello x -> 0;
            case CmMessage.Connect x -> 1;
            case CmMessage.Accept x -> 2;
            case CmMessage.Reject x -> 3;
            case CmMessage.Disconnect x -> 4;
            case CmMessage.Ping x -> 5;
            case CmMessage.Pong x -> 6;
            case CmMessage.SvcRequest x -> 7;
            case CmMessage.SvcReply x -> 8;
            case CmMessage.SvcReject x -> 9;
            case CmMessage.SvcReady x -> 10;
            case CmMessage.SvcCancel x -> 11;
            case CmMessage.AuthChallenge x -> 12;
            case CmMessage.AuthProof x -> 12;
        };
    }

    /** Decodes and checks what the manager sent. Its event loop. */
    private static void drain() {
        ByteBuf b;
        while ((b = channel.readOutbound()) != null) {
            try {
                decoder.writeInbound(b);
            } catch (io.netty.handler.codec.DecoderException e) {
                throw new AssertionError("the connection manager sent an undecodable message", e);
            }
        }
        Object m;
        while ((m = decoder.readInbound()) != null) {
            replies++;
            if (m instanceof CmMessage.Accept a) {
                acceptsSeen++;
                if (!daemon.accepted.contains(a.endpoint())) {
                    throw new AssertionError("ACCEPT with an endpoint the daemon never chose: " + a);
                }
            }
            if (m instanceof CmMessage.Pong p) {
                lastPong = p.sequence();
            }
        }
    }

    private static void start() throws Exception {
        unexpected = new Unexpected();
        unexpected.start();
        Logger log = (Logger) LoggerFactory.getLogger(ConnectionManager.class);
        log.setLevel(Level.DEBUG);
        log.setAdditive(false); // protocol errors by the thousand: counted, not printed
        log.addAppender(unexpected);
        daemon = new Daemon();
        // a heartbeat of a minute: no tick during a run (inputs, not time, drive the manager)
        // any free port: the inputs reach the manager's pipeline on an EmbeddedChannel, never its
        // listener, and a fixed port collided with another build's fuzzer on the same machine
        int port;
        try (java.net.ServerSocket probe =
                new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.77.0.1"))) {
            port = probe.getLocalPort();
        }
        cm = ConnectionManager.start(CM_IP, new ConnectionManager.Config(port, 60_000, 120_000, 1000), daemon);
        cm.serviceHandler(daemon);
        Field f = ConnectionManager.class.getDeclaredField("loop");
        f.setAccessible(true);
        loop = (EventLoop) f.get(cm);
        handlerClass = Class.forName(ConnectionManager.class.getName() + "$Handler")
                .getDeclaredConstructor(ConnectionManager.class, int.class);
        handlerClass.setAccessible(true);
    }

    /**
     * A new connection from the peer: the manager's own decoder, encoder and handler (as its
     * server's channel initializer adds them) on an EmbeddedChannel; our HELLO first. Its loop.
     */
    private static void connect() throws Exception {
        ChannelHandler handler = (ChannelHandler) handlerClass.newInstance(cm, PEER_IP);
        channel = new EmbeddedChannel(new CmCodec.Decoder(), CmCodec.Encoder.INSTANCE, handler);
        if (decoder != null) {
            decoder.finishAndReleaseAll();
        }
        decoder = new EmbeddedChannel(new CmCodec.Decoder());
        ByteBuf hello = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Hello(CmCodec.VERSION, 0, bootId, 4793, 500, PEER_IP), hello);
        channel.writeInbound(hello);
        drain();
    }

    @AfterAll
    static void report() {
        if (cm == null) {
            return;
        }
        try {
            loop.submit(() -> {
                        if (channel != null) {
                            channel.finishAndReleaseAll();
                        }
                        if (decoder != null) {
                            decoder.finishAndReleaseAll();
                        }
                    })
                    .get();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        cm.close();
        cm = null;
        StringBuilder b = new StringBuilder();
        String[] names = {
            "HELLO",
            "CONNECT",
            "ACCEPT",
            "REJECT",
            "DISCONNECT",
            "PING",
            "PONG",
            "SVC_REQUEST",
            "SVC_REPLY",
            "SVC_REJECT",
            "SVC_READY",
            "SVC_CANCEL",
            "AUTH_*"
        };
        for (int i = 0; i < names.length; i++) {
            b.append(i == 0 ? "" : ", ").append(names[i]).append(' ').append(perType[i]);
        }
        System.out.println("CmStateFuzzing: " + inputs + " inputs, " + messages + " messages sent, " + replies
                + " replies read, " + acceptsSeen + " ACCEPTs checked, " + closedByCm
                + " connections closed by the manager; daemon saw " + daemon.connects + " CONNECTs, "
                + daemon.disconnects + " DISCONNECTs, " + daemon.lost + " peer losses, " + daemon.serviceRequests
                + " service requests");
        System.out.println("CmStateFuzzing: messages per type: " + b);
    }
}
