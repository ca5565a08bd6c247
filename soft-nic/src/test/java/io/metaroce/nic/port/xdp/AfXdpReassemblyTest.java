package io.metaroce.nic.port.xdp;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.port.xdp.XskRxRig.Desc;
import io.metaroce.nic.port.xdp.XskRxRig.Frame;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link AfXdpPort}'s RX side over rings in plain memory ({@link XskRxRig}): multi-buffer frames
 * gathered byte for byte, and the four faults found while building the reassembly fuzzer
 * ({@code AfXdpRxFuzzing}) on this rig, each a case that failed before its fix: the rest of a
 * frame never seen after a poll that ended inside it, headers past the first buffer (an exception
 * out of poll), a frame away from the usual headroom read from the usual place, and a frame of
 * more buffers than a batch waited for forever.
 */
class AfXdpReassemblyTest {
    private static final int MAX_FRAME = 8150;
    private static final int SRC = 0xc6120002;
    private XskRxRig rig;

    @AfterEach
    void close() {
        if (rig != null) {
            rig.close();
        }
    }

    private static byte[] payload(int n, long seed) {
        byte[] p = new byte[n];
        new SplittableRandom(seed).nextBytes(p);
        return p;
    }

    private static byte[] udp(byte[] payload) {
        return XskRxRig.frame(0x0800, 5, 0x02, SRC, 50123, payload.length + 8, payload, 0, 20);
    }

    private void produce(List<Desc> ds) {
        for (Desc d : ds) {
            rig.produce(d);
        }
    }

    @Test
    void aFrameOverThreeBuffersIsGatheredExactlyAndItsChunksGoBack() {
        rig = new XskRxRig(MAX_FRAME, 32);
        byte[] p = payload(MAX_FRAME, 1);
        int h = XskRxRig.HEADROOM;
        produce(rig.write(udp(p), new int[] {3840, 3840, 0}, new int[] {h, h, h}));
        List<Frame> got = rig.drain(10);
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(p);
        assertThat(got.get(0).srcIp()).isEqualTo(SRC);
        assertThat(got.get(0).srcPort()).isEqualTo(50123);
        assertThat(got.get(0).ecn()).isEqualTo(2);
        assertThat(rig.fillEntries()).as("every RX chunk back in the fill ring").isEqualTo(AfXdpPort.RX_CHUNKS);
    }

    /**
     * Finding (on the 4-spine fabric, not this rig first): the kernel publishes a flush's RX
     * descriptors before the fill ring's consumer index, so a poll can hold chunks that the fill
     * ring still counts as its own, and refills find no room until the kernel catches up. The held
     * chunks had room for one batch: the next poll died of an index out of bounds.
     */
    @Test
    void chunksHeldWhileTheFillRingLooksFullGoBackOnceItsConsumerIsPublished() {
        rig = new XskRxRig(MAX_FRAME, 32);
        int h = XskRxRig.HEADROOM;
        int frames = 100;
        rig.holdFillConsumer();
        for (int i = 0; i < frames; i++) {
            produce(rig.write(udp(payload(200, 100 + i)), new int[] {0}, new int[] {h}));
        }
        List<Frame> got = rig.drain(20);
        assertThat(got).hasSize(frames);
        for (int i = 0; i < frames; i++) {
            assertThat(got.get(i).payload()).isEqualTo(payload(200, 100 + i));
        }
        assertThat(rig.port.heldMax(0))
                .as("every frame's chunk held, over three batches")
                .isEqualTo(frames);
        assertThat(rig.port.refillsDeferred(0)).isGreaterThanOrEqualTo(3);
        rig.publishFillConsumer();
        assertThat(rig.poll()).isEmpty();
        assertThat(rig.fillEntries()).as("every RX chunk back in the fill ring").isEqualTo(AfXdpPort.RX_CHUNKS);
    }

    /** Finding: after a poll that ended inside a frame the producer index was never read again (RX stalled). */
    @Test
    void aFrameWhoseLastBufferIsNotThereYetWaitsForIt() {
        rig = new XskRxRig(MAX_FRAME, 32);
        byte[] first = payload(100, 2);
        byte[] split = payload(5000, 3);
        int h = XskRxRig.HEADROOM;
        produce(rig.write(udp(first), new int[] {0}, new int[] {h}));
        List<Desc> ds = rig.write(udp(split), new int[] {3000, 1000, 0}, new int[] {h, h, h});
        rig.produce(ds.get(0));
        rig.produce(ds.get(1));
        List<Frame> got = rig.poll();
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(first);
        assertThat(rig.poll()).as("two of three buffers").isEmpty();
        rig.produce(ds.get(2));
        got = rig.drain(10);
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(split);
    }

    /** Finding: headers past the first buffer made the gather copy a negative length (an exception out of poll). */
    @Test
    void headersThatDoNotFitTheFirstBufferAreShortNotAnException() {
        rig = new XskRxRig(MAX_FRAME, 32);
        byte[] p = payload(200, 4);
        byte[] f = XskRxRig.frame(0x0800, 6, 0, SRC, 50123, p.length + 8, p, 0, 24);
        int h = XskRxRig.HEADROOM;
        produce(rig.write(f, new int[] {44, 0}, new int[] {h, h})); // 14 + 24 + 8 = 46 > 44
        byte[] ok = payload(300, 5);
        produce(rig.write(udp(ok), new int[] {0}, new int[] {h}));
        long shortBefore = rig.port.counters().rxShort;
        List<Frame> got = rig.drain(10);
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(ok);
        assertThat(rig.port.counters().rxShort - shortBefore).isEqualTo(1);
    }

    /** Finding: a one-buffer frame not at the usual headroom was handed over from the usual place. */
    @Test
    void aFrameAtAnotherOffsetInItsChunkIsReadWhereItIs() {
        rig = new XskRxRig(MAX_FRAME, 32);
        byte[] p = payload(1000, 6);
        produce(rig.write(udp(p), new int[] {0}, new int[] {512}));
        List<Frame> got = rig.drain(10);
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(p);
    }

    /** Finding: a frame of more buffers than a poll's batch was waited for forever, and every frame after it. */
    @Test
    void aFrameOfMoreBuffersThanABatchIsDroppedAndTheNextOneDelivered() {
        rig = new XskRxRig(MAX_FRAME, 8);
        byte[] big = payload(1200, 7);
        int[] pieces = new int[12];
        int[] offsets = new int[12];
        java.util.Arrays.fill(pieces, 100);
        java.util.Arrays.fill(offsets, XskRxRig.HEADROOM);
        produce(rig.write(udp(big), pieces, offsets));
        byte[] next = payload(64, 8);
        produce(rig.write(udp(next), new int[] {0}, new int[] {XskRxRig.HEADROOM}));
        long truncatedBefore = rig.port.counters().rxTruncated;
        List<Frame> got = rig.drain(10);
        assertThat(got).hasSize(1);
        assertThat(got.get(0).payload()).isEqualTo(next);
        assertThat(rig.port.counters().rxTruncated - truncatedBefore).isEqualTo(1);
        assertThat(rig.fillEntries()).isEqualTo(AfXdpPort.RX_CHUNKS);
    }
}
