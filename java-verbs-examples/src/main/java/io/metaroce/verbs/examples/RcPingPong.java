package io.metaroce.verbs.examples;

import io.metaroce.verbs.CompletionChannel;
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
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.ConnectionService;
import io.metaroce.verbs.cm.DaemonConnectionService;
import io.metaroce.verbs.cm.QpEndpoint;
import io.metaroce.verbs.cm.RcConnector;
import io.metaroce.verbs.cm.SideChannel;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Locale;

/**
 * {@code ibv_rc_pingpong} in Java: the same options, TCP exchange ("LID:QPN:PSN:GID" messages and
 * the final "done"), QP settings, wr_ids and output, so it runs against the C program either
 * way. With {@code -c} the client writes 0 at the start of every page (what the C client does)
 * and the server checks those bytes, and also that every other byte is still 0x7b.
 *
 * <pre>
 *   jverbs rc-pingpong [-p port] [-d dev] [-i ib_port] [-s size] [-m mtu] [-r rx_depth]
 *                      [-n iters] [-l sl] [-e] [-g gid_idx] [-c] [--cm tcp|daemon] [server]
 * </pre>
 *
 * <p><b>Thread safety:</b> one run per instance, on one thread.
 */
public final class RcPingPong {

    static final int RECV_WRID = 1;
    static final int SEND_WRID = 2;
    static final int PAGE_SIZE = 4096;

    private final PrintStream out;
    private final PrintStream err;

    RcPingPong(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) {
        System.exit(new RcPingPong(System.out, System.err).run(args));
    }

    static void usage(PrintStream o) {
        o.println("Usage:");
        o.println("  jverbs rc-pingpong            start a server and wait for connection");
        o.println("  jverbs rc-pingpong <host>     connect to server at <host>");
        o.println();
        o.println("Options:");
        o.println("  -p, --port=<port>      listen on/connect to port <port> (default 18515)");
        o.println("  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)");
        o.println("  -i, --ib-port=<port>   use port <port> of IB device (default 1)");
        o.println("  -s, --size=<size>      size of message to exchange (default 4096)");
        o.println("  -m, --mtu=<size>       path MTU (default 1024)");
        o.println("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)");
        o.println("  -n, --iters=<iters>    number of exchanges (default 1000)");
        o.println("  -l, --sl=<sl>          service level value");
        o.println("  -e, --events           sleep on CQ events (default poll)");
        o.println("  -g, --gid-idx=<gid index> local port gid index");
        o.println("  -c, --chk              validate received buffer");
        o.println("  -C, --cm=<tcp|daemon>  connection set-up: ibv_rc_pingpong's TCP exchange (default), or the");
        o.println("                         MetaRoCE daemons' rdma_cm-style service (-p is the service id; <host>");
        o.println("                         is the server's daemon address; no TCP socket)");
    }

    int run(String[] args) {
        Options o;
        try {
            o = new Options(
                    args,
                    "pdismrnlgC",
                    "ec",
                    Options.longs(
                            "port",
                            'p',
                            "ib-dev",
                            'd',
                            "ib-port",
                            'i',
                            "size",
                            's',
                            "mtu",
                            'm',
                            "rx-depth",
                            'r',
                            "iters",
                            'n',
                            "sl",
                            'l',
                            "events",
                            'e',
                            "gid-idx",
                            'g',
                            "chk",
                            'c',
                            "cm",
                            'C'));
        } catch (IllegalArgumentException e) {
            err.println("rc-pingpong: " + e.getMessage());
            usage(err);
            return 1;
        }
        List<String> pos = o.positional();
        if (pos.size() > 1) {
            usage(err);
            return 1;
        }
        String server = pos.isEmpty() ? null : pos.getFirst();
        int port;
        int ibPort;
        int size;
        Mtu mtu;
        int rxDepth;
        int iters;
        int sl;
        int gidx;
        try {
            port = o.integer('p', 18515);
            ibPort = o.integer('i', 1);
            size = o.integer('s', 4096);
            mtu = Mtu.ofBytes(o.integer('m', 1024));
            rxDepth = o.integer('r', 500);
            iters = o.integer('n', 1000);
            sl = o.integer('l', 0);
            gidx = o.integer('g', -1);
            if (port < 0 || port > 65535 || ibPort < 1 || size < 1 || rxDepth < 1 || iters < 1) {
                throw new IllegalArgumentException("option out of range");
            }
        } catch (IllegalArgumentException | ArithmeticException e) {
            err.println("rc-pingpong: " + e.getMessage());
            usage(err);
            return 1;
        }
        boolean events = o.has('e');
        boolean validate = o.has('c');
        String cm = o.get('C', "tcp");
        if (!cm.equals("tcp") && !cm.equals("daemon")) {
            err.println("rc-pingpong: --cm must be tcp or daemon, not " + cm);
            usage(err);
            return 1;
        }
        if (cm.equals("daemon") && port == 0) {
            err.println("rc-pingpong: --cm daemon needs a service id (-p) other than 0");
            return 1;
        }
        try {
            return pingPong(
                    o.get('d', null),
                    server,
                    port,
                    ibPort,
                    size,
                    mtu,
                    rxDepth,
                    iters,
                    sl,
                    gidx,
                    events,
                    validate,
                    cm.equals("daemon"));
        } catch (VerbsException | IllegalStateException | IOException e) {
            err.println("rc-pingpong: " + e.getMessage());
            return 1;
        }
    }

    private int pingPong(
            String dev,
            String server,
            int port,
            int ibPort,
            int size,
            Mtu mtu,
            int rxDepth,
            int iters,
            int sl,
            int gidx,
            boolean events,
            boolean validate,
            boolean daemonCm)
            throws IOException {
        ConnectOptions opts = new ConnectOptions(ibPort, gidx, mtu, sl, ConnectOptions.randomPsn());
        try (Arena arena = Arena.ofShared();
                Context ctx = Device.open(dev);
                CompletionChannel channel = events ? ctx.createCompletionChannel() : null;
                ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            MemorySegment buf = arena.allocate(size, PAGE_SIZE);
            buf.fill((byte) 0x7b);
            try (MemoryRegion mr = pd.register(buf, io.metaroce.verbs.Access.LOCAL_WRITE);
                    CompletionQueue cq = ctx.createCompletionQueue(rxDepth + 1, channel, 0);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq)
                            .maxSendWr(1)
                            .maxRecvWr(rxDepth)
                            .maxSendSge(1)
                            .maxRecvSge(1));
                    RecvWorkRequest recv =
                            new RecvWorkRequest(1).wrId(RECV_WRID).sge(mr, 0, size);
                    SendWorkRequest send = new SendWorkRequest(1)
                            .wrId(SEND_WRID)
                            .send()
                            .sge(mr, 0, size)
                            .signaled(true);
                    WorkCompletions wcs = new WorkCompletions(2)) {
                if (qp.queryCapabilities().maxInlineData() >= size) {
                    send.inline(true);
                }
                qp.toInit(ibPort, 0);

                int routs = postRecv(qp, recv, rxDepth);
                if (routs < rxDepth) {
                    err.printf("Couldn't post receive (%d)%n", routs);
                    return 1;
                }
                if (events) {
                    cq.requestNotify(false);
                }
                QpEndpoint local = RcConnector.localEndpoint(qp, opts);
                out.println("  local address:  " + local.describe());
                out.flush();
                QpEndpoint remote;
                if (daemonCm) {
                    // The daemons carry the endpoints; both sides leave this in RTS.
                    ConnectionService svc = new DaemonConnectionService();
                    if (server != null) {
                        remote = svc.connect(new InetSocketAddress(InetAddress.getByName(server), port), qp, opts)
                                .remote();
                    } else {
                        try (ConnectionService.Listener l = svc.listen(port)) {
                            out.println("  listening on service " + port + " of the local daemon");
                            out.flush();
                            remote = l.accept(qp, opts).remote();
                        }
                    }
                } else if (server != null) {
                    remote = QpEndpoint.fromWire(SideChannel.client(server, port, local.toWire(), 10_000));
                } else {
                    QpEndpoint[] r = new QpEndpoint[1];
                    SideChannel.server(port, QpEndpoint.WIRE_SIZE, msg -> {
                        r[0] = QpEndpoint.fromWire(msg);
                        RcConnector.connect(qp, opts, r[0]);
                        return local.toWire();
                    });
                    remote = r[0];
                }
                out.println("  remote address: " + remote.describe());
                out.flush();
                if (server != null && !daemonCm) {
                    RcConnector.connect(qp, opts, remote);
                }

                int pending = RECV_WRID;
                if (server != null) {
                    if (validate) {
                        for (int i = 0; i < size; i += PAGE_SIZE) {
                            buf.set(ValueLayout.JAVA_BYTE, i, (byte) 0); // i / page_size % sizeof(char)
                        }
                    }
                    qp.postSend(send);
                    pending |= SEND_WRID;
                }

                long start = System.nanoTime();
                int rcnt = 0;
                int scnt = 0;
                while (rcnt < iters || scnt < iters) {
                    if (events) {
                        CompletionQueue evCq = channel.awaitEvent();
                        if (evCq != cq) {
                            err.println("CQ event for unknown CQ");
                            return 1;
                        }
                        cq.requestNotify(false);
                    }
                    int ne;
                    do {
                        ne = cq.poll(wcs);
                    } while (!events && ne < 1);
                    for (int i = 0; i < ne; i++) {
                        WorkCompletion wc = wcs.get(i);
                        if (!wc.isSuccess()) {
                            err.printf(
                                    "Failed status %s (%d) for wr_id %d%n",
                                    WorkCompletion.statusString(wc.status()), wc.status(), (int) wc.wrId());
                            return 1;
                        }
                        switch ((int) wc.wrId()) {
                            case SEND_WRID -> ++scnt;
                            case RECV_WRID -> {
                                if (--routs <= 1) {
                                    routs += postRecv(qp, recv, rxDepth - routs);
                                    if (routs < rxDepth) {
                                        err.printf("Couldn't post receive (%d)%n", routs);
                                        return 1;
                                    }
                                }
                                ++rcnt;
                            }
                            default -> {
                                err.printf("Completion for unknown wr_id %d%n", (int) wc.wrId());
                                return 1;
                            }
                        }
                        pending &= ~(int) wc.wrId();
                        if (scnt < iters && pending == 0) {
                            qp.postSend(send);
                            pending = RECV_WRID | SEND_WRID;
                        }
                    }
                }
                long end = System.nanoTime();
                double usec = (end - start) / 1000.0;
                long bytes = (long) size * iters * 2;
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
                if (server == null && validate) {
                    int bad = 0;
                    for (int i = 0; i < size; i++) {
                        byte want = i % PAGE_SIZE == 0 ? 0 : (byte) 0x7b;
                        if (buf.get(ValueLayout.JAVA_BYTE, i) != want) {
                            if (i % PAGE_SIZE == 0) {
                                out.printf("invalid data in page %d%n", i / PAGE_SIZE);
                            } else if (bad < 8) {
                                out.printf("invalid data at byte %d%n", i);
                            }
                            bad++;
                        }
                    }
                }
                out.flush();
                if (events) {
                    cq.ackEvents();
                }
                return 0;
            }
        }
    }

    /** Posts up to n receives; returns how many went (stops at the first refusal, as C does). */
    private static int postRecv(QueuePair qp, RecvWorkRequest recv, int n) {
        int i = 0;
        try {
            for (; i < n; i++) {
                qp.postRecv(recv);
            }
        } catch (VerbsException e) {
            // C's pp_post_recv stops at the first failure and reports the count
        }
        return i;
    }
}
