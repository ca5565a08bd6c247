package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Version negotiation and extension rules of docs/spec/connection-manager.md section 2.3: a peer
 * announcing a higher version and unknown capability bits is spoken to in version 3; frames of the
 * ignorable types (64..255) are skipped; a lower version closes the connection. Played from a raw
 * socket as a peer at 127.0.0.2 against a manager at 127.0.0.1.
 */
class ConnectionManagerExtensionTest {
    private static final int A = 0x7f000001;
    private static final int PEER = 0x7f000002;

    private ConnectionManager a;

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
    }

    private static int portFreeOnBoth() throws IOException {
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

    private static byte[] bytes(ByteBuf b) {
        byte[] out = new byte[b.readableBytes()];
        b.readBytes(out).release();
        return out;
    }

    private static byte[] hello(int version, int capabilities) {
        ByteBuf b = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Hello(version, capabilities, 42, 0, 1000, PEER), b);
        return bytes(b);
    }

    /** Reads one frame: u16 length, then the rest. */
    private static byte[] readFrame(InputStream in) throws IOException {
        DataInputStream d = new DataInputStream(in);
        int len = d.readUnsignedShort();
        byte[] f = new byte[len];
        f[0] = (byte) (len >> 8);
        f[1] = (byte) len;
        d.readFully(f, 2, len - 2);
        return f;
    }

    private Socket dial(int port) throws IOException {
        a = ConnectionManager.start(A, new ConnectionManager.Config(port, 1000, 3000, 2000), new Quiet());
        Socket s = new Socket();
        s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
        s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 5000);
        s.setSoTimeout(5000);
        return s;
    }

    @Test
    void aNewerPeerWithUnknownCapabilitiesAndIgnorableFramesIsSpokenToInVersion3() throws Exception {
        try (Socket s = dial(portFreeOnBoth())) {
            s.getOutputStream().write(hello(CmCodec.VERSION + 1, 0xffffffff));
            // an extension frame of an ignorable type, flags set, 12 bytes of payload: skipped
            s.getOutputStream().write(new byte[] {0, 16, (byte) 200, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
            ByteBuf ping = Unpooled.buffer();
            CmCodec.encode(new CmMessage.Ping(0x1234), ping);
            s.getOutputStream().write(bytes(ping));
            byte[] first = readFrame(s.getInputStream());
            assertThat(first[2]).isEqualTo((byte) CmMessage.TYPE_HELLO);
            CmMessage.Hello h = (CmMessage.Hello) CmCodec.decode(Unpooled.wrappedBuffer(first), first.length);
            assertThat(h.version()).as("A announces the version it speaks").isEqualTo(3);
            assertThat(h.capabilities())
                    .as("no capability is defined in version 3")
                    .isZero();
            // The connection lives on: A answers the PING (a heartbeat PING of A may come first).
            for (int i = 0; i < 4; i++) {
                byte[] f = readFrame(s.getInputStream());
                CmMessage m = CmCodec.decode(Unpooled.wrappedBuffer(f), f.length);
                if (m instanceof CmMessage.Pong p) {
                    assertThat(p.sequence()).isEqualTo(0x1234);
                    return;
                }
            }
            throw new AssertionError("no PONG from A");
        }
    }

    @Test
    void anOlderVersionClosesTheConnection() throws Exception {
        try (Socket s = dial(portFreeOnBoth())) {
            s.getOutputStream().write(hello(CmCodec.VERSION - 1, 0));
            byte[] got = s.getInputStream().readNBytes(256);
            assertThat(got.length).as("A's HELLO, then the end of the stream").isEqualTo(CmCodec.HELLO_SIZE);
        }
    }

    @Test
    void unknownTypesBelow64AreStillProtocolErrors() throws Exception {
        try (Socket s = dial(portFreeOnBoth())) {
            s.getOutputStream().write(hello(CmCodec.VERSION, 0));
            s.getOutputStream().write(new byte[] {0, 8, 13, 0, 0, 0, 0, 0});
            byte[] got = s.getInputStream().readNBytes(256);
            assertThat(got.length).as("A's HELLO, then the end of the stream").isEqualTo(CmCodec.HELLO_SIZE);
        }
    }

    private static Socket raw(int port) throws IOException {
        Socket s = new Socket();
        s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
        s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 5000);
        s.setSoTimeout(5000);
        return s;
    }

    /** The next PING A sends on {@code s} (other frames are skipped). */
    private static CmMessage.Ping nextPing(Socket s) throws IOException {
        for (; ; ) {
            byte[] f = readFrame(s.getInputStream());
            if (CmCodec.decode(Unpooled.wrappedBuffer(f), f.length) instanceof CmMessage.Ping p) {
                return p;
            }
        }
    }

    @Test
    void whenTheNewestConnectionWithAPeerClosesAnOlderOneCarriesOn() throws Exception {
        // CM section 1: several connections with one peer may exist; the newest carries what A
        // sends, and when it closes, another one still open takes over (A once waited for a
        // redial instead, and a CONNECT queued meanwhile timed out; found by the conformance suite).
        int port = portFreeOnBoth();
        a = ConnectionManager.start(A, new ConnectionManager.Config(port, 100, 30_000, 2000), new Quiet());
        try (Socket older = raw(port);
                Socket newer = raw(port)) {
            older.getOutputStream().write(hello(CmCodec.VERSION, 0));
            assertThat(readFrame(older.getInputStream())[2]).isEqualTo((byte) CmMessage.TYPE_HELLO);
            newer.getOutputStream().write(hello(CmCodec.VERSION, 0));
            assertThat(readFrame(newer.getInputStream())[2]).isEqualTo((byte) CmMessage.TYPE_HELLO);
            long onNewer = nextPing(newer).sequence();
            newer.close();
            // A's heartbeats go on, on the older connection, after the one seen on the newer.
            long onOlder;
            do {
                onOlder = nextPing(older).sequence();
            } while (onOlder <= onNewer);
            assertThat(onOlder).isGreaterThan(onNewer);
        }
    }
}
