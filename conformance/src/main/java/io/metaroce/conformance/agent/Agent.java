package io.metaroce.conformance.agent;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.AddressHandle;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.Gid;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.Mtu;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletions;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * The reference target agent of the conformance suite (docs/conformance.md, "Target agent"): an
 * ordinary verbs application on the host under test, run with the provider preloaded, that
 * creates queue pairs, posts work requests and reads or writes its registered memory when the
 * suite asks, over a line protocol on TCP. One client at a time; one PD, one CQ, one memory
 * region of {@value #MR_BYTES} bytes registered with every access right.
 *
 * <p>args: {@code [--listen IP:PORT] [--admin-sock PATH]} (default 0.0.0.0:4795)
 */
public final class Agent {
    static final int MR_BYTES = 1 << 20;
    static final int CQ_DEPTH = 1024;

    private final Context ctx;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final MemorySegment buf;
    private final MemoryRegion mr;
    private final Map<Integer, QueuePair> qps = new HashMap<>();
    private final Path adminSock;
    private final WorkCompletions wcs = new WorkCompletions(16);
    private final RecvWorkRequest recv = new RecvWorkRequest(1);
    private final SendWorkRequest send = new SendWorkRequest(1);

    private Agent(Arena arena, Path adminSock) {
        this.adminSock = adminSock;
        ctx = Device.open("mrce0");
        pd = ctx.allocateProtectionDomain();
        cq = ctx.createCompletionQueue(CQ_DEPTH);
        buf = arena.allocate(MR_BYTES, 4096);
        mr = pd.register(buf, Access.ALL);
    }

    public static void main(String[] args) throws Exception {
        String listen = "0.0.0.0:4795";
        Path admin = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--listen" -> listen = args[++i];
                case "--admin-sock" -> admin = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (admin == null) {
            Object ino = Files.getAttribute(Path.of("/proc/self/ns/net"), "unix:ino");
            admin = Path.of("/tmp/metaroce/nicd-" + ino + ".admin.sock");
        }
        int colon = listen.lastIndexOf(':');
        try (Arena arena = Arena.ofShared();
                ServerSocket ss = new ServerSocket()) {
            Agent agent = new Agent(arena, admin);
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(
                    InetAddress.getByName(listen.substring(0, colon)), Integer.parseInt(listen.substring(colon + 1))));
            System.out.println("mrce-conformance-agent: listening on " + listen);
            System.out.flush();
            while (true) {
                try (Socket s = ss.accept()) {
                    agent.serve(s);
                } catch (IOException e) {
                    System.out.println("mrce-conformance-agent: client gone: " + e.getMessage());
                }
            }
        }
    }

    private void serve(Socket s) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
        PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.US_ASCII);
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = "OK" + handle(line.trim().split("\\s+"));
            } catch (RuntimeException | IOException e) {
                answer = "ERR " + e.toString().replace('\n', ' ');
            }
            out.println(answer);
            if (line.startsWith("BYE")) {
                return;
            }
        }
    }

    private QueuePair qp(String qpn) {
        QueuePair q = qps.get(Integer.parseInt(qpn));
        if (q == null) {
            throw new IllegalArgumentException("no QP " + qpn);
        }
        return q;
    }

    private static long num(String s) {
        return s.startsWith("0x") ? Long.parseUnsignedLong(s.substring(2), 16) : Long.parseLong(s);
    }

    private String handle(String[] a) throws IOException {
        switch (a[0]) {
            case "HELLO" -> {
                return " mrce-agent 1 " + mr.address() + " " + Integer.toUnsignedString(mr.rkey()) + " " + MR_BYTES;
            }
            case "RC" -> {
                QueuePair q =
                        pd.createQueuePair(QueuePair.rc(cq, cq).maxSendWr(64).maxRecvWr(64));
                q.toInit(1, Access.ALL);
                qps.put(q.qpNum(), q);
                return " " + q.qpNum();
            }
            case "CONNECT" -> { // CONNECT qpn remote-ipv4 remote-qpn rq-psn sq-psn mtu max-dest-rd-atomic min-rnr-timer
                QueuePair q = qp(a[1]);
                Gid gid = Gid.of(InetAddress.getByName(a[2]));
                q.toRtr(
                        Mtu.ofBytes((int) num(a[6])),
                        (int) num(a[3]),
                        (int) num(a[4]),
                        AddressHandle.Attributes.global(gid, 0, 1),
                        (int) num(a[7]),
                        (int) num(a[8]));
                q.toRts((int) num(a[5]), 14, 7, 7, 16);
                return "";
            }
            case "UD" -> { // UD qkey
                QueuePair q =
                        pd.createQueuePair(QueuePair.ud(cq, cq).maxSendWr(16).maxRecvWr(64));
                q.toInitUd(1, (int) num(a[1]));
                q.toRtrUd();
                q.toRtsUd(0);
                qps.put(q.qpNum(), q);
                return " " + q.qpNum();
            }
            case "RECV" -> { // RECV qpn wr-id offset length
                qp(a[1]).postRecv(recv.wrId(num(a[2])).sge(mr, num(a[3]), (int) num(a[4])));
                return "";
            }
            case "POST" -> { // POST qpn wr-id SEND|WRITE|READ|FA|CS offset length [raddr rkey [compare-add swap]]
                send.wrId(num(a[2])).signaled(true);
                switch (a[3]) {
                    case "SEND" -> send.send();
                    case "WRITE" -> send.rdmaWrite(num(a[6]), (int) num(a[7]));
                    case "READ" -> send.rdmaRead(num(a[6]), (int) num(a[7]));
                    case "FA" -> send.fetchAndAdd(num(a[6]), (int) num(a[7]), num(a[8]));
                    case "CS" -> send.compareAndSwap(num(a[6]), (int) num(a[7]), num(a[8]), num(a[9]));
                    default -> throw new IllegalArgumentException("opcode " + a[3]);
                }
                qp(a[1]).postSend(send.sge(mr, num(a[4]), (int) num(a[5])));
                return "";
            }
            case "POLL" -> { // POLL timeout-ms: one completion, or NONE
                long deadline = System.nanoTime() + num(a[1]) * 1_000_000L;
                do {
                    if (cq.poll(wcs, 1) > 0) {
                        WorkCompletion wc = wcs.get(0);
                        return " " + wc.wrId() + " " + wc.status() + " " + wc.opcode() + " " + wc.byteLength() + " "
                                + wc.qpNum() + " " + wc.srcQp() + " " + (wc.hasImm() ? wc.immData() : 0);
                    }
                    Thread.onSpinWait();
                } while (System.nanoTime() - deadline < 0);
                return " NONE";
            }
            case "READ" -> { // READ offset length -> hex
                byte[] b = new byte[(int) num(a[2])];
                MemorySegment.copy(buf, ValueLayout.JAVA_BYTE, num(a[1]), b, 0, b.length);
                return " " + HexFormat.of().formatHex(b);
            }
            case "WRITE" -> { // WRITE offset hex
                byte[] b = a.length > 2 ? HexFormat.of().parseHex(a[2]) : new byte[0];
                MemorySegment.copy(b, 0, buf, ValueLayout.JAVA_BYTE, num(a[1]), b.length);
                return "";
            }
            case "STATE" -> {
                return " " + qp(a[1]).state().name();
            }
            case "DESTROY" -> {
                qp(a[1]).close();
                qps.remove(Integer.parseInt(a[1]));
                return "";
            }
            case "COUNTERS" -> {
                return " " + admin("stats");
            }
            case "BYE" -> {
                return "";
            }
            default -> throw new IllegalArgumentException("unknown request " + a[0]);
        }
    }

    /** One command on the daemon's admin socket (the reference daemon's way to read counters). */
    private String admin(String command) throws IOException {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(adminSock));
            ch.write(ByteBuffer.wrap((command + "\n").getBytes(StandardCharsets.UTF_8)));
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            ByteBuffer in = ByteBuffer.allocate(65536);
            while (ch.read(in) >= 0) {
                answer.write(in.array(), 0, in.position());
                in.clear();
            }
            return answer.toString(StandardCharsets.UTF_8).replace('\n', ' ').trim();
        }
    }
}
