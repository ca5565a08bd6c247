package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.metaroce.abi.HelloRespDescriptor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** The server on a real Unix socket, with a client that speaks like the C provider (FFM recvmsg). */
class LocalControlServerTest {

    private static final byte[] MEMFD_TEXT = "ring memory says hi".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path tmp;

    private final ListAppender<ILoggingEvent> log = new ListAppender<>();
    private final Logger sessionLogger = (Logger) LoggerFactory.getLogger(ChannelSession.class);

    @BeforeEach
    void captureLog() {
        log.start();
        sessionLogger.addAppender(log);
    }

    @AfterEach
    void releaseLog() {
        sessionLogger.detachAppender(log);
    }

    /** Answers HELLO with a payload, an eventfd holding 42 and a memfd with text, then closes its own fds. */
    static final class FdHandler extends RecordingHandler {
        @Override
        public void onRequest(LocalSession session, int op, int seq, ByteBuffer payload) {
            super.onRequest(session, op, seq, payload);
            try {
                if (op == ControlProtocol.OP_HELLO) {
                    ByteBuffer resp =
                            ByteBuffer.allocate(HelloRespDescriptor.SIZE).order(ByteOrder.LITTLE_ENDIAN);
                    resp.putInt(HelloRespDescriptor.OFF_ABI_VERSION, ControlProtocol.ABI_VERSION);
                    resp.putInt(HelloRespDescriptor.OFF_DAEMON_PID, (int)
                            ProcessHandle.current().pid());
                    resp.put(HelloRespDescriptor.OFF_DEV_NAME, "mrce0".getBytes(StandardCharsets.US_ASCII));
                    int efd = UnixClient.eventfd(42);
                    int mfd = UnixClient.memfd("ring", MEMFD_TEXT);
                    session.respond(op, seq, 0, resp, efd, mfd);
                    // respond() duplicated them: closing ours at once must not matter.
                    UnixClient.closeFd(efd);
                    UnixClient.closeFd(mfd);
                } else {
                    session.respond(op, seq, 0, ByteBuffer.allocate(0));
                }
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    @Test
    void helloGetsItsPayloadAndTwoWorkingFds() throws Exception {
        FdHandler handler = new FdHandler();
        Path sock = tmp.resolve("run/nicd.sock");
        try (LocalControlServer server = LocalControlServer.bind(sock, handler);
                UnixClient client = UnixClient.connect(sock)) {
            client.send(Frames.hello(77));
            UnixClient.Frame resp = client.readFrame();
            assertThat(resp.op()).isEqualTo(ControlProtocol.OP_HELLO);
            assertThat(resp.seq()).isEqualTo(77);
            assertThat(resp.status()).isZero();
            assertThat(resp.len()).isEqualTo(16 + HelloRespDescriptor.SIZE);
            assertThat(resp.payload().getInt(HelloRespDescriptor.OFF_ABI_VERSION))
                    .isEqualTo(ControlProtocol.ABI_VERSION);
            assertThat(resp.payload().getInt(HelloRespDescriptor.OFF_DAEMON_PID))
                    .isEqualTo((int) ProcessHandle.current().pid());
            assertThat(resp.nfds()).isEqualTo(2);
            int efd = resp.fds()[0];
            int mfd = resp.fds()[1];
            try {
                assertThat(UnixClient.readEventfd(efd)).isEqualTo(42);
                assertThat(UnixClient.pread(mfd, 64)).isEqualTo(MEMFD_TEXT);
            } finally {
                UnixClient.closeFd(efd);
                UnixClient.closeFd(mfd);
            }

            RecordingHandler.Request req = handler.requests.getFirst();
            assertThat(req.payload()).isEqualTo(new byte[] {(byte) ControlProtocol.ABI_VERSION, 0, 0, 0, 0, 0, 0, 0});
            // Peer credentials are this process (the client lives in the test JVM).
            assertThat(req.session().pid()).isEqualTo(ProcessHandle.current().pid());
            assertThat(req.session().uid()).isEqualTo((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
            assertThat(req.session().gid()).isEqualTo((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:gid"));

            // Permissions: the socket for everyone, the directory like /tmp.
            assertThat(Files.getPosixFilePermissions(sock))
                    .contains(PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ);
            assertThat((Integer) Files.getAttribute(sock.getParent(), "unix:mode") & 07777)
                    .isEqualTo(01777);
        }
        assertThat(sock).doesNotExist();
        awaitTrue(() -> handler.closed.size() == 1);
    }

    @Test
    void garbageAndOversizedFramesCloseOnlyTheirConnection() throws Exception {
        FdHandler handler = new FdHandler();
        Path sock = tmp.resolve("nicd.sock");
        try (LocalControlServer server = LocalControlServer.bind(sock, handler);
                UnixClient good = UnixClient.connect(sock);
                UnixClient garbage = UnixClient.connect(sock);
                UnixClient oversized = UnixClient.connect(sock)) {
            good.send(Frames.request(ControlProtocol.OP_ALLOC_PD, 1));
            assertThat(good.readFrame().seq()).isEqualTo(1);

            garbage.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            assertThat(garbage.readsEof()).isTrue();
            oversized.send(Frames.frame(1 << 20, ControlProtocol.OP_REG_MR, 0, 2, 0, new byte[32]));
            assertThat(oversized.readsEof()).isTrue();

            good.send(Frames.request(ControlProtocol.OP_DEREG_MR, 3));
            UnixClient.Frame after = good.readFrame();
            assertThat(after.op()).isEqualTo(ControlProtocol.OP_DEREG_MR);
            assertThat(after.seq()).isEqualTo(3);
            awaitTrue(() -> handler.closed.size() == 2);
            assertThat(handler.requests)
                    .extracting(RecordingHandler.Request::seq)
                    .containsExactly(1, 3);
        }
        awaitTrue(() -> handler.closed.size() == 3);
        assertThat(handler.closed).extracting(LocalSession::id).doesNotHaveDuplicates();
        List<String> lines =
                log.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        String pid = "pid " + ProcessHandle.current().pid();
        assertThat(lines)
                .filteredOn(l -> l.contains("protocol error"))
                .hasSize(2)
                .allMatch(l -> l.contains(pid));
        assertThat(lines).anyMatch(l -> l.contains("Adjusted frame length") || l.contains("unknown op"));
        assertThat(lines).anyMatch(l -> l.contains("exceeds 4096") || l.contains("frame length"));
    }

    @Test
    void responsesFromManyThreadsKeepFramesAndFdsTogether() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        RecordingHandler handler = new RecordingHandler() {
            @Override
            public void onRequest(LocalSession session, int op, int seq, ByteBuffer payload) {
                pool.execute(() -> {
                    try {
                        int fd = UnixClient.memfd("q" + seq, ("seq " + seq).getBytes(StandardCharsets.US_ASCII));
                        ByteBuffer resp = ByteBuffer.allocate(8)
                                .order(ByteOrder.LITTLE_ENDIAN)
                                .putInt(seq)
                                .putInt(~seq)
                                .flip();
                        session.respond(ControlProtocol.OP_CREATE_COMP_CHANNEL, seq, 0, resp, fd);
                        UnixClient.closeFd(fd);
                    } catch (IOException e) {
                        throw new IllegalStateException(e);
                    }
                });
            }
        };
        Path sock = tmp.resolve("nicd.sock");
        int n = 500;
        try (LocalControlServer server = LocalControlServer.bind(sock, handler);
                UnixClient client = UnixClient.connect(sock)) {
            for (int seq = 0; seq < n; seq++) {
                client.send(Frames.request(ControlProtocol.OP_CREATE_COMP_CHANNEL, seq, new byte[0]));
            }
            Set<Integer> seen = new HashSet<>();
            for (int i = 0; i < n; i++) {
                UnixClient.Frame f = client.readFrame();
                assertThat(f.nfds()).isEqualTo(1);
                assertThat(f.payload().getInt(0)).isEqualTo(f.seq());
                assertThat(f.payload().getInt(4)).isEqualTo(~f.seq());
                assertThat(new String(UnixClient.pread(f.fds()[0], 32), StandardCharsets.US_ASCII))
                        .isEqualTo("seq " + f.seq());
                UnixClient.closeFd(f.fds()[0]);
                assertThat(seen.add(f.seq())).isTrue();
            }
            assertThat(seen).hasSize(n);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aClientThatReadsLateStillGetsEveryFrameAndFd() throws Exception {
        // 400 responses with an fd each are ~800 socket messages: far more than a Unix socket's send
        // buffer holds (~140 frame+fd pairs at the default 208 KiB), so the daemon must wait for the
        // client to drain it instead of dropping the connection. Whether a frame or an fd is the
        // message that meets the full buffer depends on what came before, so 0, 1 and 2 fd-less
        // responses go first on three connections: one of them makes an fd meet it (Netty 4.2's own
        // fd send gives up there).
        int n = 400;
        java.util.concurrent.atomic.AtomicInteger answered = new java.util.concurrent.atomic.AtomicInteger();
        RecordingHandler handler = new RecordingHandler() {
            @Override
            public void onRequest(LocalSession session, int op, int seq, ByteBuffer payload) {
                try {
                    ByteBuffer resp = ByteBuffer.allocate(8)
                            .order(ByteOrder.LITTLE_ENDIAN)
                            .putInt(seq)
                            .putInt(~seq)
                            .flip();
                    if (op == ControlProtocol.OP_ALLOC_PD) {
                        session.respond(op, seq, 0, resp);
                    } else {
                        int fd = UnixClient.memfd("late" + seq, ("seq " + seq).getBytes(StandardCharsets.US_ASCII));
                        session.respond(op, seq, 0, resp, fd);
                        UnixClient.closeFd(fd);
                    }
                    answered.incrementAndGet();
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }
        };
        Path sock = tmp.resolve("nicd.sock");
        try (LocalControlServer server = LocalControlServer.bind(sock, handler)) {
            for (int offset = 0; offset < 3; offset++) {
                answered.set(0);
                try (UnixClient client = UnixClient.connect(sock)) {
                    for (int seq = 0; seq < offset; seq++) {
                        client.send(Frames.request(ControlProtocol.OP_ALLOC_PD, seq));
                    }
                    for (int seq = offset; seq < offset + n; seq++) {
                        client.send(Frames.request(ControlProtocol.OP_CREATE_COMP_CHANNEL, seq, new byte[0]));
                    }
                    int total = offset + n;
                    awaitTrue(() -> answered.get() == total); // every response written or queued before a read
                    for (int seq = 0; seq < total; seq++) {
                        UnixClient.Frame f = client.readFrame();
                        assertThat(f).as("offset %d, frame %d", offset, seq).isNotNull();
                        assertThat(f.seq()).isEqualTo(seq);
                        assertThat(f.payload().getInt(4)).isEqualTo(~seq);
                        assertThat(f.nfds()).isEqualTo(seq < offset ? 0 : 1);
                        if (seq >= offset) {
                            assertThat(new String(UnixClient.pread(f.fds()[0], 32), StandardCharsets.US_ASCII))
                                    .isEqualTo("seq " + seq);
                            UnixClient.closeFd(f.fds()[0]);
                        }
                    }
                }
            }
            awaitTrue(() -> handler.closed.size() == 3);
        }
        assertThat(log.list).extracting(ILoggingEvent::getFormattedMessage).noneMatch(l -> l.contains("closing"));
    }

    @Test
    void replacesAStaleSocketButNotALiveOne() throws Exception {
        Path sock = tmp.resolve("nicd.sock");
        RecordingHandler handler = new RecordingHandler();
        LocalControlServer first = LocalControlServer.bind(sock, handler);
        try {
            assertThatThrownBy(() -> LocalControlServer.bind(sock, handler))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("already listens");
        } finally {
            first.close();
        }
        // A socket file left behind by a killed daemon: bound, never listened on, nobody behind it.
        try (var stale = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            stale.bind(java.net.UnixDomainSocketAddress.of(sock));
        }
        assertThat(sock).exists();
        try (LocalControlServer second = LocalControlServer.bind(sock, handler);
                UnixClient client = UnixClient.connect(sock)) {
            client.send(Frames.request(ControlProtocol.OP_ALLOC_PD, 9));
            awaitTrue(() -> handler.requests.size() == 1);
        }
        Files.writeString(sock, "not a socket");
        assertThatThrownBy(() -> LocalControlServer.bind(sock, handler))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not a socket");
    }

    @Test
    void closingTheServerEndsEverySessionOnce() throws Exception {
        RecordingHandler handler = new RecordingHandler();
        Path sock = tmp.resolve("nicd.sock");
        LocalControlServer server = LocalControlServer.bind(sock, handler);
        try (UnixClient a = UnixClient.connect(sock);
                UnixClient b = UnixClient.connect(sock)) {
            a.send(Frames.request(ControlProtocol.OP_ALLOC_PD, 1));
            b.send(Frames.request(ControlProtocol.OP_ALLOC_PD, 2));
            awaitTrue(() -> handler.requests.size() == 2);
            server.close();
            assertThat(a.readsEof()).isTrue();
            assertThat(b.readsEof()).isTrue();
        }
        assertThat(handler.closed).hasSize(2).extracting(LocalSession::id).doesNotHaveDuplicates();
        assertThat(sock).doesNotExist();
    }

    private static void awaitTrue(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("condition not met in 5 s").isLessThan(deadline);
            Thread.onSpinWait();
            Thread.yield();
        }
    }
}
