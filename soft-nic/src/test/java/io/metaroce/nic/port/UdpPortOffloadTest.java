package io.metaroce.nic.port;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The UDP port's offload on loopback: runs of equal frames of one path leave as GSO buffers and
 * come in as GRO buffers cut back into the same frames, in commit order, byte for byte; a frame of
 * another length or another path ends a run; either side with offload off sees the same datagrams.
 */
class UdpPortOffloadTest {
    static final int LOOPBACK = UdpPortEcnTest.LOOPBACK;
    static final int MAX_FRAME = 2048;

    /** What one test sends: per frame its entropy and length, in commit order. */
    record Plan(int[] entropy, int[] length) {}

    /**
     * Runs of 1..20 frames of one entropy (some of MAX_FRAME bytes, the last shorter), mixed with
     * single frames of other entropies and lengths: 600 frames.
     */
    static Plan plan() {
        int n = 600;
        int[] entropy = new int[n];
        int[] length = new int[n];
        java.util.Random r = new java.util.Random(7);
        int i = 0;
        while (i < n) {
            int run = Math.min(n - i, 1 + r.nextInt(20));
            int e = r.nextInt(65536);
            int size = r.nextBoolean() ? MAX_FRAME : 64 + r.nextInt(MAX_FRAME - 64);
            for (int k = 0; k < run; k++) {
                entropy[i] = e;
                length[i] = k == run - 1 && r.nextBoolean() ? 8 + r.nextInt(size - 7) : size;
                i++;
            }
        }
        return new Plan(entropy, length);
    }

    static byte content(int frame, int offset) {
        return (byte) (frame * 31 + offset * 7);
    }

    /** The frames B received: each frame's index (its first 4 bytes), length, source port. */
    record Got(int index, int length, int srcPort) {}

    static List<Got> exchange(boolean offloadA, boolean offloadB, int entropyPorts) throws Exception {
        int portA = freePort(entropyPorts + 1);
        int portB = freePort(1);
        Plan plan = plan();
        int n = plan.entropy().length;
        List<Got> got = new ArrayList<>();
        try (UdpPort a = new UdpPort(LOOPBACK, portA, MAX_FRAME, 32, entropyPorts, offloadA);
                UdpPort b = new UdpPort(LOOPBACK, portB, MAX_FRAME, 32, 0, offloadB)) {
            assertThat(a.gsoOn()).isEqualTo(offloadA);
            assertThat(b.groOn()).isEqualTo(offloadB);
            Port.FrameHandler check = (frame, view, length, srcIp, srcPort, ecn) -> {
                int index = frame.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                assertThat(index).isBetween(0, n - 1);
                assertThat(length).as("frame %d", index).isEqualTo(plan.length()[index]);
                assertThat(view.remaining()).isEqualTo(length);
                for (int k = 4; k < length; k++) {
                    if (frame.get(ValueLayout.JAVA_BYTE, k) != content(index, k)) {
                        throw new AssertionError("frame " + index + " byte " + k);
                    }
                    if (view.get(k) != content(index, k)) {
                        throw new AssertionError("frame " + index + " view byte " + k);
                    }
                }
                assertThat(srcIp).isEqualTo(LOOPBACK);
                got.add(new Got(index, length, srcPort));
            };
            for (int i = 0; i < n; i++) {
                MemorySegment f = a.claim();
                f.set(ValueLayout.JAVA_INT_UNALIGNED, 0, i);
                for (int k = 4; k < plan.length()[i]; k++) {
                    f.set(ValueLayout.JAVA_BYTE, k, content(i, k));
                }
                a.commit(plan.length()[i], LOOPBACK, portB, plan.entropy()[i]);
                if (i % 50 == 49) { // keep within the receive buffer
                    a.flush();
                    drain(b, check, got, i + 1);
                }
            }
            a.flush();
            drain(b, check, got, n);
            assertThat(a.counters().txFrames).isEqualTo(n);
            assertThat(a.counters().txErrors).isZero();
            assertThat(b.counters().rxFrames).isEqualTo(n);
            if (offloadA) {
                assertThat(a.counters().txCoalesced).isGreaterThan(n / 3);
                assertThat(a.counters().txKicks).isLessThan(n / 2);
            } else {
                assertThat(a.counters().txCoalesced).isZero();
            }
            if (offloadA && offloadB) {
                assertThat(b.counters().rxCoalesced).isGreaterThan(n / 3);
            } else {
                assertThat(b.counters().rxCoalesced).isZero();
            }
        }
        for (int i = 0; i < n; i++) {
            assertThat(got.get(i).index()).as("wire order").isEqualTo(i);
            int e = plan.entropy()[i] & 0xffff;
            assertThat(got.get(i).srcPort()).isEqualTo(entropyPorts == 0 ? portA : portA + 1 + e % entropyPorts);
        }
        return got;
    }

    private static void drain(UdpPort b, Port.FrameHandler check, List<Got> got, int want) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (got.size() < want && System.nanoTime() < deadline) {
            b.poll(check);
        }
        assertThat(got).hasSize(want);
    }

    /** A port with {@code count} free consecutive UDP ports from it, on loopback. */
    static int freePort(int count) throws Exception {
        for (int attempt = 0; attempt < 50; attempt++) {
            int base;
            try (DatagramChannel probe = DatagramChannel.open()) {
                probe.bind(new InetSocketAddress("127.0.0.1", 0));
                base = ((InetSocketAddress) probe.getLocalAddress()).getPort();
            }
            if (base + count > 65535) {
                continue;
            }
            boolean free = true;
            List<DatagramChannel> held = new ArrayList<>();
            try {
                for (int k = 0; k < count; k++) {
                    DatagramChannel c = DatagramChannel.open();
                    held.add(c);
                    c.bind(new InetSocketAddress("127.0.0.1", base + k));
                }
            } catch (java.io.IOException e) {
                free = false;
            } finally {
                for (DatagramChannel c : held) {
                    c.close();
                }
            }
            if (free) {
                return base;
            }
        }
        throw new IllegalStateException("no free ports");
    }

    @Test
    void runsOfOnePathLeaveAsGsoBuffersAndComeBackAsTheSameFrames() throws Exception {
        exchange(true, true, 4);
    }

    @Test
    void gsoSendsToAReceiverWithoutGroGiveTheSameDatagrams() throws Exception {
        exchange(true, false, 4);
    }

    @Test
    void singleSendsToAGroReceiver() throws Exception {
        exchange(false, true, 4);
    }

    @Test
    void fromTheDataSocketAlone() throws Exception {
        exchange(true, true, 0);
    }

    /**
     * A GRO receive slot holds 64 KiB, but a datagram larger than a frame is still refused, alone
     * or coalesced (counted truncated, never handed on), and the frames around it come through.
     */
    @Test
    void datagramsLargerThanAFrameAreRefusedAsBefore() throws Exception {
        int port = freePort(1);
        int senderPort = freePort(5);
        List<Integer> got = new ArrayList<>();
        try (UdpPort rx = new UdpPort(LOOPBACK, port, MAX_FRAME, 8, 0, true);
                UdpPort big = new UdpPort(LOOPBACK, senderPort, 4 * MAX_FRAME, 8, 4, true)) {
            int[] lengths = {100, 3 * MAX_FRAME, 200, MAX_FRAME + 1, MAX_FRAME + 1, MAX_FRAME + 1, 300};
            int[] entropy = {1, 4, 2, 4, 4, 4, 3}; // the small ones from sockets of their own
            for (int i = 0; i < lengths.length; i++) {
                MemorySegment f = big.claim();
                f.set(ValueLayout.JAVA_INT_UNALIGNED, 0, i);
                big.commit(lengths[i], LOOPBACK, port, entropy[i]);
            }
            big.flush();
            assertThat(big.counters().txCoalesced)
                    .as("the three of MAX_FRAME + 1 went as one buffer")
                    .isEqualTo(3);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (rx.counters().rxFrames < lengths.length && System.nanoTime() < deadline) {
                rx.poll((frame, view, length, srcIp, srcPort, ecn) -> {
                    assertThat(length).isLessThanOrEqualTo(MAX_FRAME);
                    got.add(frame.get(ValueLayout.JAVA_INT_UNALIGNED, 0));
                });
            }
            assertThat(got).containsExactly(0, 2, 6);
            assertThat(rx.counters().rxTruncated).isEqualTo(4);
        }
    }

    @Test
    void theBurstIsWhatOneBufferHolds() throws Exception {
        int port = freePort(1);
        try (UdpPort jumbo = new UdpPort(LOOPBACK, port, 8972, 4, 0, true)) {
            assertThat(jumbo.sendBurst()).isEqualTo(UdpPort.GSO_MAX_BYTES / 8972);
        }
        try (UdpPort small = new UdpPort(LOOPBACK, port, 1472, 4, 0, true)) {
            assertThat(small.sendBurst()).isEqualTo(UdpPort.BURST_MAX);
        }
        try (UdpPort off = new UdpPort(LOOPBACK, port, 1472, 4, 0, false)) {
            assertThat(off.sendBurst()).isEqualTo(1);
            assertThat(off.groOn()).isFalse();
        }
    }
}
