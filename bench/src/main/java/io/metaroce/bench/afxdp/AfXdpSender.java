package io.metaroce.bench.afxdp;

import com.sun.management.OperatingSystemMXBean;
import com.sun.management.ThreadMXBean;
import io.metaroce.nic.port.PortCounters;
import io.metaroce.nic.port.xdp.AfXdpPort;
import io.metaroce.nic.port.xdp.StaticL2Resolver;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The Java side of the AF_XDP packet-I/O benchmark: the soft-NIC's own {@link AfXdpPort} (its
 * UMEM, frame pool, TX and completion rings, batched flush with need_wakeup kicks) sending
 * SIZE-byte frames for SECONDS, exactly as {@code bench/afxdp/afxdp-ref tx} does, so that
 * {@code afxdp-ref rx} counts and checks them.
 *
 * <pre>
 *   AfXdpSender tx -i IF -s SIZE -d SECONDS --dst-mac MAC --src-ip A --dst-ip B
 *                  [--skb | --native] [-q QUEUE] [--port PORT] [--batch N] [--warmup-ms MS]
 * </pre>
 *
 * <p>Each frame: Ethernet + IPv4 + UDP headers written by the port (source and destination port
 * PORT), then the payload the reference receiver checks: the magic "MRCK" (big-endian) and a
 * 64-bit sequence number (host order). SIZE counts the frame without FCS, as in the C program.
 *
 * <p>Warm-up: before the measured run the sender JIT-compiles its loop by sending frames to UDP
 * port PORT+1, which the receiver does not count and which do not start its clock (it times from
 * its first good frame); the warning line about "frames that were not ours" then counts them.
 * {@code --warmup-ms 0} turns it off.
 *
 * <p>Prints one line {@code tx: frames=... bytes=... seconds=... mpps=... gbps=... size=...
 * cpu=... ns_per_frame=...} on stdout (frames handed to the device, the port's TX ring being
 * drained by its kicks; the process's CPU time over the measured run, every JVM thread included)
 * and the port's counters on stderr. The hot loop allocates nothing and makes one native call per kick only.
 */
public final class AfXdpSender {
    private static final int MAGIC = 0x4d52434b; // "MRCK"
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong HOST_LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private AfXdpSender() {}

    /** The parsed command line. */
    record Options(
            String ifname,
            int size,
            double seconds,
            long dstMac,
            int srcIp,
            int dstIp,
            AfXdpPort.Mode mode,
            int queue,
            int port,
            int batch,
            int warmupMs) {}

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("java-sender: " + e.getMessage());
            usage();
            return;
        }
        System.exit(run(o));
    }

    private static void usage() {
        System.err.println("usage: java-sender tx -i IF -s SIZE -d SECONDS --dst-mac MAC --src-ip A --dst-ip B\n"
                + "                   [--skb|--native] [-q QUEUE] [--port PORT] [--batch N] [--warmup-ms MS]");
        System.exit(2);
    }

    static Options parse(String[] args) throws IOException {
        if (args.length < 1 || !args[0].equals("tx")) {
            throw new IllegalArgumentException("only the tx mode is implemented in Java");
        }
        String ifname = null;
        int size = 64;
        double seconds = 0;
        long dstMac = -1;
        int srcIp = 0;
        int dstIp = 0;
        AfXdpPort.Mode mode = AfXdpPort.Mode.SKB;
        int queue = 0;
        int port = 4791;
        int batch = 64;
        int warmupMs = 300;
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--skb" -> mode = AfXdpPort.Mode.SKB;
                case "--native" -> mode = AfXdpPort.Mode.NATIVE;
                default -> {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException(a + " needs a value");
                    }
                    String v = args[++i];
                    switch (a) {
                        case "-i" -> ifname = v;
                        case "-s" -> size = Integer.parseInt(v);
                        case "-d" -> seconds = Double.parseDouble(v);
                        case "-q" -> queue = Integer.parseInt(v);
                        case "--port" -> port = Integer.parseInt(v);
                        case "--batch" -> batch = Integer.parseInt(v);
                        case "--warmup-ms" -> warmupMs = Integer.parseInt(v);
                        case "--dst-mac" -> dstMac = StaticL2Resolver.parseMac(v);
                        case "--src-ip" -> srcIp = ipv4(v);
                        case "--dst-ip" -> dstIp = ipv4(v);
                        default -> throw new IllegalArgumentException("unknown option " + a);
                    }
                }
            }
        }
        if (ifname == null || dstMac < 0 || srcIp == 0 || dstIp == 0 || seconds <= 0) {
            throw new IllegalArgumentException("-i, -d, --dst-mac, --src-ip and --dst-ip are required");
        }
        if (size < AfXdpPort.HEADERS + 12 || size > 4096) {
            throw new IllegalArgumentException("size " + size + " out of range");
        }
        if (queue != 0) {
            throw new IllegalArgumentException("the port transmits on queue 0 only");
        }
        return new Options(ifname, size, seconds, dstMac, srcIp, dstIp, mode, queue, port, batch, warmupMs);
    }

    private static int ipv4(String s) throws IOException {
        byte[] b = InetAddress.ofLiteral(s).getAddress();
        if (b.length != 4) {
            throw new IllegalArgumentException("not an IPv4 address: " + s);
        }
        return (b[0] & 0xff) << 24 | (b[1] & 0xff) << 16 | (b[2] & 0xff) << 8 | (b[3] & 0xff);
    }

    static int run(Options o) throws IOException {
        int ifindex = Integer.parseInt(Files.readString(Path.of("/sys/class/net", o.ifname(), "ifindex"))
                .trim());
        StaticL2Resolver l2 = new StaticL2Resolver(ifindex, o.srcIp(), StaticL2Resolver.macOf(o.ifname()), o.dstMac());
        int payload = o.size() - AfXdpPort.HEADERS;
        try (AfXdpPort port = new AfXdpPort(o.ifname(), o.srcIp(), o.port(), 0, payload, o.batch(), o.mode(), l2)) {
            if (o.warmupMs() > 0) {
                send(port, o.port() + 1, payload, o.dstIp(), o.batch(), System.nanoTime() + o.warmupMs() * 1_000_000L);
                // Let the receiver see the last warm-up frame before the first counted one.
                long until = System.nanoTime() + 20_000_000L;
                while (System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
            }
            PortCounters c = port.counters();
            long errorsBefore = c.txErrors;
            OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
            long cpu0 = os.getProcessCpuTime();
            long heap0 = threads.getCurrentThreadAllocatedBytes();
            long start = System.nanoTime();
            long frames = send(port, o.port(), payload, o.dstIp(), o.batch(), start + (long) (o.seconds() * 1e9));
            double secs = (System.nanoTime() - start) / 1e9;
            long allocated = threads.getCurrentThreadAllocatedBytes() - heap0;
            long cpuNs = os.getProcessCpuTime() - cpu0;
            System.out.println(String.format(
                    Locale.ROOT,
                    "tx: frames=%d bytes=%d seconds=%.3f mpps=%.3f gbps=%.3f size=%d cpu=%.3f ns_per_frame=%.0f",
                    frames,
                    frames * o.size(),
                    secs,
                    frames / secs / 1e6,
                    frames * o.size() * 8.0 / secs / 1e9,
                    o.size(),
                    cpuNs / 1e9,
                    frames > 0 ? (double) cpuNs / frames : 0.0));
            System.err.printf(
                    Locale.ROOT,
                    "java-sender: port txFrames=%d txErrors=%d (measured run: %d); measured run allocated %d bytes%n",
                    c.txFrames,
                    c.txErrors,
                    c.txErrors - errorsBefore,
                    allocated);
            return frames > 0 ? 0 : 1;
        }
    }

    /**
     * The hot loop: claim, stamp and commit a batch of frames, flush it (the port reclaims
     * completions and kicks the TX ring while the kernel asks for it), until {@code endNs}.
     * Returns the frames handed to the device. Allocates nothing.
     */
    static long send(AfXdpPort port, int dstPort, int payload, int dstIp, int batch, long endNs) {
        long seq = 0;
        long sent = 0;
        do {
            for (int i = 0; i < batch; i++) {
                MemorySegment f = port.claim();
                f.set(BE_INT, 0, MAGIC);
                f.set(HOST_LONG, 4, seq++);
                port.commit(payload, dstIp, dstPort, 0);
            }
            sent += port.flush();
        } while (System.nanoTime() < endNs);
        return sent;
    }
}
