package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.metaroce.control.cm.ConnectionManagerTest.FakeDaemon;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The connection manager with a cluster secret (connection-manager.md section 8): managers with the
 * same secret connect and carry tokens masked; a peer with another secret or none, and a replayed
 * handshake, are refused (connection closed, reason logged, counted); a restart still works.
 */
class ConnectionManagerAuthTest {
    private static final int A = 0x7f000001;
    private static final int B = 0x7f000002;
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] OTHER = "fedcba9876543210fedcba9876543210".getBytes(StandardCharsets.US_ASCII);

    private ConnectionManager a;
    private ConnectionManager b;
    private final FakeDaemon da = new FakeDaemon();
    private final FakeDaemon db = new FakeDaemon();

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    /**
     * The connect/authentication timer of managers whose handshakes should succeed: a failure
     * bound, never waited out when things work, so generous enough for a loaded CI machine (a
     * first handshake also loads the JCA providers).
     */
    private static final int HANDSHAKE_MS = 15_000;

    private static ConnectionManager.Config config(int port, int connectTimeoutMs) {
        return new ConnectionManager.Config(port, 50, 5000, connectTimeoutMs);
    }

    @Test
    void managersWithTheSameSecretConnectAndTokensArriveIntact() throws Exception {
        int port = ConnectionManagerSourceAddressTest.portFreeOnBoth();
        a = ConnectionManager.start(A, config(port, HANDSHAKE_MS), da, SECRET);
        b = ConnectionManager.start(B, config(port, HANDSHAKE_MS), db, SECRET.clone());
        db.exists.put(20, true);
        db.rtr.put(20, ConnectionManagerTest.ep(20, 10, 0xbbbb1234));
        assertThat(a.connect(B, ConnectionManagerTest.ep(10, 20, 0xaaaa5678)).get(5, TimeUnit.SECONDS))
                .isEqualTo(ConnectionManagerTest.ep(20, 10, 0xbbbb1234));
        assertThat(db.learned.get(20)).isEqualTo(ConnectionManagerTest.ep(10, 20, 0xaaaa5678));
        a.disconnect(B, new CmMessage.Disconnect(10, 20, CmMessage.REASON_DESTROYED, 0xaaaa5678));
        assertThat(db.events.poll(5, TimeUnit.SECONDS))
                .isEqualTo("disconnect 20 10 " + CmMessage.REASON_DESTROYED + " aaaa5678");
        assertThat(a.authRefusals() + b.authRefusals()).isZero();
    }

    @Test
    void theSessionMasksEveryTokenDifferentlyAndThePeerUnmasksIt() {
        CmAuth auth = new CmAuth(SECRET);
        byte[] nd = auth.nonce();
        byte[] na = auth.nonce();
        CmAuth.Session dialer = auth.session(true, nd, na);
        CmAuth.Session acceptor = new CmAuth(SECRET.clone()).session(false, nd, na);
        java.util.Set<Integer> onTheWire = new java.util.HashSet<>();
        for (int i = 0; i < 100; i++) {
            CmMessage.Connect c = new CmMessage.Connect(i, ConnectionManagerTest.ep(10, 20, 0x12345678));
            CmMessage.Connect wire = (CmMessage.Connect) dialer.outbound(c);
            assertThat(wire.endpoint().token()).isNotEqualTo(0x12345678);
            onTheWire.add(wire.endpoint().token());
            assertThat(acceptor.inbound(wire)).isEqualTo(c);
            CmMessage.Disconnect d = new CmMessage.Disconnect(20, 10, CmMessage.REASON_DESTROYED, 0x12345678);
            CmMessage.Disconnect back = (CmMessage.Disconnect) acceptor.outbound(d);
            onTheWire.add(back.token());
            assertThat(dialer.inbound(back)).isEqualTo(d);
        }
        assertThat(onTheWire).as("the same token, masked 200 times").hasSizeGreaterThan(195);
        CmMessage.Ping p = new CmMessage.Ping(7);
        assertThat(dialer.outbound(p)).isSameAs(p);
    }

    @Test
    void aPeerWithAnotherSecretIsRefusedAndCounted() throws Exception {
        int port = ConnectionManagerSourceAddressTest.portFreeOnBoth();
        a = ConnectionManager.start(A, config(port, 600), da, SECRET);
        b = ConnectionManager.start(B, config(port, 600), db, OTHER);
        db.exists.put(20, true);
        db.rtr.put(20, ConnectionManagerTest.ep(20, 10, 2));
        assertThatThrownBy(
                        () -> a.connect(B, ConnectionManagerTest.ep(10, 20, 1)).get(5, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("refused: wrong proof");
        assertThat(a.authRefusals()).isPositive();
        assertThat(b.authRefusals()).isPositive();
        assertThat(db.learned).as("B never read A's CONNECT").isEmpty();
        assertThat(a.livePeers()).isZero();
    }

    @Test
    void aPeerWithoutASecretIsRefusedBothWays() throws Exception {
        int port = ConnectionManagerSourceAddressTest.portFreeOnBoth();
        a = ConnectionManager.start(A, config(port, 600), da, SECRET);
        b = ConnectionManager.start(B, config(port, 600), db);
        db.exists.put(20, true);
        db.rtr.put(20, ConnectionManagerTest.ep(20, 10, 2));
        da.exists.put(11, true);
        da.rtr.put(11, ConnectionManagerTest.ep(11, 21, 3));
        assertThatThrownBy(
                        () -> a.connect(B, ConnectionManagerTest.ep(10, 20, 1)).get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("refused");
        assertThatThrownBy(
                        () -> b.connect(A, ConnectionManagerTest.ep(21, 11, 4)).get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("refused");
        assertThat(a.authRefusals()).isPositive();
        assertThat(b.authRefusals()).isPositive();
        assertThat(db.learned).isEmpty();
        assertThat(da.learned).isEmpty();
    }

    /** A fake peer daemon at B on a raw socket: what it sent, and whether A answered its PING. */
    private record Attempt(byte[] sent, boolean ponged) {}

    /**
     * Connects from B to A and sends {@code hello}; on A's challenge sends {@code rest(aNonce)}'s
     * frames, then a PING; reads until A's PONG or the end of the stream.
     */
    private static Attempt attempt(int port, CmMessage.Hello ours, java.util.function.Function<byte[], byte[]> rest)
            throws IOException {
        try (Socket s = new Socket()) {
            s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0));
            s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 5000);
            s.setSoTimeout(5000);
            s.getOutputStream().write(frames(ours));
            DataInputStream in = new DataInputStream(s.getInputStream());
            CmMessage.Hello hello = (CmMessage.Hello) read(in);
            assertThat(hello.capabilities() & CmMessage.CAP_AUTH).isEqualTo(CmMessage.CAP_AUTH);
            CmMessage challenge = read(in);
            if (challenge == null) {
                return new Attempt(frames(ours), false); // refused at our HELLO
            }
            byte[] aNonce = ((CmMessage.AuthChallenge) challenge).nonce();
            byte[] sent = rest.apply(aNonce);
            s.getOutputStream().write(sent);
            s.getOutputStream().write(frames(new CmMessage.Ping(99)));
            for (CmMessage m; (m = read(in)) != null; ) {
                if (m instanceof CmMessage.Pong p && p.sequence() == 99) {
                    return new Attempt(sent, true);
                }
            }
            return new Attempt(sent, false);
        }
    }

    private static CmMessage read(DataInputStream in) throws IOException {
        int len;
        try {
            len = in.readUnsignedShort();
        } catch (java.io.EOFException | java.net.SocketException e) {
            return null;
        }
        byte[] f = new byte[len];
        f[0] = (byte) (len >>> 8);
        f[1] = (byte) len;
        in.readFully(f, 2, len - 2);
        ByteBuf b = Unpooled.wrappedBuffer(f);
        try {
            return CmCodec.decode(b, len);
        } finally {
            b.release();
        }
    }

    private static byte[] frames(CmMessage... ms) {
        ByteBuf b = Unpooled.buffer();
        for (CmMessage m : ms) {
            CmCodec.encode(m, b);
        }
        byte[] bytes = new byte[b.readableBytes()];
        b.readBytes(bytes).release();
        return bytes;
    }

    @Test
    void aReplayedHandshakeIsRefusedAndCannotFakeARestart() throws Exception {
        int port = ConnectionManagerSourceAddressTest.portFreeOnBoth();
        a = ConnectionManager.start(A, config(port, 2000), da, SECRET);
        CmAuth peer = new CmAuth(SECRET);
        byte[] bNonce = peer.nonce();
        CmMessage.Hello hello = new CmMessage.Hello(CmCodec.VERSION, CmMessage.CAP_AUTH, 0xb001, 0, 50, B);
        // A genuine daemon at B: its proof covers A's nonce of this connection.
        Attempt genuine = attempt(
                port,
                hello,
                aNonce -> frames(
                        new CmMessage.AuthChallenge(bNonce),
                        new CmMessage.AuthProof(peer.proof(true, hello, bNonce, aNonce))));
        assertThat(genuine.ponged()).as("A took the genuine handshake").isTrue();
        assertThat(a.authRefusals()).isZero();

        // The same bytes again: A's nonce is new, the proof does not cover it.
        Attempt replay = attempt(port, hello, aNonce -> genuine.sent());
        assertThat(replay.ponged()).as("A answered a replayed handshake").isFalse();
        assertThat(a.authRefusals()).isEqualTo(1);

        // A new boot id with the recorded proof: no restart is faked.
        byte[] recordedProof = java.util.Arrays.copyOfRange(
                genuine.sent(), genuine.sent().length - CmMessage.AuthProof.MAC_BYTES, genuine.sent().length);
        CmMessage.Hello restarted = new CmMessage.Hello(CmCodec.VERSION, CmMessage.CAP_AUTH, 0xb002, 0, 50, B);
        Attempt fake = attempt(
                port,
                restarted,
                aNonce -> frames(new CmMessage.AuthChallenge(bNonce), new CmMessage.AuthProof(recordedProof)));
        assertThat(fake.ponged()).isFalse();
        assertThat(a.authRefusals()).isEqualTo(2);
        assertThat(da.events.poll()).as("no peer loss, no restart").isNull();

        // A message before the proof, and a HELLO without the capability: refused too.
        assertThat(attempt(port, hello, aNonce -> frames(new CmMessage.AuthChallenge(bNonce), new CmMessage.Ping(1)))
                        .ponged())
                .isFalse();
        assertThat(attempt(port, new CmMessage.Hello(CmCodec.VERSION, 0, 0xb001, 0, 50, B), aNonce -> new byte[0])
                        .ponged())
                .isFalse();
        assertThat(a.authRefusals()).isEqualTo(4);
        assertThat(da.events.poll()).isNull();
    }

    @Test
    void aRestartWithTheSecretIsSeenAndServes() throws Exception {
        int port = ConnectionManagerSourceAddressTest.portFreeOnBoth();
        a = ConnectionManager.start(A, config(port, HANDSHAKE_MS), da, SECRET);
        b = ConnectionManager.start(B, config(port, HANDSHAKE_MS), db, SECRET);
        db.exists.put(20, true);
        db.rtr.put(20, ConnectionManagerTest.ep(20, 10, 2));
        a.connect(B, ConnectionManagerTest.ep(10, 20, 1)).get(5, TimeUnit.SECONDS);
        b.close();
        for (int i = 0; i < 500 && a.peerConnected(B); i++) {
            Thread.sleep(10);
        }
        assertThat(a.peerConnected(B))
                .as("A saw the old instance's connection close")
                .isFalse();
        FakeDaemon db2 = new FakeDaemon();
        db2.exists.put(21, true);
        db2.rtr.put(21, ConnectionManagerTest.ep(21, 11, 3));
        b = ConnectionManager.start(B, config(port, HANDSHAKE_MS), db2, SECRET);
        assertThat(a.connect(B, ConnectionManagerTest.ep(11, 21, 4)).get(5, TimeUnit.SECONDS))
                .isEqualTo(ConnectionManagerTest.ep(21, 11, 3));
        assertThat(da.events.poll(5, TimeUnit.SECONDS)).startsWith("lost 7f000002 restarted");
        assertThat(a.authRefusals() + b.authRefusals()).isZero();
    }

    @Test
    void aSecretFileMustBeRootsAndPrivate(@TempDir Path dir) throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to give a file to another owner");
        Path f = dir.resolve("cm.secret");
        Files.write(f, SECRET);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        assertThat(CmAuth.loadSecret(f)).isEqualTo(SECRET);

        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r-----"));
        assertThatThrownBy(() -> CmAuth.loadSecret(f))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("accessible to group or others")
                .hasMessageContaining("chmod 600");
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));

        Files.setAttribute(f, "unix:uid", 65534);
        assertThatThrownBy(() -> CmAuth.loadSecret(f))
                .hasMessageContaining("owned by uid 65534")
                .hasMessageContaining("must be owned by root");
        Files.setAttribute(f, "unix:uid", 0);

        Files.write(f, "short".getBytes(StandardCharsets.US_ASCII));
        assertThatThrownBy(() -> CmAuth.loadSecret(f)).hasMessageContaining("holds 5 bytes");
        assertThatThrownBy(() -> CmAuth.loadSecret(dir)).hasMessageContaining("not a regular file");
        assertThatThrownBy(() -> CmAuth.loadSecret(dir.resolve("absent"))).hasMessageContaining("cannot read");
    }
}
