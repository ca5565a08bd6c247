package io.metaroce.it.jverbs.apps;

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
import io.metaroce.verbs.cm.TcpConnectionService;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.util.zip.CRC32;

/**
 * RC SEND / SEND_WITH_IMM between two hosts, connected through {@link TcpConnectionService}, with
 * every data-path shape: sizes 1..max, two-entry gather lists, inline sends, immediates; the
 * receiver scatters each message over two entries and checks every byte, the length and the
 * immediate. Both sides print {@code "OK messages=N bytes=B crc=0x..."} (CRC32 of all payloads)
 * or exit 1 with the first mismatch.
 *
 * <p>args: {@code server PORT N MAX} or {@code client HOST PORT N MAX}
 */
public final class SendRecvApp {

    private static final int WINDOW = 16;
    private static final int HEAD = 100;

    private SendRecvApp() {}

    public static int size(int i, int max) {
        return 1 + (int) ((i * 7919L) % max);
    }

    public static byte data(int i, int j) {
        return (byte) (i * 131 + j * 7);
    }

    static boolean withImm(int i) {
        return i % 3 == 1;
    }

    public static void main(String[] args) throws Exception {
        boolean server = args[0].equals("server");
        String host = server ? null : args[1];
        int k = server ? 1 : 2;
        int port = Integer.parseInt(args[k]);
        int n = Integer.parseInt(args[k + 1]);
        int max = Integer.parseInt(args[k + 2]);
        int slot = HEAD + max + 64;
        ConnectionService cm = new TcpConnectionService();
        try (Arena arena = Arena.ofShared();
                Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            MemorySegment buf = arena.allocate((long) slot * WINDOW, 4096);
            try (MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                    CompletionQueue cq = ctx.createCompletionQueue(2 * WINDOW + 2);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq)
                            .maxSendWr(WINDOW)
                            .maxRecvWr(WINDOW)
                            .maxSendSge(2)
                            .maxRecvSge(2)
                            .maxInlineData(64));
                    SendWorkRequest send = new SendWorkRequest(2).signaled(true);
                    RecvWorkRequest recv = new RecvWorkRequest(2);
                    WorkCompletions wcs = new WorkCompletions(8)) {
                qp.toInit(1, 0);
                ConnectOptions opts = ConnectOptions.defaults(0);
                CRC32 crc = new CRC32();
                long bytes = 0;
                if (server) {
                    for (int s = 0; s < WINDOW; s++) {
                        qp.postRecv(recv.wrId(s)
                                .sge(mr, (long) s * slot, HEAD)
                                .addSge(mr, (long) s * slot + HEAD + 64, max));
                    }
                    try (ConnectionService.Listener l = cm.listen(port)) {
                        l.accept(qp, opts);
                    }
                    byte[] msg = new byte[max];
                    for (int i = 0; i < n; ) {
                        int got = cq.poll(wcs);
                        for (int w = 0; w < got; w++, i++) {
                            WorkCompletion wc = wcs.get(w).check();
                            int s = (int) wc.wrId();
                            int len = size(i, max);
                            if (wc.opcode() != WorkCompletion.OP_RECV || wc.byteLength() != len) {
                                fail("message " + i + ": opcode " + wc.opcode() + ", " + wc.byteLength()
                                        + " bytes, want " + len);
                            }
                            if (wc.hasImm() != withImm(i) || (withImm(i) && wc.immData() != i)) {
                                fail("message " + i + ": immediate " + wc.hasImm() + "/" + wc.immData());
                            }
                            long base = (long) s * slot;
                            for (int j = 0; j < len; j++) {
                                long at = j < HEAD ? base + j : base + HEAD + 64 + (j - HEAD);
                                msg[j] = buf.get(ValueLayout.JAVA_BYTE, at);
                                if (msg[j] != data(i, j)) {
                                    fail("message " + i + " byte " + j + ": " + msg[j] + " want " + data(i, j));
                                }
                            }
                            crc.update(msg, 0, len);
                            bytes += len;
                            qp.postRecv(recv.wrId(s).sge(mr, base, HEAD).addSge(mr, base + HEAD + 64, max));
                        }
                    }
                } else {
                    cm.connect(new InetSocketAddress(host, port), qp, opts);
                    int inlineMax = qp.capabilities().maxInlineData();
                    byte[] msg = new byte[max];
                    int posted = 0;
                    int done = 0;
                    while (done < n) {
                        while (posted < n && posted - done < WINDOW / 2) {
                            int i = posted;
                            int len = size(i, max);
                            long base = (long) (i % WINDOW) * slot;
                            for (int j = 0; j < len; j++) {
                                msg[j] = data(i, j);
                                buf.set(ValueLayout.JAVA_BYTE, base + j, msg[j]);
                            }
                            crc.update(msg, 0, len);
                            bytes += len;
                            if (i % 4 == 2 && len > 1) {
                                send.sge(mr, base, len / 2).addSge(mr, base + len / 2, len - len / 2);
                            } else {
                                send.sge(mr, base, len);
                            }
                            send.inline(i % 5 == 0 && len <= inlineMax);
                            if (withImm(i)) {
                                send.sendWithImm(i);
                            } else {
                                send.send();
                            }
                            qp.postSend(send.wrId(i));
                            posted++;
                        }
                        int got = cq.poll(wcs);
                        for (int w = 0; w < got; w++) {
                            WorkCompletion wc = wcs.get(w).check();
                            if (wc.wrId() != done) {
                                fail("send completion " + wc.wrId() + " out of order, want " + done);
                            }
                            done++;
                        }
                    }
                }
                System.out.printf("OK messages=%d bytes=%d crc=0x%08x%n", n, bytes, crc.getValue());
            }
        }
    }

    private static void fail(String what) {
        System.out.println("MISMATCH " + what);
        System.out.flush();
        System.exit(1);
    }
}
