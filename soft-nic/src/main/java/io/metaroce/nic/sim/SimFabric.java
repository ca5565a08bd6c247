package io.metaroce.nic.sim;

import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.PortCounters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.function.LongSupplier;

/**
 * A deterministic in-process fabric: hosts {@link #attach} and get a {@link Port}; between any two
 * hosts run the same {@code N} parallel {@link SimLink links} (think leaf - N spines - leaf), and a
 * frame's link is a function of its source and destination addresses and its entropy
 * ({@link LinkSelector}). Time is the injected clock's; randomness comes from per-link streams
 * split from one seed, so a seed and the same sequence of calls give the same run, bit for bit.
 *
 * <p>Frames live in a pool allocated up front: {@link Port#claim} hands out a pool frame, commit
 * decides its fate at once (see {@link SimLink}) and files a survivor in the destination's arrival
 * heap (ordered by arrival time, then commit order), {@link Port#poll} hands out frames whose
 * arrival time has come and takes them back at the next poll. Nothing is allocated per frame.
 * Single-threaded: the fabric, its ports and its links are driven by one thread.
 */
public final class SimFabric implements AutoCloseable {
    /** Frames one poll hands out at most. */
    public static final int RX_BATCH = 32;
    /** The largest frame a daemon sends (a jumbo RC packet), so that simulated QPs use them too. */
    public static final int DEFAULT_MAX_FRAME = io.metaroce.nic.transport.Wire.MAX_FRAME;

    public static final int DEFAULT_POOL_FRAMES = 8192;
    public static final int DEFAULT_MAX_HOSTS = 8;

    private static final int SCRATCH = -2;
    private static final int NONE = -1;

    private final LongSupplier clock;
    private final SimLink[] links;
    private LinkSelector selector = LinkSelector.HASH;
    private final int maxFrame;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] frames;
    private final ByteBuffer[] views;
    private final MemorySegment scratch;
    private final ByteBuffer scratchView;
    private final int[] free;
    private int freeCount;
    // per pool frame
    private final int[] length;
    private final int[] srcIp;
    private final int[] srcPort;
    private final int[] linkOf;
    private final int[] ecn;
    private final long[] arrivalNs;
    private final long[] order;
    private long nextOrder;
    private final SimPort[] hosts;
    private int hostCount;

    /** Frames sent to an address no attached port serves. */
    public long droppedNoRoute;
    /** Frames (or duplicates) lost because every pool frame was in flight. */
    public long droppedPoolEmpty;

    public SimFabric(long seed, int links, LongSupplier clock) {
        this(seed, links, clock, DEFAULT_MAX_FRAME, DEFAULT_POOL_FRAMES, DEFAULT_MAX_HOSTS);
    }

    public SimFabric(long seed, int linkCount, LongSupplier clock, int maxFrame, int poolFrames, int maxHosts) {
        if (linkCount < 1 || maxFrame < 1 || poolFrames < 1 || maxHosts < 1) {
            throw new IllegalArgumentException("links, frame size, pool and hosts must be positive");
        }
        this.clock = clock;
        this.maxFrame = maxFrame;
        this.links = new SimLink[linkCount];
        for (int i = 0; i < linkCount; i++) {
            links[i] = new SimLink(i, seed, maxHosts);
        }
        long stride = (maxFrame + 63) & ~63L;
        MemorySegment pool = arena.allocate(stride * poolFrames, 64);
        frames = new MemorySegment[poolFrames];
        views = new ByteBuffer[poolFrames];
        free = new int[poolFrames];
        for (int i = 0; i < poolFrames; i++) {
            frames[i] = pool.asSlice(stride * i, maxFrame);
            views[i] = frames[i].asByteBuffer();
            free[i] = poolFrames - 1 - i;
        }
        freeCount = poolFrames;
        scratch = arena.allocate(maxFrame, 64);
        scratchView = scratch.asByteBuffer();
        length = new int[poolFrames];
        srcIp = new int[poolFrames];
        srcPort = new int[poolFrames];
        linkOf = new int[poolFrames];
        ecn = new int[poolFrames];
        arrivalNs = new long[poolFrames];
        order = new long[poolFrames];
        hosts = new SimPort[maxHosts];
    }

    public int links() {
        return links.length;
    }

    public SimLink link(int index) {
        return links[index];
    }

    /** Sets every link at once: {@code fabric.forEachLink(l -> l.delayNs(5_000))}. Control path. */
    public SimFabric forEachLink(java.util.function.Consumer<SimLink> change) {
        for (SimLink l : links) {
            change.accept(l);
        }
        return this;
    }

    public SimFabric selector(LinkSelector selector) {
        this.selector = selector;
        return this;
    }

    /** A port for a host at {@code ip:udpPort} (host order). */
    public SimPort attach(int ip, int udpPort) {
        if (hostCount == hosts.length) {
            throw new IllegalStateException("fabric full: " + hosts.length + " hosts");
        }
        if (findHost(ip, udpPort) >= 0) {
            throw new IllegalStateException("address in use");
        }
        SimPort p = new SimPort(hostCount, ip, udpPort);
        hosts[hostCount++] = p;
        return p;
    }

    /** Frames in flight (committed, not yet polled). */
    public int inFlight() {
        int n = 0;
        for (int i = 0; i < hostCount; i++) {
            n += hosts[i].heapSize;
        }
        return n;
    }

    /** Pool frames not in use. */
    public int freeFrames() {
        return freeCount;
    }

    @Override
    public void close() {
        arena.close();
    }

    private int findHost(int ip, int port) {
        for (int i = 0; i < hostCount; i++) {
            SimPort h = hosts[i];
            if (h.ip == ip && h.port == port && !h.closed) {
                return i;
            }
        }
        return NONE;
    }

    private int allocFrame() {
        return freeCount == 0 ? NONE : free[--freeCount];
    }

    private void freeFrame(int f) {
        free[freeCount++] = f;
    }

    private boolean before(int x, int y) {
        return arrivalNs[x] != arrivalNs[y] ? arrivalNs[x] < arrivalNs[y] : order[x] < order[y];
    }

    private void deliverLater(SimPort to, int f, int len, int fromIp, int fromPort, int link, long atNs, int ecnBits) {
        length[f] = len;
        ecn[f] = ecnBits;
        srcIp[f] = fromIp;
        srcPort[f] = fromPort;
        linkOf[f] = link;
        arrivalNs[f] = atNs;
        order[f] = nextOrder++;
        to.push(f);
    }

    /** A host's port on the fabric. */
    public final class SimPort implements Port {
        private final int host;
        private final int ip;
        private final int port;
        private final PortCounters counters = new PortCounters();
        private final int[] heap = new int[frames.length];
        private int heapSize;
        private final int[] held = new int[RX_BATCH];
        private int heldCount;
        private int claimed = NONE;
        private int committed;
        private boolean closed;
        /** What {@link #sendBurst} answers (a test's stand-in for a port with GSO); 1 by default. */
        private int sendBurst = 1;
        /** The entropy and destination of the last frame committed in this flush (-1: none yet). */
        private long lastRun = -1;

        private int runLength;

        SimPort(int host, int ip, int port) {
            this.host = host;
            this.ip = ip;
            this.port = port;
        }

        @Override
        public int poll(FrameHandler handler) {
            releaseHeld();
            long now = clock.getAsLong();
            int n = 0;
            while (n < RX_BATCH && heapSize > 0 && arrivalNs[heap[0]] <= now) {
                int f = pop();
                held[heldCount++] = f;
                SimLink l = links[linkOf[f]];
                l.deliveredFrames++;
                l.deliveredBytes += length[f];
                counters.rxFrames++;
                views[f].clear().limit(length[f]);
                handler.onFrame(frames[f], views[f], length[f], srcIp[f], srcPort[f], ecn[f]);
                n++;
            }
            return n;
        }

        @Override
        public MemorySegment claim() {
            if (claimed == NONE) {
                int f = allocFrame();
                claimed = f == NONE ? SCRATCH : f;
            }
            return claimed == SCRATCH ? scratch : frames[claimed];
        }

        @Override
        public ByteBuffer claimedView() {
            return (claimed == SCRATCH ? scratchView : views[claimed]).clear();
        }

        /**
         * Decides the frame's fate now (link, queue, impairments); the source port the receiver
         * sees is this port's, whatever the entropy (the transport answers to the served port).
         */
        @Override
        public void commit(int len, int dstIp, int dstPort, int entropy) {
            int f = claimed;
            claimed = NONE;
            if (f == NONE) {
                throw new IllegalStateException("commit without claim");
            }
            counters.txFrames++;
            committed++;
            // what a GSO port would send in one buffer: frames of one entropy and destination in a row
            long run = ((long) (entropy & 0xffff) << 48) ^ ((long) dstPort << 32) ^ (dstIp & 0xffffffffL);
            if (run == lastRun && runLength < sendBurst) {
                runLength++;
                counters.txCoalesced += runLength == 2 ? 2 : 1;
            } else {
                lastRun = run;
                runLength = 1;
            }
            if (f == SCRATCH) {
                droppedPoolEmpty++;
                return;
            }
            int dst = findHost(dstIp, dstPort);
            if (dst < 0) {
                droppedNoRoute++;
                freeFrame(f);
                return;
            }
            int li = selector.link(ip, dstIp, dstPort, entropy & 0xffff, links.length);
            SimLink link = links[li];
            long at = link.admit(dst, len, clock.getAsLong());
            if (at < 0) {
                freeFrame(f);
                return;
            }
            SimPort to = hosts[dst];
            int ecnBits = link.lastCe ? Port.ECN_CE : 0;
            deliverLater(to, f, len, ip, port, li, at, ecnBits);
            if (link.duplicate()) {
                int d = allocFrame();
                if (d == NONE) {
                    droppedPoolEmpty++;
                    return;
                }
                MemorySegment.copy(frames[f], 0, frames[d], 0, len);
                deliverLater(to, d, len, ip, port, li, at, ecnBits);
            }
        }

        @Override
        public int flush() {
            int n = committed;
            committed = 0;
            lastRun = -1;
            return n;
        }

        /**
         * Makes {@link #sendBurst} answer {@code frames}, as a port that sends a path's run of frames
         * as one buffer would; {@link PortCounters#txCoalesced} counts the frames that went in such
         * runs (of at most that many). The fabric itself still carries each frame on its own.
         */
        public SimPort sendBurst(int frames) {
            sendBurst = Math.max(1, frames);
            return this;
        }

        @Override
        public int sendBurst() {
            return sendBurst;
        }

        @Override
        public int maxFrame() {
            return maxFrame;
        }

        /** Frames carry the CE mark a link may set ({@link SimLink#ecnThresholdBytes}). */
        @Override
        public boolean readsEcn() {
            return true;
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

        /** Frames waiting for this host (arrived or not). */
        public int pending() {
            return heapSize;
        }

        /** Detaches: frames in flight to this port go back to the pool, later ones find no route. */
        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            releaseHeld();
            while (heapSize > 0) {
                freeFrame(pop());
            }
            if (claimed >= 0) {
                freeFrame(claimed);
            }
            claimed = NONE;
        }

        private void releaseHeld() {
            for (int i = 0; i < heldCount; i++) {
                freeFrame(held[i]);
            }
            heldCount = 0;
        }

        private void push(int f) {
            int i = heapSize++;
            while (i > 0) {
                int parent = (i - 1) >>> 1;
                if (!before(f, heap[parent])) {
                    break;
                }
                heap[i] = heap[parent];
                i = parent;
            }
            heap[i] = f;
        }

        private int pop() {
            int top = heap[0];
            int last = heap[--heapSize];
            int i = 0;
            int half = heapSize >>> 1;
            while (i < half) {
                int child = 2 * i + 1;
                int right = child + 1;
                if (right < heapSize && before(heap[right], heap[child])) {
                    child = right;
                }
                if (!before(heap[child], last)) {
                    break;
                }
                heap[i] = heap[child];
                i = child;
            }
            heap[i] = last;
            return top;
        }
    }
}
