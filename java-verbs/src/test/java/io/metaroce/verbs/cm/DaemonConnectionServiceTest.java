package io.metaroce.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.verbs.Gid;
import java.io.IOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The client side of the daemon's service against a scripted stand-in daemon on a Unix socket:
 * the frames and struct layouts it sends, and how it turns each answer into a result or a clear
 * exception. (Two real daemons and QPs: integration-tests' JverbsCmServiceIT.)
 */
class DaemonConnectionServiceTest {
    record Request(int op, int seq, ByteBuffer payload) {}

    record Answer(int status, ByteBuffer payload) {}

    private Path dir;
    private Path sock;
    private ServerSocketChannel server;
    private final List<Request> requests = new CopyOnWriteArrayList<>();
    private volatile BiFunction<Integer, ByteBuffer, Answer> script = (op, p) -> new Answer(22, empty());

    static ByteBuffer empty() {
        return ByteBuffer.allocate(0);
    }

    static ByteBuffer le(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    }

    @BeforeEach
    void start() throws IOException {
        dir = Files.createTempDirectory("jverbs-cm");
        sock = dir.resolve("nicd.sock");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(sock));
        Thread.ofPlatform().daemon().start(() -> {
            try {
                while (true) {
                    SocketChannel c = server.accept();
                    Thread.ofPlatform().daemon().start(() -> serve(c));
                }
            } catch (IOException e) {
                // closed
            }
        });
    }

    private void serve(SocketChannel c) {
        try (c) {
            while (true) {
                ByteBuffer h = read(c, 16);
                int len = h.getInt(0);
                int op = h.getShort(4);
                int seq = h.getInt(8);
                ByteBuffer p = read(c, len - 16);
                requests.add(new Request(op, seq, p));
                Answer a = op == DaemonControl.OP_HELLO ? hello() : script.apply(op, p);
                ByteBuffer out = le(16 + a.payload().remaining());
                out.putInt(16 + a.payload().remaining())
                        .putShort((short) op)
                        .putShort((short) a.status())
                        .putInt(seq)
                        .putShort((short) 0)
                        .putShort((short) 0)
                        .put(a.payload().duplicate())
                        .flip();
                while (out.hasRemaining()) {
                    c.write(out);
                }
            }
        } catch (IOException e) {
            // the client went away
        }
    }

    private static Answer hello() {
        ByteBuffer r = le(176).putInt(0, 2);
        r.put(8 + 10, (byte) 0xff)
                .put(8 + 11, (byte) 0xff)
                .put(8 + 12, (byte) 198)
                .put(8 + 13, (byte) 18)
                .put(8 + 15, (byte) 2);
        return new Answer(0, r);
    }

    private static ByteBuffer read(SocketChannel c, int n) throws IOException {
        ByteBuffer b = le(n);
        while (b.hasRemaining()) {
            if (c.read(b) < 0) {
                throw new IOException("eof");
            }
        }
        return b.flip();
    }

    @AfterEach
    void stop() throws IOException {
        server.close();
        Files.deleteIfExists(sock);
        Files.deleteIfExists(dir);
    }

    private DaemonConnectionService service() {
        return new DaemonConnectionService(sock, 1500, 8);
    }

    private static QpEndpoint local() {
        return new QpEndpoint(0, 0x123, 0x456, Gid.ZERO);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void connectSendsTheEndpointAndPrivateDataAndReturnsTheAcceptorsAnswer() throws Exception {
        script = (op, p) -> {
            ByteBuffer r = le(232).putInt(0, 0)
                    .putInt(8, 0x789)
                    .putInt(12, 0xabc)
                    .putInt(36, 5)
                    .put(40, ascii("howdy"));
            return new Answer(0, r); // GID left zero: the client maps the peer's address
        };
        DaemonConnectionService.Answer a = service()
                .request(new InetSocketAddress(InetAddress.getByName("198.18.0.2"), 18515), local(), ascii("hi there"));
        assertThat(a.remote().qpn()).isEqualTo(0x789);
        assertThat(a.remote().psn()).isEqualTo(0xabc);
        assertThat(a.remote().gid().toString()).contains("198.18.0.2");
        assertThat(new String(a.privateData(), StandardCharsets.US_ASCII)).isEqualTo("howdy");
        assertThat(requests).hasSize(2);
        assertThat(requests.get(0).op()).isEqualTo(DaemonControl.OP_HELLO);
        Request c = requests.get(1);
        assertThat(c.op()).isEqualTo(DaemonControl.OP_CM_CONNECT);
        ByteBuffer p = c.payload();
        assertThat(p.remaining()).isEqualTo(248);
        assertThat(new byte[] {p.get(0), p.get(1), p.get(2), p.get(3)}).isEqualTo(new byte[] {(byte) 198, 18, 0, 2});
        assertThat(p.getInt(4)).isEqualTo(18515);
        assertThat(p.getInt(8)).isEqualTo(0x123);
        assertThat(p.getInt(12)).isEqualTo(0x456);
        assertThat(p.getInt(32)).isEqualTo(1500);
        assertThat(p.getInt(36)).isEqualTo(8);
        byte[] pd = new byte[8];
        p.get(40, pd);
        assertThat(new String(pd, StandardCharsets.US_ASCII)).isEqualTo("hi there");
    }

    @Test
    void eachFailureIsAClearException() throws Exception {
        InetSocketAddress peer = new InetSocketAddress(InetAddress.getByName("198.18.0.2"), 7);
        script = (op, p) -> new Answer(0, le(232).putInt(0, 1).putInt(36, 4).put(40, ascii("nope")));
        assertThatThrownBy(() -> service().request(peer, local(), new byte[0]))
                .isInstanceOf(ConnectionRejectedException.class)
                .hasMessageContaining("rejected by its listener")
                .satisfies(e -> assertThat(
                                new String(((ConnectionRejectedException) e).privateData(), StandardCharsets.US_ASCII))
                        .isEqualTo("nope"));
        script = (op, p) -> new Answer(111, empty());
        assertThatThrownBy(() -> service().request(peer, local(), new byte[0]))
                .isInstanceOf(ConnectException.class)
                .isNotInstanceOf(ConnectionRejectedException.class)
                .hasMessage("connection refused: nobody listens on service 7 at 198.18.0.2 (ECONNREFUSED)");
        script = (op, p) -> new Answer(110, empty());
        assertThatThrownBy(() -> service().request(peer, local(), new byte[0]))
                .isInstanceOf(SocketTimeoutException.class)
                .hasMessageContaining("within 1500 ms (ETIMEDOUT)");
        script = (op, p) -> new Answer(104, empty());
        assertThatThrownBy(() -> service().request(peer, local(), new byte[0])).hasMessageContaining("ECONNRESET");
        script = (op, p) -> new Answer(95, empty());
        assertThatThrownBy(() -> service().request(peer, local(), new byte[0])).hasMessageContaining("--cm-port 0");
        assertThatThrownBy(() -> service().request(peer, local(), new byte[193]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("193");
    }

    @Test
    void listenNextAndRejectSpeakTheOps() throws Exception {
        script = (op, p) -> switch (op) {
            case DaemonControl.OP_CM_LISTEN -> new Answer(p.getInt(0) == 5 ? 98 : 0, empty());
            case DaemonControl.OP_CM_GET_REQUEST -> {
                ByteBuffer r = le(232).putInt(0, 42)
                        .putInt(4, 6)
                        .putInt(8, 0x11)
                        .putInt(12, 0x22)
                        .putInt(36, 3)
                        .put(40, ascii("abc"));
                r.put(32, (byte) 198).put(33, (byte) 18).put(34, (byte) 0).put(35, (byte) 1);
                yield new Answer(0, r);
            }
            case DaemonControl.OP_CM_REJECT -> new Answer(0, empty());
            default -> new Answer(22, empty());
        };
        assertThatThrownBy(() -> service().listen(5))
                .isInstanceOf(BindException.class)
                .hasMessageContaining("service 5 already has a listener");
        try (ConnectionService.Listener l = service().listen(6)) {
            ByteBuffer listen = requests.get(requests.size() - 1).payload();
            assertThat(listen.getInt(0)).isEqualTo(6);
            assertThat(listen.getInt(4)).isEqualTo(8); // backlog
            ConnectionService.ConnectionRequest r = l.next();
            assertThat(r.remote().qpn()).isEqualTo(0x11);
            assertThat(r.remote().psn()).isEqualTo(0x22);
            assertThat(r.peer().getAddress().getHostAddress()).isEqualTo("198.18.0.1");
            assertThat(r.remote().gid().toString()).contains("198.18.0.1");
            assertThat(new String(r.privateData(), StandardCharsets.US_ASCII)).isEqualTo("abc");
            r.reject(ascii("later"));
            Request rej = requests.get(requests.size() - 1);
            assertThat(rej.op()).isEqualTo(DaemonControl.OP_CM_REJECT);
            assertThat(rej.payload().remaining()).isEqualTo(200);
            assertThat(rej.payload().getInt(0)).isEqualTo(42);
            assertThat(rej.payload().getInt(4)).isEqualTo(5);
            assertThatThrownBy(() -> r.reject(new byte[0]))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("already answered");
        }
    }

    @Test
    void nextAndAcceptWithATimeoutLongPollUntilTheDeadlineThenThrow() throws Exception {
        script = (op, p) -> switch (op) {
            case DaemonControl.OP_CM_LISTEN -> new Answer(0, empty());
            case DaemonControl.OP_CM_GET_REQUEST -> new Answer(11, empty()); // EAGAIN: nothing came
            default -> new Answer(22, empty());
        };
        try (ConnectionService.Listener l = service().listen(7)) {
            assertThatThrownBy(() -> l.next(java.time.Duration.ofMillis(40)))
                    .isInstanceOf(SocketTimeoutException.class)
                    .hasMessage("no connection request for service 7 within PT0.04S");
            List<Integer> polls = requests.stream()
                    .filter(r -> r.op() == DaemonControl.OP_CM_GET_REQUEST)
                    .map(r -> r.payload().getInt(0))
                    .toList();
            assertThat(polls).isNotEmpty().allSatisfy(ms -> assertThat(ms).isBetween(0, 40));
            assertThatThrownBy(() -> l.accept(null, ConnectOptions.defaults(0), java.time.Duration.ofMillis(1)))
                    .isInstanceOf(SocketTimeoutException.class);
        }
    }

    @Test
    void noDaemonIsNamed() {
        DaemonConnectionService s = new DaemonConnectionService(dir.resolve("none.sock"), 0, 0);
        assertThatThrownBy(() -> s.listen(9))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("no MetaRoCE daemon answers on " + dir.resolve("none.sock"));
    }
}
