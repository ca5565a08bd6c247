package io.metaroce.it.jverbs.apps;

import static io.metaroce.it.jverbs.apps.AppOutput.say;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.ConnectionRejectedException;
import io.metaroce.verbs.cm.ConnectionService;
import io.metaroce.verbs.cm.DaemonConnectionService;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32;

/**
 * Connection set-up through the daemons' rdma_cm-style service ({@link DaemonConnectionService})
 * between two hosts, for JverbsCmServiceIT. Modes:
 *
 * <pre>
 *   server SERVICE N              listen; check the request's private data; accept with our own;
 *                                 receive N messages (content checked), send one reply
 *   client HOST SERVICE N         connect with private data; check the acceptor's; send N messages;
 *                                 check the reply
 *   reject-server SERVICE         listen; reject the first request with private data
 *   reject-client HOST SERVICE    connect; expect ConnectionRejectedException with that data
 *   refused-client HOST SERVICE   connect where nobody listens; expect ConnectException (not a timeout)
 *   take-server SERVICE           listen; take one request and never answer it (to be killed)
 *   reset-client HOST SERVICE     connect; expect the reset that follows the listener's death
 * </pre>
 *
 * Prints one result line ({@code OK ...}, {@code REJECTED ...}, {@code REFUSED ...}, {@code RESET ...})
 * or exits 1 with the reason.
 */
public final class CmServiceApp {
    static final String CLIENT_HELLO = "hello from the client, CmServiceApp #1";
    static final String SERVER_WELCOME = "welcome from the server: private data both ways";
    static final String REJECT_REASON = "go away: this server is full (code 503)";
    static final int WINDOW = 16;
    static final int MAX = 4096;

    private CmServiceApp() {}

    public static int size(int i) {
        return 1 + (int) ((i * 7919L) % MAX);
    }

    public static byte data(int i, int j) {
        return (byte) (i * 131 + j * 7 + 3);
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    static String text(byte[] b) {
        return new String(b, StandardCharsets.US_ASCII);
    }

    static void fail(String why) {
        System.out.println("FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        // A long connect timeout: "refused" must come from the peer daemon, never from a timeout.
        DaemonConnectionService svc = new DaemonConnectionService(socket(), 30_000, 0);
        switch (mode) {
            case "server", "client" -> transfer(svc, args);
            case "reject-server" -> {
                try (ConnectionService.Listener l = svc.listen(Integer.parseInt(args[1]))) {
                    say("LISTENING");
                    ConnectionService.ConnectionRequest r = l.next();
                    say("REQUEST private=" + text(r.privateData()));
                    r.reject(ascii(REJECT_REASON));
                    say("OK rejected");
                }
            }
            case "take-server" -> {
                ConnectionService.Listener l = svc.listen(Integer.parseInt(args[1]));
                say("LISTENING");
                ConnectionService.ConnectionRequest r = l.next();
                say("TOOK request from " + r.peer().getAddress().getHostAddress() + " private="
                        + text(r.privateData()));
                Thread.sleep(600_000); // killed by the test
            }
            case "reject-client", "refused-client", "reset-client" -> failures(svc, mode, args);
            default -> fail("unknown mode " + mode);
        }
    }

    private static Path socket() throws Exception {
        String env = System.getenv("METAROCE_SOCK");
        if (env != null && !env.isEmpty()) {
            return Path.of(env);
        }
        long ino = (Long) Files.getAttribute(Path.of("/proc/self/ns/net"), "unix:ino");
        return Path.of("/tmp/metaroce/nicd-" + ino + ".sock");
    }

    /** The expected failures: each needs a QP in INIT to ask with. */
    private static void failures(DaemonConnectionService svc, String mode, String[] args) throws Exception {
        InetSocketAddress peer = new InetSocketAddress(InetAddress.getByName(args[1]), Integer.parseInt(args[2]));
        try (Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain();
                CompletionQueue cq = ctx.createCompletionQueue(4);
                QueuePair qp =
                        pd.createQueuePair(QueuePair.rc(cq, cq).maxSendWr(1).maxRecvWr(1))) {
            qp.toInit(1, 0);
            ConnectOptions opts = ConnectOptions.defaults(0).withPrivateData(ascii(CLIENT_HELLO));
            long t0 = System.nanoTime();
            try {
                svc.connect(peer, qp, opts);
                fail("connected, expected a failure (" + mode + ")");
            } catch (ConnectionRejectedException e) {
                require(mode.equals("reject-client"), "rejected in mode " + mode + ": " + e);
                say("REJECTED private=" + text(e.privateData()) + " message=" + e.getMessage());
            } catch (ConnectException e) {
                require(mode.equals("refused-client"), "refused in mode " + mode + ": " + e);
                say("REFUSED ms=" + (System.nanoTime() - t0) / 1_000_000 + " message=" + e.getMessage());
            } catch (SocketException e) {
                require(mode.equals("reset-client"), "reset in mode " + mode + ": " + e);
                say("RESET message=" + e.getMessage());
            }
        }
    }

    private static void require(boolean ok, String why) {
        if (!ok) {
            fail(why);
        }
    }

    private static void transfer(DaemonConnectionService svc, String[] args) throws Exception {
        boolean server = args[0].equals("server");
        int k = server ? 1 : 2;
        int service = Integer.parseInt(args[k]);
        int n = Integer.parseInt(args[k + 1]);
        int slot = MAX + 64;
        try (Arena arena = Arena.ofShared();
                Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            MemorySegment buf = arena.allocate((long) slot * (WINDOW + 1), 4096);
            try (MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                    CompletionQueue cq = ctx.createCompletionQueue(2 * WINDOW + 4);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq)
                            .maxSendWr(WINDOW)
                            .maxRecvWr(WINDOW)
                            .maxSendSge(1)
                            .maxRecvSge(1));
                    SendWorkRequest send = new SendWorkRequest(1).signaled(true).send();
                    RecvWorkRequest recv = new RecvWorkRequest(1);
                    WorkCompletions wcs = new WorkCompletions(8)) {
                qp.toInit(1, 0);
                CRC32 crc = new CRC32();
                long bytes = 0;
                if (server) {
                    for (int s = 0; s < WINDOW; s++) {
                        qp.postRecv(recv.wrId(s).sge(mr, (long) s * slot, slot));
                    }
                    ConnectionService.Connection c;
                    try (ConnectionService.Listener l = svc.listen(service)) {
                        say("LISTENING");
                        ConnectionService.ConnectionRequest r = l.next();
                        say("REQUEST private=" + text(r.privateData()) + " qpn="
                                + r.remote().qpn() + " peer="
                                + r.peer().getAddress().getHostAddress());
                        require(
                                text(r.privateData()).equals(CLIENT_HELLO),
                                "client private data " + text(r.privateData()));
                        c = r.accept(qp, ConnectOptions.defaults(0).withPrivateData(ascii(SERVER_WELCOME)));
                    }
                    require(text(c.privateData()).equals(CLIENT_HELLO), "connection's private data");
                    byte[] msg = new byte[MAX];
                    for (int i = 0; i < n; ) {
                        int got = cq.poll(wcs);
                        for (int w = 0; w < got; w++, i++) {
                            WorkCompletion wc = wcs.get(w).check();
                            int s = (int) wc.wrId();
                            int len = size(i);
                            require(
                                    wc.opcode() == WorkCompletion.OP_RECV && wc.byteLength() == len,
                                    "message " + i + ": opcode " + wc.opcode() + ", " + wc.byteLength()
                                            + " bytes, want " + len);
                            long base = (long) s * slot;
                            for (int j = 0; j < len; j++) {
                                msg[j] = buf.get(ValueLayout.JAVA_BYTE, base + j);
                                require(msg[j] == data(i, j), "message " + i + " byte " + j);
                            }
                            crc.update(msg, 0, len);
                            bytes += len;
                            qp.postRecv(recv.wrId(s).sge(mr, base, slot));
                        }
                    }
                    // the reply: 64 bytes the client checks
                    long base = (long) WINDOW * slot;
                    for (int j = 0; j < 64; j++) {
                        buf.set(ValueLayout.JAVA_BYTE, base + j, data(n, j));
                    }
                    qp.postSend(send.wrId(1).sge(mr, base, 64));
                    require(awaitOne(cq, wcs).opcode() == WorkCompletion.OP_SEND, "the reply's completion");
                } else {
                    long rbase = (long) WINDOW * slot;
                    qp.postRecv(recv.wrId(99).sge(mr, rbase, slot));
                    InetSocketAddress peer = new InetSocketAddress(InetAddress.getByName(args[1]), service);
                    ConnectionService.Connection c =
                            svc.connect(peer, qp, ConnectOptions.defaults(0).withPrivateData(ascii(CLIENT_HELLO)));
                    say("ACCEPTED private=" + text(c.privateData()) + " remote qpn="
                            + c.remote().qpn());
                    require(
                            text(c.privateData()).equals(SERVER_WELCOME),
                            "server private data " + text(c.privateData()));
                    byte[] msg = new byte[MAX];
                    int replyLen = -1; // the reply may complete before the last send's ACK
                    for (int i = 0; i < n; i++) {
                        int len = size(i);
                        long base = (long) (i % WINDOW) * slot;
                        for (int j = 0; j < len; j++) {
                            msg[j] = data(i, j);
                            buf.set(ValueLayout.JAVA_BYTE, base + j, msg[j]);
                        }
                        crc.update(msg, 0, len);
                        bytes += len;
                        qp.postSend(send.wrId(i).sge(mr, base, len));
                        replyLen = awaitSend(cq, wcs, replyLen);
                    }
                    while (replyLen < 0) {
                        WorkCompletion wc = awaitOne(cq, wcs);
                        require(wc.opcode() == WorkCompletion.OP_RECV, "completion opcode " + wc.opcode());
                        replyLen = wc.byteLength();
                    }
                    require(replyLen == 64, "reply of " + replyLen + " bytes");
                    for (int j = 0; j < 64; j++) {
                        require(buf.get(ValueLayout.JAVA_BYTE, rbase + j) == data(n, j), "reply byte " + j);
                    }
                }
                say(String.format("OK messages=%d bytes=%d crc=0x%08x", n, bytes, crc.getValue()));
            }
        }
    }

    /** Waits for the send's completion; a receive completing meanwhile is the reply: returns its length. */
    private static int awaitSend(CompletionQueue cq, WorkCompletions wcs, int replyLen) {
        while (true) {
            WorkCompletion wc = awaitOne(cq, wcs);
            if (wc.opcode() == WorkCompletion.OP_SEND) {
                return replyLen;
            }
            require(wc.opcode() == WorkCompletion.OP_RECV && replyLen < 0, "completion opcode " + wc.opcode());
            replyLen = wc.byteLength();
        }
    }

    private static WorkCompletion awaitOne(CompletionQueue cq, WorkCompletions wcs) {
        WorkCompletion wc = cq.pollOne(wcs, java.time.Duration.ofSeconds(30));
        if (wc == null) {
            fail("no completion within 30 s");
        }
        return wc.check();
    }
}
