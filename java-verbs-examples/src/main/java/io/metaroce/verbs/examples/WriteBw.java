package io.metaroce.verbs.examples;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.Mtu;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.VerbsException;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletionException;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.QpEndpoint;
import io.metaroce.verbs.cm.RcConnector;
import io.metaroce.verbs.cm.SideChannel;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * RDMA WRITE bandwidth: the client writes {@code -n} messages of {@code -s} bytes into the
 * server's registered buffer, keeping {@code -t} writes in flight, then sends a SEND_WITH_IMM
 * carrying the count; the server waits for it. Both print {@code "B bytes in S seconds = R
 * Mbit/sec"} and {@code "N iters in S seconds = U usec/iter"}. With {@code -c} the client writes
 * a pattern (byte i = (i * 31 + 7) & 0xff) and the server checks every byte at the end.
 *
 * <pre>
 *   jverbs write-bw [-p port] [-d dev] [-i ib_port] [-g gid_idx] [-m mtu] [-s size] [-n iters]
 *                   [-t tx_depth] [-c] [server]
 * </pre>
 *
 * The side channel message is an ibv_rc_pingpong endpoint (52 bytes) followed by the buffer's
 * address, rkey and size ({@code "%016x:%08x:%08x"} and NUL, 36 bytes).
 *
 * <p><b>Thread safety:</b> one run per instance, on one thread.
 */
public final class WriteBw {

    static final int MSG_SIZE = QpEndpoint.WIRE_SIZE + 36;
    private static final int SEND_DONE_WRID = 0x7fff_ffff;

    private final PrintStream out;
    private final PrintStream err;

    WriteBw(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) {
        System.exit(new WriteBw(System.out, System.err).run(args));
    }

    static void usage(PrintStream o) {
        o.println("Usage: jverbs write-bw [options] [server]");
        o.println("  -p <port>      TCP port of the exchange (default 18516)");
        o.println("  -d <dev>       device (default first)");
        o.println("  -i <ib_port>   port of the device (default 1)");
        o.println("  -g <gid idx>   local GID index (default -1: none)");
        o.println("  -m <mtu>       path MTU (default 1024)");
        o.println("  -s <size>      bytes per write (default 65536)");
        o.println("  -n <iters>     writes (default 1000)");
        o.println("  -t <depth>     writes in flight (default 64)");
        o.println("  -c             check the data at the server");
    }

    int run(String[] args) {
        try {
            Options o = new Options(
                    args,
                    "pdigmsnt",
                    "c",
                    Options.longs(
                            "port",
                            'p',
                            "ib-dev",
                            'd',
                            "ib-port",
                            'i',
                            "gid-idx",
                            'g',
                            "mtu",
                            'm',
                            "size",
                            's',
                            "iters",
                            'n',
                            "tx-depth",
                            't',
                            "chk",
                            'c'));
            List<String> pos = o.positional();
            if (pos.size() > 1) {
                usage(err);
                return 1;
            }
            int size = o.integer('s', 65536);
            int iters = o.integer('n', 1000);
            int depth = o.integer('t', 64);
            if (size < 1 || iters < 1 || depth < 1) {
                throw new IllegalArgumentException("size, iters and tx depth must be positive");
            }
            ConnectOptions opts = new ConnectOptions(
                    o.integer('i', 1),
                    o.integer('g', -1),
                    Mtu.ofBytes(o.integer('m', 1024)),
                    0,
                    ConnectOptions.randomPsn());
            return bandwidth(
                    o.get('d', null),
                    pos.isEmpty() ? null : pos.getFirst(),
                    o.integer('p', 18516),
                    opts,
                    size,
                    iters,
                    depth,
                    o.has('c'));
        } catch (IllegalArgumentException | ArithmeticException e) {
            err.println("write-bw: " + e.getMessage());
            usage(err);
            return 1;
        } catch (VerbsException | WorkCompletionException | IllegalStateException | IOException e) {
            err.println("write-bw: " + e.getMessage());
            return 1;
        }
    }

    static byte pattern(long i) {
        return (byte) (i * 31 + 7);
    }

    private int bandwidth(
            String dev, String server, int port, ConnectOptions opts, int size, int iters, int depth, boolean check)
            throws IOException {
        try (Arena arena = Arena.ofShared();
                Context ctx = Device.open(dev);
                ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            MemorySegment buf = arena.allocate(size, 4096);
            if (server != null && check) {
                for (int i = 0; i < size; i++) {
                    buf.set(ValueLayout.JAVA_BYTE, i, pattern(i));
                }
            }
            int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
            try (MemoryRegion mr = pd.register(buf, access);
                    CompletionQueue cq = ctx.createCompletionQueue(depth + 2);
                    QueuePair qp = pd.createQueuePair(
                            QueuePair.rc(cq, cq).maxSendWr(depth + 1).maxRecvWr(2));
                    SendWorkRequest write =
                            new SendWorkRequest(1).sge(mr, 0, size).signaled(true);
                    SendWorkRequest done = new SendWorkRequest(0)
                            .wrId(SEND_DONE_WRID)
                            .sendWithImm(iters)
                            .signaled(true);
                    RecvWorkRequest recv = new RecvWorkRequest(0).wrId(1);
                    WorkCompletions wcs = new WorkCompletions(32)) {
                qp.toInit(opts.port(), access);
                qp.postRecv(recv);
                QpEndpoint local = RcConnector.localEndpoint(qp, opts);
                byte[] mine = message(local, mr);
                out.println("  local address:  " + local.describe());
                long remoteAddr;
                int rkey;
                int remoteSize;
                byte[] theirs;
                if (server != null) {
                    theirs = SideChannel.client(server, port, mine, 10_000);
                } else {
                    theirs = SideChannel.server(port, MSG_SIZE, msg -> {
                        RcConnector.connect(qp, opts, QpEndpoint.fromWire(Arrays.copyOf(msg, QpEndpoint.WIRE_SIZE)));
                        return mine;
                    });
                }
                QpEndpoint remote = QpEndpoint.fromWire(Arrays.copyOf(theirs, QpEndpoint.WIRE_SIZE));
                String[] extra = new String(theirs, QpEndpoint.WIRE_SIZE, 34, StandardCharsets.US_ASCII)
                        .trim()
                        .split(":");
                remoteAddr = Long.parseUnsignedLong(extra[0], 16);
                rkey = (int) Long.parseLong(extra[1], 16);
                remoteSize = Integer.parseInt(extra[2], 16);
                out.println("  remote address: " + remote.describe()
                        + String.format(", buffer 0x%x rkey 0x%x", remoteAddr, rkey));
                long start = System.nanoTime();
                if (server != null) {
                    if (remoteSize < size) {
                        throw new IllegalStateException(
                                "the server's buffer has " + remoteSize + " bytes, fewer than -s " + size);
                    }
                    RcConnector.connect(qp, opts, remote);
                    write.rdmaWrite(remoteAddr, rkey);
                    start = System.nanoTime();
                    int posted = 0;
                    int completed = 0;
                    while (completed < iters) {
                        while (posted < iters && posted - completed < depth) {
                            qp.postSend(write.wrId(posted));
                            posted++;
                        }
                        int n = cq.poll(wcs);
                        for (int i = 0; i < n; i++) {
                            wcs.get(i).check();
                            completed++;
                        }
                    }
                    qp.postSend(done);
                    awaitOne(cq, wcs);
                } else {
                    WorkCompletion wc = awaitOne(cq, wcs);
                    if (wc.immData() != iters || !wc.hasImm()) {
                        throw new IllegalStateException("the client reports " + wc.immData() + " writes, expected "
                                + iters + " (give both sides the same -n)");
                    }
                }
                long end = System.nanoTime();
                double usec = (end - start) / 1000.0;
                long bytes = (long) size * iters;
                out.println(String.format(
                        Locale.ROOT,
                        "%d bytes in %.2f seconds = %.2f Mbit/sec",
                        bytes,
                        usec / 1_000_000.0,
                        bytes * 8.0 / usec));
                out.println(String.format(
                        Locale.ROOT,
                        "%d iters in %.2f seconds = %.2f usec/iter",
                        iters,
                        usec / 1_000_000.0,
                        usec / iters));
                if (server == null && check) {
                    long bad = 0;
                    for (int i = 0; i < size; i++) {
                        if (buf.get(ValueLayout.JAVA_BYTE, i) != pattern(i)) {
                            bad++;
                        }
                    }
                    out.println(
                            bad == 0
                                    ? "data OK: " + size + " bytes"
                                    : "invalid data: " + bad + " of " + size + " bytes");
                    if (bad != 0) {
                        return 1;
                    }
                }
                return 0;
            }
        }
    }

    /** Polls for one completion; gives up after 5 minutes (a peer that died leaves nothing to wait for). */
    private static WorkCompletion awaitOne(CompletionQueue cq, WorkCompletions wcs) {
        WorkCompletion wc = cq.pollOne(wcs, java.time.Duration.ofMinutes(5));
        if (wc == null) {
            throw new IllegalStateException("no completion within 5 minutes: is the peer still running?");
        }
        return wc.check();
    }

    private static byte[] message(QpEndpoint local, MemoryRegion mr) {
        byte[] m = Arrays.copyOf(local.toWire(), MSG_SIZE);
        byte[] extra = String.format("%016x:%08x:%08x", mr.address(), mr.rkey(), mr.length())
                .getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(extra, 0, m, QpEndpoint.WIRE_SIZE, extra.length);
        return m;
    }
}
