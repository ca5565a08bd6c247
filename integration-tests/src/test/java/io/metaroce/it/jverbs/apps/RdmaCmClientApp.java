package io.metaroce.it.jverbs.apps;

import static io.metaroce.it.jverbs.apps.AppOutput.fail;
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
import io.metaroce.verbs.cm.ConnectionService;
import io.metaroce.verbs.cm.RdmaCmConnectionService;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A Java client of rdmacm-utils' C {@code rdma_server}, over rdma_cm ({@link RdmaCmConnectionService}),
 * with a QP made by the binding: {@code HOST PORT}. rdma_server takes one 16-byte message and answers
 * with 16 bytes of its own (its zero-initialised send buffer), then disconnects; this client sends 16
 * bytes, checks the answer's length and bytes (all zero) and that the server's disconnect and exit end the
 * connection (the QP's flushed receive), and prints {@code OK}.
 */
public final class RdmaCmClientApp {

    private RdmaCmClientApp() {}

    public static void main(String[] args) throws Exception {
        say("rdma_cm library " + io.metaroce.verbs.RdmaCm.library().orElse("(none)"));
        if (args[0].equals("refused-and-rejected")) {
            refusedAndRejected(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            System.exit(0);
        }
        InetSocketAddress server = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
        try (Arena arena = Arena.ofShared();
                Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            MemorySegment buf = arena.allocate(4096, 4096);
            buf.asSlice(0, 16).fill((byte) 0x5a); // the request
            buf.asSlice(64, 16).fill((byte) 0x77); // the answer lands here: rdma_server sends zeros
            try (MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                    CompletionQueue cq = ctx.createCompletionQueue(8);
                    SendWorkRequest send = new SendWorkRequest(1).signaled(true).send();
                    RecvWorkRequest recv = new RecvWorkRequest(1);
                    WorkCompletions wcs = new WorkCompletions(4)) {
                QueuePair qp =
                        pd.createQueuePair(QueuePair.rc(cq, cq).maxSendWr(2).maxRecvWr(2));
                qp.toInit(1, 0);
                qp.postRecv(recv.wrId(10).sge(mr, 64, 16));
                qp.postRecv(recv.wrId(11).sge(mr, 128, 16));
                ConnectionService svc = new RdmaCmConnectionService(Duration.ofSeconds(30));
                try (ConnectionService.Connection c = svc.connect(server, qp, ConnectOptions.defaults(0))) {
                    say("CONNECTED local " + c.local().describe() + " remote "
                            + c.remote().describe());
                    qp.postSend(send.wrId(1).sge(mr, 0, 16));
                    boolean sent = false;
                    boolean answered = false;
                    while (!sent || !answered) {
                        WorkCompletion wc = cq.pollOne(wcs, Duration.ofSeconds(30));
                        if (wc == null) {
                            fail("no completion within 30 s (sent=" + sent + " answered=" + answered + ")");
                        }
                        wc.check();
                        if (wc.wrId() == 1) {
                            sent = true;
                        } else if (wc.wrId() == 10) {
                            if (wc.byteLength() != 16) {
                                fail("answer of " + wc.byteLength() + " bytes");
                            }
                            answered = true;
                        }
                    }
                    byte[] got = buf.asSlice(64, 16).toArray(ValueLayout.JAVA_BYTE);
                    for (byte b : got) {
                        if (b != 0) {
                            fail("the answer is not rdma_server's zeroed buffer: "
                                    + java.util.HexFormat.of().formatHex(got));
                        }
                    }
                    say("ANSWER 16 bytes, zeroed as rdma_server sends them");
                    // rdma_server disconnects and exits after its send: the rdma_cm DISCONNECTED (or the
                    // daemon's peer-gone notice, whichever comes first) moves our QP to ERR, which
                    // flushes the receive still posted
                    WorkCompletion wc = cq.pollOne(wcs, Duration.ofSeconds(30));
                    if (wc == null || wc.wrId() != 11 || wc.status() != 5) { // IBV_WC_WR_FLUSH_ERR
                        fail("the peer's disconnect did not flush the posted receive: "
                                + (wc == null ? "none" : wc.snapshot()));
                    }
                    say("OK disconnect flushed the receive");
                }
            }
        }
        System.exit(0);
    }

    /**
     * {@code refused-and-rejected HOST FREE PORT}: a connect to port FREE, where nobody listens, is
     * refused ({@link java.net.ConnectException}, not a reject); a connect to an endpoint listener
     * on PORT without the endpoint header is rejected with its reason as private data.
     */
    static void refusedAndRejected(String host, int free, int port) throws Exception {
        try (Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain();
                CompletionQueue cq = ctx.createCompletionQueue(8)) {
            ConnectionService svc = new RdmaCmConnectionService(Duration.ofSeconds(30));
            for (int target : new int[] {free, port}) {
                try (QueuePair qp =
                        pd.createQueuePair(QueuePair.rc(cq, cq).maxSendWr(2).maxRecvWr(2))) {
                    qp.toInit(1, 0);
                    svc.connect(new InetSocketAddress(host, target), qp, ConnectOptions.defaults(0))
                            .close();
                    fail("connect to port " + target + " succeeded");
                } catch (io.metaroce.verbs.cm.ConnectionRejectedException r) {
                    if (target == free) {
                        fail("nobody listens on " + free + " but the connect was rejected: " + r);
                    }
                    say("REJECTED " + new String(r.privateData(), java.nio.charset.StandardCharsets.US_ASCII));
                } catch (java.net.ConnectException c) {
                    if (target != free) {
                        fail("connect to the listener on " + port + " was refused: " + c);
                    }
                    say("REFUSED " + c.getMessage());
                }
            }
        }
        say("OK");
    }
}
