package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A manager dials its peers from the address it serves, not from the one the kernel would pick:
 * on {@code lo} a connection from 127.0.0.2 to 127.0.0.1 leaves from 127.0.0.1 unless it is
 * bound, and the peer then takes it for a connection from itself (issue 21: the demo's daemon B
 * was rejected MISMATCH three times in four).
 */
class ConnectionManagerSourceAddressTest {
    private static final int A = 0x7f000001;
    private static final int B = 0x7f000002;

    /**
     * A port free on both addresses, taken from the kernel's ephemeral range: a fixed one collides
     * with any other manager test running on the host at the same time.
     */
    static int portFreeOnBoth() throws IOException {
        for (int i = 0; i < 50; i++) {
            try (ServerSocket first = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
                int port = first.getLocalPort();
                try (ServerSocket second = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.2"))) {
                    return port;
                } catch (IOException taken) {
                    // try another
                }
            }
        }
        throw new IOException("no port free on both 127.0.0.1 and 127.0.0.2");
    }

    /** Accepts every CONNECT for a QP it has, and records which peer address asked for it. */
    private static final class Recorder implements ConnectionManager.Listener {
        final Map<Integer, Integer> askedBy = new ConcurrentHashMap<>();
        final Map<Integer, CmMessage.Endpoint> qps = new ConcurrentHashMap<>();

        @Override
        public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
            askedBy.put(remote.peerQpn(), peerIp);
            CmMessage.Endpoint local = qps.get(remote.peerQpn());
            return local == null
                    ? new ConnectionManager.Decision.Reject(CmMessage.REASON_NO_QP)
                    : new ConnectionManager.Decision.Accept(local);
        }

        @Override
        public void onDisconnect(int peerIp, CmMessage.Disconnect d) {}

        @Override
        public void onPeerLost(int peerIp, String why) {}
    }

    private ConnectionManager a;
    private ConnectionManager b;

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    private static CmMessage.Endpoint ep(int qpn, int peer) {
        return new CmMessage.Endpoint(qpn, peer, 1024, 256, 1, 0x1234, new int[] {1, 2});
    }

    @Test
    void theDialedPeerSeesTheServedAddressNotTheKernelsChoice() throws Exception {
        Recorder ra = new Recorder();
        Recorder rb = new Recorder();
        ConnectionManager.Config steady = new ConnectionManager.Config(portFreeOnBoth(), 50, 30_000, 2000);
        a = ConnectionManager.start(A, steady, ra);
        b = ConnectionManager.start(B, steady, rb);
        ra.qps.put(10, ep(10, 20));
        // B dials A: the route to 127.0.0.1 would take 127.0.0.1 as source.
        assertThat(b.connect(A, ep(20, 10)).get(5, TimeUnit.SECONDS)).isEqualTo(ep(10, 20));
        assertThat(ra.askedBy.get(10)).as("peer address A saw").isEqualTo(B);
        // And the other way on the same connection pair: A's answer reached B as from A.
        rb.qps.put(21, ep(21, 11));
        assertThat(a.connect(B, ep(11, 21)).get(5, TimeUnit.SECONDS)).isEqualTo(ep(21, 11));
        assertThat(rb.askedBy.get(21)).as("peer address B saw").isEqualTo(A);
    }

    @Test
    void aHelloAnnouncingAnotherAddressThanTheConnectionsIsAProtocolError() throws Exception {
        int port = portFreeOnBoth();
        a = ConnectionManager.start(A, new ConnectionManager.Config(port, 50, 30_000, 2000), new Recorder());
        ByteBuf hello = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Hello(CmCodec.VERSION, 0, 42, 0, 50, 0x7f000003), hello);
        byte[] bytes = new byte[hello.readableBytes()];
        hello.readBytes(bytes).release();
        try (Socket s = new Socket()) {
            s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
            s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 5000);
            s.setSoTimeout(5000);
            s.getOutputStream().write(bytes);
            // A's own HELLO (32 bytes), then the end of the stream: it closed the connection.
            byte[] got = s.getInputStream().readNBytes(64);
            assertThat(got.length).as("bytes before A closed the connection").isEqualTo(CmCodec.HELLO_SIZE);
            assertThat(got[2]).isEqualTo((byte) CmMessage.TYPE_HELLO);
            assertThat(ByteBuffer.wrap(got, 28, 4).getInt())
                    .as("A announces its served address")
                    .isEqualTo(A);
        }
    }
}
