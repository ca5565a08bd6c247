package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.IpAddr;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A manager serving an IPv6 address (::1 here) speaks IPv6 TCP; its HELLO's served address is 0
 * and so must its peers' be (connection-manager.md section 1): a peer announcing an IPv4 address
 * there is a protocol error.
 */
class ConnectionManagerIpv6Test {
    private ConnectionManager a;
    private int loop6;
    private int port;

    @BeforeEach
    void ipv6Loopback() throws IOException {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName("::1"))) {
            port = probe.getLocalPort();
        } catch (IOException e) {
            Assumptions.abort("no IPv6 loopback here: " + e);
        }
        loop6 = IpAddr.parse("::1");
    }

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
    }

    private static final class Quiet implements ConnectionManager.Listener {
        @Override
        public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
            return new ConnectionManager.Decision.Reject(CmMessage.REASON_NO_QP);
        }

        @Override
        public void onDisconnect(int peerIp, CmMessage.Disconnect d) {}

        @Override
        public void onPeerLost(int peerIp, String why) {}
    }

    private static byte[] frame(CmMessage m) {
        ByteBuf b = Unpooled.buffer();
        CmCodec.encode(m, b);
        byte[] bytes = new byte[b.readableBytes()];
        b.readBytes(bytes).release();
        return bytes;
    }

    private Socket dial() throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.getByName("::1"), port), 5000);
        s.setSoTimeout(5000);
        return s;
    }

    @Test
    void helloWithServedAddressZeroIsAnsweredAndThePeerIsServed() throws Exception {
        a = ConnectionManager.start(loop6, new ConnectionManager.Config(port, 50, 300, 2000), new Quiet());
        try (Socket s = dial()) {
            s.getOutputStream().write(frame(new CmMessage.Hello(CmCodec.VERSION, 0, 42, 0, 50, 0)));
            s.getOutputStream().write(frame(new CmMessage.Ping(77)));
            InputStream in = s.getInputStream();
            byte[] hello = in.readNBytes(CmCodec.HELLO_SIZE);
            assertThat(hello[2]).isEqualTo((byte) CmMessage.TYPE_HELLO);
            assertThat(ByteBuffer.wrap(hello, 28, 4).getInt())
                    .as("served address over IPv6")
                    .isZero();
            // Frames until the PONG of our PING (the manager's own PINGs may come first): it read
            // our PING, so it took our HELLO.
            while (true) {
                byte[] head = in.readNBytes(4);
                assertThat(head).as("the connection stays open").hasSize(4);
                int len = ((head[0] & 0xff) << 8) | (head[1] & 0xff);
                byte[] body = in.readNBytes(len - 4);
                if (head[2] == CmMessage.TYPE_PONG) {
                    assertThat(ByteBuffer.wrap(body).getLong()).isEqualTo(77);
                    break;
                }
            }
        }
    }

    @Test
    void helloAnnouncingAnIpv4AddressOverIpv6IsAProtocolError() throws Exception {
        a = ConnectionManager.start(loop6, new ConnectionManager.Config(port, 50, 300, 2000), new Quiet());
        try (Socket s = dial()) {
            s.getOutputStream().write(frame(new CmMessage.Hello(CmCodec.VERSION, 0, 42, 0, 50, 0x7f000001)));
            byte[] got = s.getInputStream().readNBytes(64);
            assertThat(got.length)
                    .as("bytes before the manager closed the connection")
                    .isEqualTo(CmCodec.HELLO_SIZE);
            assertThat(got[2]).isEqualTo((byte) CmMessage.TYPE_HELLO);
        }
    }
}
