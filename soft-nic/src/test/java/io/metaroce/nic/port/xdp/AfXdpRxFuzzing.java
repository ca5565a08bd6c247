package io.metaroce.nic.port.xdp;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.metaroce.nic.port.PortCounters;
import io.metaroce.nic.port.xdp.XskRxRig.Desc;
import io.metaroce.nic.port.xdp.XskRxRig.Frame;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;

/**
 * Coverage-guided fuzzing (Jazzer) of {@link AfXdpPort}'s receive side: its multi-buffer
 * reassembly (descriptors chained with XDP_PKT_CONTD, gathered into one frame) and its parsing of
 * the Ethernet, IPv4 and UDP headers, on an {@link XskRxRig} (rings and UMEM in plain memory, the
 * fuzzer in the kernel's place). Each input is 1 to 4 frames with fuzzed headers (ether type, IHL,
 * TOS, UDP length, source, padding) and payloads of up to 8200 bytes, each cut into 1 to 18
 * buffers of fuzzed lengths and offsets in their chunks, sometimes a frame of more buffers than a
 * batch, and sometimes the last frame's rest produced only after a first poll. Checked after every
 * input: no exception leaves {@code poll}; exactly the frames an independent reading of the bytes
 * accepts are delivered, in order, byte for byte, with their source and ECN; the short and
 * truncated counters grow by what that reading expects; the RX ring drains within a bounded number
 * of polls; and every chunk is back in the fill ring.
 *
 * <p>Runs in its own surefire execution with JAZZER_FUZZ=1 (soft-nic/pom.xml): 10^5 inputs in
 * every build, 10^7 with -Pfuzz-long (docs/fuzzing.md).
 */
class AfXdpRxFuzzing {
    private static final int MAX_FRAME = 8150;
    private static final int BATCH = 32;
    private static final int MAX_BUFFERS = 18; // a kernel makes at most MAX_SKB_FRAGS + 1
    private static XskRxRig rig;
    private static long inputs;
    private static long frames;
    private static long delivered;
    private static long gathered;
    private static long split;
    private static long tooManyBuffers;

    /** What an input's frame must come to. */
    private record Expect(byte[] payload, int srcIp, int srcPort, int ecn, boolean isShort, boolean truncated) {}

    @FuzzTest(maxExecutions = 100_000)
    void receive(FuzzedDataProvider data) {
        if (rig == null) {
            rig = new XskRxRig(MAX_FRAME, BATCH);
        }
        inputs++;
        PortCounters c = rig.port.counters();
        long short0 = c.rxShort;
        long truncated0 = c.rxTruncated;
        List<Expect> expected = new ArrayList<>();
        List<Desc> later = new ArrayList<>();
        int n = data.consumeInt(1, 4);
        for (int k = 0; k < n; k++) {
            frames++;
            boolean tooMany = data.consumeInt(0, 63) == 63; // rare; an exhausted input reads 0s
            byte[] f = frame(data, tooMany);
            int[] pieces;
            int[] offsets;
            if (tooMany) {
                tooManyBuffers++;
                int count = data.consumeInt(BATCH + 1, BATCH + 8);
                pieces = new int[count];
                offsets = new int[count];
                f = Arrays.copyOf(f, Math.max(f.length, count)); // at least a byte a buffer
                Arrays.fill(pieces, f.length / count);
                Arrays.fill(offsets, XskRxRig.HEADROOM);
                expected.add(new Expect(null, 0, 0, 0, false, true));
            } else {
                int[][] cut = cut(data, f.length);
                pieces = cut[0];
                offsets = cut[1];
                expected.add(expect(f, pieces.length == 1 ? f.length : pieces[0]));
                if (pieces.length > 1) {
                    gathered++;
                }
            }
            List<Desc> ds = rig.write(f, pieces, offsets);
            int hold = k == n - 1 && ds.size() > 1 && !data.consumeBoolean() ? data.consumeInt(1, ds.size() - 1) : 0;
            for (int i = 0; i < ds.size() - hold; i++) {
                rig.produce(ds.get(i));
            }
            later.addAll(ds.subList(ds.size() - hold, ds.size()));
        }
        List<Frame> got = new ArrayList<>(rig.poll());
        if (!later.isEmpty()) {
            split++;
            for (Desc d : later) {
                rig.produce(d);
            }
        }
        got.addAll(rig.drain(4 * BATCH));
        check(expected, got);
        long wantShort = expected.stream().filter(Expect::isShort).count();
        long wantTruncated = expected.stream().filter(Expect::truncated).count();
        if (c.rxShort - short0 != wantShort || c.rxTruncated - truncated0 != wantTruncated) {
            throw new AssertionError("counted short " + (c.rxShort - short0) + " truncated "
                    + (c.rxTruncated - truncated0) + ", expected " + wantShort + " and " + wantTruncated);
        }
        if (rig.fillEntries() != AfXdpPort.RX_CHUNKS) {
            throw new AssertionError(rig.fillEntries() + " chunks in the fill ring, not " + AfXdpPort.RX_CHUNKS);
        }
        delivered += got.size();
    }

    /** A frame: mostly well formed, any field possibly hostile; payload bytes from a fuzzed seed. */
    private static byte[] frame(FuzzedDataProvider d, boolean tiny) {
        int etherType = d.consumeInt(0, 15) == 15 ? d.consumeInt(0, 0xffff) : 0x0800;
        int ipLen = d.consumeInt(0, 7) == 7 ? 4 * d.consumeInt(0, 15) : 20;
        int ihl = d.consumeInt(0, 7) == 7 ? d.consumeInt(0, 15) : ipLen / 4;
        int tos = d.consumeInt(0, 255);
        int srcIp = d.consumeInt();
        int srcPort = d.consumeInt(0, 0xffff);
        int size = d.consumeInt(0, 2);
        // an exhausted input (0s) makes a large frame: several buffers
        int len = tiny || size == 2
                ? d.consumeInt(0, 64)
                : size == 1 ? d.consumeInt(0, 4000) : d.consumeInt(3700, MAX_FRAME + 50);
        int udpLength = d.consumeInt(0, 7) == 7 ? d.consumeInt(0, 0xffff) : len + 8;
        int padding = d.consumeBoolean() ? 0 : d.consumeInt(0, 64);
        byte[] payload = new byte[len];
        new SplittableRandom(d.consumeLong()).nextBytes(payload);
        if (ipLen < 20) {
            // the IPv4 header's fixed fields need 20 bytes: a shorter one is a truncated frame
            byte[] f = XskRxRig.frame(etherType, ihl, tos, srcIp, srcPort, udpLength, payload, padding, 20);
            return Arrays.copyOf(f, 14 + ipLen + d.consumeInt(0, 16));
        }
        return XskRxRig.frame(etherType, ihl, tos, srcIp, srcPort, udpLength, payload, padding, ipLen);
    }

    /** Buffer lengths (the last: the rest) and offsets in their chunks, 1 to MAX_BUFFERS of them. */
    private static int[][] cut(FuzzedDataProvider d, int length) {
        List<int[]> parts = new ArrayList<>();
        int left = length;
        boolean usual = d.consumeInt(0, 3) != 3; // as a kernel does: full buffers at the usual headroom
        while (true) {
            // the last three buffers are full ones at the usual headroom: room for any frame's rest
            boolean greedy = usual || parts.size() >= MAX_BUFFERS - 3;
            int offset = greedy || d.consumeBoolean() ? XskRxRig.HEADROOM : d.consumeInt(0, XskRxRig.CHUNK - 1);
            int room = XskRxRig.CHUNK - offset;
            if (left <= room && (greedy || d.consumeBoolean())) {
                parts.add(new int[] {left, offset});
                break;
            }
            int take = greedy ? Math.min(left, room) : d.consumeInt(1, Math.min(left, room));
            if (take == left) { // the frame ends here after all
                parts.add(new int[] {left, offset});
                break;
            }
            parts.add(new int[] {take, offset});
            left -= take;
        }
        int[][] out = new int[2][parts.size()];
        for (int i = 0; i < parts.size(); i++) {
            out[0][i] = parts.get(i)[0];
            out[1][i] = parts.get(i)[1];
        }
        return out;
    }

    /** Reads {@code f} as the port must, independently: {@code first} bytes of it are in the first buffer. */
    private static Expect expect(byte[] f, int first) {
        ByteBuffer b = ByteBuffer.wrap(f);
        if (first < 42 || b.getShort(12) != 0x0800) {
            return new Expect(null, 0, 0, 0, true, false);
        }
        int ihl = (f[14] & 0x0f) * 4;
        if (ihl < 20 || first < 14 + ihl + 8) {
            return new Expect(null, 0, 0, 0, true, false);
        }
        int length = (b.getShort(14 + ihl + 4) & 0xffff) - 8;
        if (length < 0 || 14 + ihl + 8 + length > f.length) {
            return new Expect(null, 0, 0, 0, true, false);
        }
        if (length > MAX_FRAME) {
            return new Expect(null, 0, 0, 0, false, true);
        }
        return new Expect(
                Arrays.copyOfRange(f, 14 + ihl + 8, 14 + ihl + 8 + length),
                b.getInt(26),
                b.getShort(14 + ihl) & 0xffff,
                f[15] & 3,
                false,
                false);
    }

    private static void check(List<Expect> expected, List<Frame> got) {
        int g = 0;
        for (Expect e : expected) {
            if (e.payload() == null) {
                continue;
            }
            if (g == got.size()) {
                throw new AssertionError("a frame of " + e.payload().length + " bytes was not delivered");
            }
            Frame f = got.get(g++);
            if (!Arrays.equals(f.payload(), e.payload())
                    || f.srcIp() != e.srcIp()
                    || f.srcPort() != e.srcPort()
                    || f.ecn() != e.ecn()) {
                throw new AssertionError("delivered " + f.payload().length + " bytes from "
                        + Integer.toHexString(f.srcIp())
                        + ":" + f.srcPort() + " ecn " + f.ecn() + ", expected " + e.payload().length + " bytes from "
                        + Integer.toHexString(e.srcIp()) + ":" + e.srcPort() + " ecn " + e.ecn()
                        + (f.payload().length == e.payload().length ? " (same length, other bytes)" : ""));
            }
        }
        if (g != got.size()) {
            throw new AssertionError((got.size() - g) + " frames delivered that should not have been");
        }
    }

    @AfterAll
    static void report() {
        if (rig == null) {
            return;
        }
        PortCounters c = rig.port.counters();
        System.out.println("AfXdpRxFuzzing: " + inputs + " inputs, " + frames + " frames (" + gathered
                + " over several buffers, " + tooManyBuffers + " over more buffers than a batch, " + split
                + " inputs whose last frame ended after a first poll), " + delivered + " delivered and checked byte"
                + " for byte; port counted short " + c.rxShort + ", truncated " + c.rxTruncated);
        rig.close();
        rig = null;
    }
}
