package io.metaroce.nic.port.xdp;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.IpAddr;
import io.metaroce.nic.port.PortCounters;
import io.metaroce.nic.port.xdp.XskRxRig.Frame;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The AF_XDP port's IPv6 frames: the headers it builds (checked byte for byte against a vector
 * computed by hand, UDP checksum included), and its RX side over rings in plain memory
 * ({@link XskRxRig}) serving an IPv6 address: good frames delivered with their source address,
 * port and ECN, in one buffer or gathered from several; every malformed frame (lengths, next
 * header, checksum 0) dropped and counted, never an exception, and the frame after it still
 * delivered. (A wrong non-zero checksum is not the port's to judge: veth hands XDP a kernel
 * peer's frames with the checksum left to an offload; the ICRC covers the payload.)
 */
class AfXdpIpv6FrameTest {
    private static final long A_HI = 0x20010db800000000L; // 2001:db8::1
    private static final long A_LO = 1L;
    private static final long B_HI = 0x20010db800000000L; // 2001:db8::2
    private static final long B_LO = 2L;
    private static final int MAX_FRAME = AfXdpPort.MAX_FRAME_V6;
    private XskRxRig rig;

    @AfterEach
    void close() {
        if (rig != null) {
            rig.close();
        }
    }

    /** 101 payload bytes {@code i * 7 mod 256}. */
    private static byte[] vectorPayload() {
        byte[] p = new byte[101];
        for (int i = 0; i < p.length; i++) {
            p[i] = (byte) (i * 7);
        }
        return p;
    }

    /**
     * Vector: 2001:db8::1 port 4800 to 2001:db8::2 port 4793, the 101-byte payload above. UDP
     * checksum by RFC 1071 over the pseudo-header (addresses, length 109, next header 17), the
     * UDP header and the payload (its odd last byte padded): 0xacb2. Flow label: 4800 * 0x9E3779B1
     * mod 2^32, top 20 bits = 0x9029b.
     */
    @Test
    void buildsEthernetIpv6UdpHeadersMatchingAKnownVector() {
        try (Arena arena = Arena.ofConfined()) {
            byte[] p = vectorPayload();
            MemorySegment f = arena.allocate(AfXdpPort.HEADERS_V6 + p.length);
            MemorySegment.copy(p, 0, f, ValueLayout.JAVA_BYTE, AfXdpPort.HEADERS_V6, p.length);
            AfXdpPort.writeHeaders6(
                    f,
                    0,
                    StaticL2Resolver.parseMac("02:00:00:00:00:02"),
                    StaticL2Resolver.parseMac("02:00:00:00:00:01"),
                    A_HI,
                    A_LO,
                    B_HI,
                    B_LO,
                    4800,
                    4793,
                    p.length);
            byte[] h = f.asSlice(0, AfXdpPort.HEADERS_V6).toArray(ValueLayout.JAVA_BYTE);
            assertThat(HexFormat.of().formatHex(h))
                    .isEqualTo("020000000002" + "020000000001" + "86dd"
                            + "6029029b" // version 6, traffic class 0x02 (ECT(0)), flow label 0x9029b
                            + "006d" + "11" + "40" // payload length 109, next header UDP, hop limit 64
                            + "20010db8000000000000000000000001" + "20010db8000000000000000000000002"
                            + "12c0" + "12b9" + "006d" + "acb2");
            assertThat(AfXdpPort.flowLabel(4800)).isEqualTo(0x9029b);
        }
    }

    @Test
    void flowLabelsDifferAcrossTheEntropyPortsAndAreNeverZero() {
        java.util.Set<Integer> labels = new java.util.HashSet<>();
        for (int port = 4794; port < 4794 + 64; port++) {
            int l = AfXdpPort.flowLabel(port);
            assertThat(l).isBetween(1, 0xfffff);
            labels.add(l);
        }
        assertThat(labels).as("64 entropy ports, 64 flow labels").hasSize(64);
    }

    @Test
    void aChecksumThatComesOutZeroIsSentAsAllOnes() {
        // Find a payload whose checksum computes to 0: the header must then carry 0xffff (0 = none).
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment f = arena.allocate(AfXdpPort.HEADERS_V6 + 2);
            AfXdpPort.writeHeaders6(f, 0, 1, 2, A_HI, A_LO, B_HI, B_LO, 4800, 4793, 2);
            int c = f.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 60) & 0xffff;
            // with payload word w the checksum is ~(S + w): choose w = ~S - 0 so that it folds to 0xffff
            int w = c; // payload 0 gave checksum c = ~S, so S + c = 0xffff and the sum's complement is 0
            f.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 62, (short) w);
            AfXdpPort.writeHeaders6(f, 0, 1, 2, A_HI, A_LO, B_HI, B_LO, 4800, 4793, 2);
            assertThat(f.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 60) & 0xffff)
                    .isEqualTo(0xffff);
        }
    }

    // ------------------------------------------------------------------ RX

    private int localV6() {
        return IpAddr.intern(B_HI, B_LO);
    }

    /** A frame as {@link AfXdpPort#writeHeaders6} makes it from A, traffic class {@code tc}. */
    private static byte[] frame6(byte[] payload, int srcPort, int tc) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment f = arena.allocate(AfXdpPort.HEADERS_V6 + payload.length);
            MemorySegment.copy(payload, 0, f, ValueLayout.JAVA_BYTE, AfXdpPort.HEADERS_V6, payload.length);
            AfXdpPort.writeHeaders6(f, 0, 2, 1, A_HI, A_LO, B_HI, B_LO, srcPort, 4793, payload.length);
            byte[] b = f.toArray(ValueLayout.JAVA_BYTE);
            b[14] = (byte) ((b[14] & 0xf0) | (tc >>> 4));
            b[15] = (byte) ((b[15] & 0x0f) | (tc << 4));
            return b;
        }
    }

    private static byte[] payload(int n, long seed) {
        byte[] p = new byte[n];
        new SplittableRandom(seed).nextBytes(p);
        return p;
    }

    private void one(byte[] f) {
        for (XskRxRig.Desc d : rig.write(f, new int[] {0}, new int[] {XskRxRig.HEADROOM})) {
            rig.produce(d);
        }
    }

    @Test
    void aFrameInOneBufferIsDeliveredInPlaceWithItsSourceAndEcn() {
        rig = new XskRxRig(localV6(), MAX_FRAME, 32);
        byte[] p = payload(1000, 1);
        one(frame6(p, 50123, 0x03)); // CE
        List<Frame> got = rig.drain(10);
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(p);
        assertThat(got.get(0).srcIp()).isEqualTo(IpAddr.intern(A_HI, A_LO));
        assertThat(IpAddr.toString(got.get(0).srcIp())).isEqualTo("2001:db8:0:0:0:0:0:1");
        assertThat(got.get(0).srcPort()).isEqualTo(50123);
        assertThat(got.get(0).ecn()).isEqualTo(3);
    }

    @Test
    void aLargestFrameOverThreeBuffersIsGathered() {
        rig = new XskRxRig(localV6(), MAX_FRAME, 32);
        byte[] p = payload(MAX_FRAME, 2);
        byte[] f = frame6(p, 50124, 0x02);
        int h = XskRxRig.HEADROOM;
        for (XskRxRig.Desc d : rig.write(f, new int[] {3001, 3799, 0}, new int[] {h, h, h})) { // odd pieces
            rig.produce(d);
        }
        List<Frame> got = rig.drain(10);
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(p);
        assertThat(got.get(0).ecn()).isEqualTo(2);
        assertThat(rig.fillEntries()).as("every RX chunk back in the fill ring").isEqualTo(AfXdpPort.RX_CHUNKS);
    }

    /** Each malformed frame, the counter it must bump. */
    private record Bad(String what, byte[] frame, String counter) {}

    private static byte[] with(byte[] f, int off, int... bytes) {
        byte[] c = f.clone();
        for (int i = 0; i < bytes.length; i++) {
            c[off + i] = (byte) bytes[i];
        }
        return c;
    }

    @Test
    void malformedFramesAreDroppedAndCountedAndTheNextOneDelivered() {
        rig = new XskRxRig(localV6(), MAX_FRAME, 32);
        byte[] good = frame6(payload(200, 3), 50125, 0x02); // payload length 208 = 0x00d0
        byte[] truncated = java.util.Arrays.copyOf(good, good.length - 1);
        byte[] v4 = XskRxRig.frame(0x0800, 5, 0x02, 0xc6120002, 50123, 208, payload(200, 4), 0, 20);
        byte[] oversize = frame6(payload(MAX_FRAME, 5), 50126, 0x02);
        // a UDP length above maxFrame + 8 in a frame that holds it: the port's frame limit, not the buffer's
        List<Bad> bad = List.of(
                new Bad("shorter than the headers", java.util.Arrays.copyOf(good, 61), "short"),
                new Bad("IPv4 on an IPv6 port", v4, "short"),
                new Bad("ARP", with(good, 12, 0x08, 0x06), "short"),
                new Bad("IP version 4 in an IPv6 EtherType", with(good, 14, 0x40), "short"),
                new Bad("a hop-by-hop extension header", with(good, 20, 0), "short"),
                new Bad("ICMPv6", with(good, 20, 58), "short"),
                new Bad("UDP length 7", with(good, 58, 0, 7), "short"),
                new Bad("UDP length beyond the payload length", with(good, 58, 0, 0xd1), "short"),
                new Bad("payload length beyond the frame", truncated, "short"),
                new Bad("payload length 0xffff", with(good, 18, 0xff, 0xff), "short"),
                new Bad("UDP checksum 0", with(good, 60, 0, 0), "badChecksum"));
        PortCounters c = rig.port.counters();
        for (Bad b : bad) {
            long shortBefore = c.rxShort;
            long badBefore = c.rxBadChecksum;
            long truncBefore = c.rxTruncated;
            one(b.frame());
            one(good);
            List<Frame> got = rig.drain(10);
            assertThat(got).as(b.what() + ": only the good frame after it").hasSize(1);
            assertThat(got.get(0).payload()).as(b.what()).isEqualTo(java.util.Arrays.copyOfRange(good, 62, 262));
            assertThat(c.rxShort - shortBefore)
                    .as(b.what() + ": short")
                    .isEqualTo(b.counter().equals("short") ? 1 : 0);
            assertThat(c.rxBadChecksum - badBefore)
                    .as(b.what() + ": bad checksum")
                    .isEqualTo(b.counter().equals("badChecksum") ? 1 : 0);
            assertThat(c.rxTruncated - truncBefore).as(b.what()).isZero();
        }
        // A frame of more than the port's maxFrame (a rig over a smaller frame limit) is truncated.
        rig.close();
        rig = new XskRxRig(localV6(), 4160, 32);
        int h = XskRxRig.HEADROOM;
        for (XskRxRig.Desc d : rig.write(oversize, new int[] {3800, 3800, 0}, new int[] {h, h, h})) {
            rig.produce(d);
        }
        assertThat(rig.drain(10)).isEmpty();
        assertThat(rig.port.counters().rxTruncated).isEqualTo(1);
        assertThat(rig.fillEntries()).isEqualTo(AfXdpPort.RX_CHUNKS);
    }

    /**
     * Random damage to the headers of random good frames: the port never throws, never hands over
     * more than the frame holds, and gives back every chunk.
     */
    @Test
    void randomHeaderDamageNeverEscapesAsAnExceptionOrAnOverread() {
        rig = new XskRxRig(localV6(), MAX_FRAME, 32);
        SplittableRandom r = new SplittableRandom(0x6006);
        for (int i = 0; i < 2000; i++) {
            byte[] p = payload(1 + r.nextInt(1200), r.nextLong());
            byte[] f = frame6(p, 50000 + r.nextInt(64), 0x02);
            boolean damaged = r.nextBoolean();
            if (damaged) {
                int at = 12 + r.nextInt(AfXdpPort.HEADERS_V6 - 12);
                f[at] ^= (byte) (1 + r.nextInt(255));
            }
            one(f);
            List<Frame> got = rig.drain(10);
            if (!damaged) {
                assertThat(got).hasSize(1);
            }
            for (Frame g : got) {
                // a shortened UDP length delivers a prefix; nothing past the frame's payload
                assertThat(g.payload().length).isLessThanOrEqualTo(p.length);
                assertThat(g.payload()).isEqualTo(java.util.Arrays.copyOf(p, g.payload().length));
            }
        }
        assertThat(rig.fillEntries()).isEqualTo(AfXdpPort.RX_CHUNKS);
    }

    /** Frames of every size up to the largest, split over as many buffers as the kernel would use. */
    @Test
    void roundTripThroughTheHeadersTheTxSideBuilds() {
        rig = new XskRxRig(localV6(), MAX_FRAME, 32);
        int h = XskRxRig.HEADROOM;
        int room = XskRxRig.CHUNK - h;
        for (int n : new int[] {1, 2, 3, 63, 64, room - 62, room - 61, 4160, MAX_FRAME}) {
            byte[] p = payload(n, n);
            byte[] f = frame6(p, 4794 + n % 64, 0x02);
            int buffers = (f.length + room - 1) / room;
            int[] pieces = new int[buffers];
            int[] offsets = new int[buffers];
            java.util.Arrays.fill(pieces, room);
            java.util.Arrays.fill(offsets, h);
            for (XskRxRig.Desc d : rig.write(f, pieces, offsets)) {
                rig.produce(d);
            }
            List<Frame> got = rig.drain(10);
            assertThat(got).as("payload of %d bytes", n).hasSize(1);
            assertThat(got.get(0).payload()).isEqualTo(p);
        }
    }
}
