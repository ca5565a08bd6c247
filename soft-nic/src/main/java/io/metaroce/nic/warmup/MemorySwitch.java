package io.metaroce.nic.warmup;

import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.PortCounters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Ports joined by memory: what one commits to another's address, that one receives on its next
 * poll, in order, never lost (a queue that is full drops the frame and counts it, as a NIC queue
 * would). The start-up warm-up runs its engines over it, so that no frame reaches a network
 * interface. Engine thread only; allocation-free after construction.
 *
 * <p>The ends are of three classes: the engine's calls into its port then see three receiver
 * types while the JIT profiles them, and are compiled as calls that any port class can take; with
 * one or two, C2 compiles a type check and the real port's first frame deoptimizes the engine.
 */
final class MemorySwitch implements AutoCloseable {
    static final int SLOTS = 512;

    private final Arena arena = Arena.ofShared();
    private final End[] ends;

    MemorySwitch(int[] ips, int udpPort, int frameBytes) {
        ends = new End[ips.length];
        for (int i = 0; i < ips.length; i++) {
            ends[i] = switch (i % 3) {
                case 0 -> new End(this, ips[i], udpPort, frameBytes);
                case 1 -> new End1(this, ips[i], udpPort, frameBytes);
                default -> new End2(this, ips[i], udpPort, frameBytes);
            };
        }
    }

    End end(int i) {
        return ends[i];
    }

    private End byAddress(int ip, int udpPort) {
        for (End e : ends) {
            if (e.ip == ip && e.udpPort == udpPort) {
                return e;
            }
        }
        return null;
    }

    @Override
    public void close() {
        arena.close();
    }

    /** One port: a receive queue that the others fill, and one frame to claim. */
    static class End implements Port {
        private final MemorySwitch sw;
        private final int ip;
        private final int udpPort;
        private final int frameBytes;
        private final MemorySegment[] slots = new MemorySegment[SLOTS];
        private final ByteBuffer[] views = new ByteBuffer[SLOTS];
        private final int[] lengths = new int[SLOTS];
        private final int[] sources = new int[SLOTS];
        private final MemorySegment claim;
        private final ByteBuffer claimView;
        private final PortCounters counters = new PortCounters();
        /** Next slot the poll hands out; next slot a commit fills. */
        private int head;

        private int tail;
        long drops;

        End(MemorySwitch sw, int ip, int udpPort, int frameBytes) {
            this.sw = sw;
            this.ip = ip;
            this.udpPort = udpPort;
            this.frameBytes = frameBytes;
            for (int i = 0; i < SLOTS; i++) {
                slots[i] = sw.arena.allocate(frameBytes, 64);
                views[i] = slots[i].asByteBuffer();
            }
            claim = sw.arena.allocate(frameBytes, 64);
            claimView = claim.asByteBuffer();
        }

        @Override
        public int poll(FrameHandler handler) {
            int end = Math.min(tail, head + 32);
            int n = 0;
            while (head != end) {
                int i = head & (SLOTS - 1);
                int len = lengths[i];
                handler.onFrame(slots[i], views[i].clear().limit(len), len, sources[i], udpPort, 0);
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
            End to = sw.byAddress(dstIp, dstPort);
            if (to == null || to.tail - to.head == SLOTS) {
                drops++;
                return;
            }
            int i = to.tail & (SLOTS - 1);
            MemorySegment.copy(claim, 0, to.slots[i], 0, length);
            to.lengths[i] = length;
            to.sources[i] = ip;
            to.tail++;
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

        /** The switch's memory is freed by {@link MemorySwitch#close}. */
        @Override
        public void close() {}
    }

    /** A second class of end (see the class comment). */
    static final class End1 extends End {
        End1(MemorySwitch sw, int ip, int udpPort, int frameBytes) {
            super(sw, ip, udpPort, frameBytes);
        }
    }

    /** A third class of end. */
    static final class End2 extends End {
        End2(MemorySwitch sw, int ip, int udpPort, int frameBytes) {
            super(sw, ip, udpPort, frameBytes);
        }
    }
}
