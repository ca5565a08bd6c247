package io.metaroce.nic.port;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.LongSupplier;

/**
 * A deterministic lossy link between two in-memory ports: every frame is independently lost,
 * duplicated or delayed (which reorders) by a seeded Random, and delivered when the injected
 * clock reaches its time. Test support, not for the hot path.
 */
public final class MemoryLink {
    public final double lossRate;
    public final double dupRate;
    public final long baseDelayNs;
    public final long jitterNs;
    private final Random random;
    private final LongSupplier clock;
    private long order;
    public long dropped;
    public long duplicated;
    /** Probability that a delivered frame carries an ECN CE mark (a congested queue on the way). */
    public double ceRate;

    public long ceMarked;

    /** Per-entropy paths (0: one shared path with the link's own reordering jitter). */
    private int pathCount;

    private double[] pathLoss;
    private long[] pathDeadFromNs;
    private long[] pathLastDeliveryNs;
    public long[] pathFrames;

    /**
     * Splits the link into {@code n} FIFO paths chosen by entropy mod n (an ECMP fabric): each keeps
     * frame order (jitter never reorders within a path), has its own random loss, and can die.
     */
    public void paths(int n, double[] lossPerPath) {
        pathCount = n;
        pathLoss = lossPerPath.clone();
        pathDeadFromNs = new long[n];
        java.util.Arrays.fill(pathDeadFromNs, Long.MAX_VALUE);
        pathLastDeliveryNs = new long[2 * n];
        pathFrames = new long[n];
    }

    /** Path {@code i} drops everything from {@code timeNs} on (a black hole). */
    public void killPath(int i, long timeNs) {
        pathDeadFromNs[i] = timeNs;
    }

    private record Frame(long deliverAtNs, long order, byte[] bytes, int srcIp, int srcPort, int ecn) {}

    private int ecn() {
        if (ceRate > 0 && random.nextDouble() < ceRate) {
            ceMarked++;
            return Port.ECN_CE;
        }
        return 0;
    }

    public MemoryLink(long seed, double lossRate, double dupRate, long baseDelayNs, long jitterNs, LongSupplier clock) {
        this.random = new Random(seed);
        this.lossRate = lossRate;
        this.dupRate = dupRate;
        this.baseDelayNs = baseDelayNs;
        this.jitterNs = jitterNs;
        this.clock = clock;
    }

    public End end(int ip, int port) {
        return new End(ip, port);
    }

    private End a;
    private End b;

    /** Connects two ends: what one sends, the other receives (whatever the destination). */
    public void connect(End x, End y) {
        a = x;
        b = y;
    }

    private void transmit(End from, byte[] bytes, int entropy) {
        End to = from == a ? b : a;
        if (pathCount > 0) {
            transmitOnPath(from, to, bytes, entropy % pathCount);
            return;
        }
        if (random.nextDouble() < lossRate) {
            dropped++;
            return;
        }
        int copies = random.nextDouble() < dupRate ? 2 : 1;
        if (copies == 2) {
            duplicated++;
        }
        for (int i = 0; i < copies; i++) {
            long delay = baseDelayNs + (jitterNs > 0 ? (long) (random.nextDouble() * jitterNs) : 0);
            to.inbox.add(new Frame(clock.getAsLong() + delay, order++, bytes, from.ip, from.port, ecn()));
        }
    }

    private void transmitOnPath(End from, End to, byte[] bytes, int path) {
        long now = clock.getAsLong();
        pathFrames[path]++;
        if (now >= pathDeadFromNs[path] || random.nextDouble() < pathLoss[path] || random.nextDouble() < lossRate) {
            dropped++;
            return;
        }
        int copies = random.nextDouble() < dupRate ? 2 : 1;
        if (copies == 2) {
            duplicated++;
        }
        int dir = from == a ? 0 : 1;
        for (int i = 0; i < copies; i++) {
            long at = now + baseDelayNs + (jitterNs > 0 ? (long) (random.nextDouble() * jitterNs) : 0);
            at = Math.max(at, pathLastDeliveryNs[2 * path + dir]); // FIFO per path and direction
            pathLastDeliveryNs[2 * path + dir] = at;
            to.inbox.add(new Frame(at, order++, bytes, from.ip, from.port, ecn()));
        }
    }

    /** One end: a {@link Port}. */
    public final class End implements Port {
        private final int ip;
        private final int port;
        private final PriorityQueue<Frame> inbox = new PriorityQueue<>((x, y) -> x.deliverAtNs != y.deliverAtNs
                ? Long.compare(x.deliverAtNs, y.deliverAtNs)
                : Long.compare(x.order, y.order));
        private final Arena arena = Arena.ofShared();
        private final MemorySegment[] rx = new MemorySegment[32];
        private final ByteBuffer[] rxViews = new ByteBuffer[32];
        private final MemorySegment tx;
        private final ByteBuffer txView;
        private final PortCounters counters = new PortCounters();

        End(int ip, int port) {
            this.ip = ip;
            this.port = port;
            for (int i = 0; i < rx.length; i++) {
                rx[i] = arena.allocate(maxFrame(), 64);
                rxViews[i] = rx[i].asByteBuffer();
            }
            tx = arena.allocate(maxFrame(), 64);
            txView = tx.asByteBuffer();
        }

        @Override
        public int poll(FrameHandler handler) {
            long now = clock.getAsLong();
            int n = 0;
            while (n < rx.length && !inbox.isEmpty() && inbox.peek().deliverAtNs <= now) {
                Frame f = inbox.poll();
                MemorySegment.copy(MemorySegment.ofArray(f.bytes), 0, rx[n], 0, f.bytes.length);
                rxViews[n].clear().limit(f.bytes.length);
                counters.rxFrames++;
                handler.onFrame(rx[n], rxViews[n], f.bytes.length, f.srcIp, f.srcPort, f.ecn);
                n++;
            }
            return n;
        }

        /** Frames waiting (delivered or not). */
        public int pending() {
            return inbox.size();
        }

        @Override
        public MemorySegment claim() {
            return tx;
        }

        @Override
        public ByteBuffer claimedView() {
            return txView.clear();
        }

        @Override
        public void commit(int length, int dstIp, int dstPort, int entropy) {
            byte[] bytes = tx.asSlice(0, length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            counters.txFrames++;
            transmit(this, bytes, entropy);
        }

        @Override
        public int flush() {
            return 0;
        }

        @Override
        public boolean readsEcn() {
            return true;
        }

        @Override
        public int maxFrame() {
            return io.metaroce.nic.transport.Wire.MAX_FRAME; // what a daemon on a 9000-byte netdev carries
        }

        @Override
        public int localIp() {
            return ip;
        }

        @Override
        public int localPort() {
            return port;
        }

        @Override
        public int fd() {
            return -1;
        }

        @Override
        public PortCounters counters() {
            return counters;
        }

        @Override
        public void close() {
            arena.close();
        }
    }
}
