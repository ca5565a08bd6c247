package io.metaroce.nic.warmup;

import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.PortCounters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Two ports joined by memory: what one commits, the other receives on its next poll, in order,
 * never lost (a queue that is full drops the frame and counts it, as a NIC queue would). The
 * start-up warm-up runs two engines over it, so that no frame reaches a network interface.
 * Engine thread only; allocation-free after construction.
 */
final class MemoryPortPair implements AutoCloseable {
    static final int SLOTS = 512;

    private final Arena arena = Arena.ofShared();
    final End a;
    final End b;

    MemoryPortPair(int ipA, int ipB, int udpPort, int frameBytes) {
        a = new End(ipA, udpPort, frameBytes);
        b = new End(ipB, udpPort, frameBytes);
        a.peer = b;
        b.peer = a;
    }

    @Override
    public void close() {
        arena.close();
    }

    /** One side: a receive queue that the other side fills, and one frame to claim. */
    final class End implements Port {
        private final int ip;
        private final int udpPort;
        private final int frameBytes;
        private final MemorySegment[] slots = new MemorySegment[SLOTS];
        private final ByteBuffer[] views = new ByteBuffer[SLOTS];
        private final int[] lengths = new int[SLOTS];
        private final MemorySegment claim;
        private final ByteBuffer claimView;
        private final PortCounters counters = new PortCounters();
        private End peer;
        /** Next slot the poll hands out; next slot a commit of the peer fills. */
        private int head;
        private int tail;
        long drops;

        private End(int ip, int udpPort, int frameBytes) {
            this.ip = ip;
            this.udpPort = udpPort;
            this.frameBytes = frameBytes;
            for (int i = 0; i < SLOTS; i++) {
                slots[i] = arena.allocate(frameBytes, 64);
                views[i] = slots[i].asByteBuffer();
            }
            claim = arena.allocate(frameBytes, 64);
            claimView = claim.asByteBuffer();
        }

        @Override
        public int poll(FrameHandler handler) {
            int end = Math.min(tail, head + 32);
            int n = 0;
            while (head != end) {
                int i = head & (SLOTS - 1);
                int len = lengths[i];
                handler.onFrame(slots[i], views[i].clear().limit(len), len, peer.ip, peer.udpPort, 0);
                head++;
                n++;
            }
            counters.rxFrames += n;
            return n;
        }

        @Override
        public MemorySegment claim() {
            return claim;
        }

        @Override
        public ByteBuffer claimedView() {
            return claimView.clear();
        }

        @Override
        public void commit(int length, int dstIp, int dstPort, int entropy) {
            if (dstIp != peer.ip || dstPort != peer.udpPort || peer.tail - peer.head == SLOTS) {
                peer.drops++;
                return;
            }
            int i = peer.tail & (SLOTS - 1);
            MemorySegment.copy(claim, 0, peer.slots[i], 0, length);
            peer.lengths[i] = length;
            peer.tail++;
            counters.txFrames++;
        }

        @Override
        public int flush() {
            return 0;
        }

        @Override
        public int maxFrame() {
            return frameBytes;
        }

        @Override
        public int localIp() {
            return ip;
        }

        @Override
        public int localPort() {
            return udpPort;
        }

        @Override
        public int fd() {
            return -1;
        }

        @Override
        public PortCounters counters() {
            return counters;
        }

        /** The pair's memory is freed by {@link MemoryPortPair#close}. */
        @Override
        public void close() {
        }
    }
}
