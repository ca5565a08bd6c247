package io.metaroce.nic.engine;

import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.PortCounters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The port the transport sends through: frames to this daemon's own address and UDP port (two
 * QPs of the same host) go into a small local queue that the engine feeds to its own RX path
 * ({@link #pollLocal}, {@link #release}); every other frame goes to the real port. A real port
 * cannot carry them: an AF_XDP NIC queue does not hairpin a frame back to itself. The claimed
 * frame of the real port is copied, never committed, and the next claim hands it out again (what
 * every {@link Port} does with a frame claimed and not committed).
 *
 * <p>The queue keeps a slot until {@link #release}, so frames handed to the engine stay valid
 * while their payload is staged; a frame that finds the queue full is dropped and counted, like
 * a full NIC queue. Engine thread only; allocation-free.
 */
final class LoopbackPort implements Port {
    static final int SLOTS = 256;

    private final Port port;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] slots = new MemorySegment[SLOTS];
    private final ByteBuffer[] views = new ByteBuffer[SLOTS];
    private final int[] lengths = new int[SLOTS];
    /** Oldest slot not released; next slot to hand out; next slot to fill. */
    private int head;

    private int next;
    private int tail;
    private MemorySegment claimed;
    long looped;
    long drops;

    LoopbackPort(Port port) {
        this.port = port;
        for (int i = 0; i < SLOTS; i++) {
            slots[i] = arena.allocate(port.maxFrame(), 64);
            views[i] = slots[i].asByteBuffer();
        }
    }

    /** Hands up to the frames queued now (not those queued meanwhile) to {@code handler}. */
    int pollLocal(FrameHandler handler) {
        int end = tail;
        int n = 0;
        while (next != end) {
            int i = next & (SLOTS - 1);
            int len = lengths[i];
            next++;
            handler.onFrame(slots[i], views[i].clear().limit(len), len, port.localIp(), port.localPort(), 0);
            n++;
        }
        return n;
    }

    /** The frames handed out so far are done with (their payloads landed): their slots are free. */
    void release() {
        head = next;
    }

    boolean pending() {
        return next != tail;
    }

    @Override
    public boolean readsEcn() {
        return port.readsEcn();
    }

    @Override
    public int poll(FrameHandler handler) {
        return port.poll(handler);
    }

    @Override
    public MemorySegment claim() {
        claimed = port.claim();
        return claimed;
    }

    @Override
    public ByteBuffer claimedView() {
        return port.claimedView();
    }

    @Override
    public void commit(int length, int dstIp, int dstPort, int entropy) {
        if (dstIp != port.localIp() || dstPort != port.localPort()) {
            port.commit(length, dstIp, dstPort, entropy);
            return;
        }
        if (tail - head == SLOTS || length > port.maxFrame()) {
            drops++;
            return;
        }
        int i = tail & (SLOTS - 1);
        MemorySegment.copy(claimed, 0, slots[i], 0, length);
        lengths[i] = length;
        tail++;
        looped++;
    }

    @Override
    public int flush() {
        return port.flush();
    }

    @Override
    public int maxFrame() {
        return port.maxFrame();
    }

    @Override
    public int localIp() {
        return port.localIp();
    }

    @Override
    public int localPort() {
        return port.localPort();
    }

    @Override
    public int fd() {
        return port.fd();
    }

    @Override
    public PortCounters counters() {
        return port.counters();
    }

    @Override
    public int planes() {
        return port.planes();
    }

    @Override
    public int sendBurst() {
        return port.sendBurst();
    }

    @Override
    public PortCounters planeCounters(int plane) {
        return port.planeCounters(plane);
    }

    /** Frees the queue; the real port belongs to whoever opened it. */
    @Override
    public void close() {
        arena.close();
    }
}
