package io.metaroce.nic.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.metaroce.nic.port.Port;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Each impairment of the simulated fabric, checked on the frames themselves with seeded runs. */
class SimFabricTest {
    static final int IP_A = 0xC6120001; // 198.18.0.1
    static final int IP_B = 0xC6120002;
    static final int UDP = 4793;
    static final ValueLayout.OfLong SEQ = ValueLayout.JAVA_LONG_UNALIGNED;

    final SimClock clock = new SimClock(1_000_000_000L);
    SimFabric fabric;
    SimFabric.SimPort a;
    SimFabric.SimPort b;

    /** What a receiver saw: sequence number (first 8 bytes), arrival time, length, source. */
    record Rx(long seq, long atNs, int length, int srcIp, int srcPort, byte last) {}

    final class Recorder implements Port.FrameHandler {
        final List<Rx> frames = new ArrayList<>();

        @Override
        public void onFrame(MemorySegment frame, ByteBuffer view, int length, int srcIp, int srcPort, int ecn) {
            assertThat(view.remaining()).isEqualTo(length);
            frames.add(new Rx(
                    frame.get(SEQ, 0),
                    clock.nowNs(),
                    length,
                    srcIp,
                    srcPort,
                    frame.get(ValueLayout.JAVA_BYTE, length - 1)));
        }
    }

    SimFabric fabric(long seed, int links) {
        fabric = new SimFabric(seed, links, clock, 2048, 4096, 4);
        a = fabric.attach(IP_A, UDP);
        b = fabric.attach(IP_B, UDP);
        return fabric;
    }

    @AfterEach
    void close() {
        if (fabric != null) {
            fabric.close();
        }
    }

    static void send(Port from, int dstIp, long seq, int length, int entropy) {
        MemorySegment f = from.claim();
        f.set(SEQ, 0, seq);
        f.set(ValueLayout.JAVA_BYTE, length - 1, (byte) seq);
        from.commit(length, dstIp, UDP, entropy);
    }

    /** Steps the clock by {@code stepNs} until {@code untilNs}, polling {@code port} each step. */
    Recorder run(Port port, long untilNs, long stepNs, Recorder r) {
        while (clock.nowNs() < untilNs) {
            clock.advance(stepNs);
            while (port.poll(r) == SimFabric.RX_BATCH) {
                // drain everything that has arrived
            }
        }
        return r;
    }

    Recorder drain(Port port) {
        return run(port, clock.nowNs() + 1_000_000_000L, 1000, new Recorder());
    }

    @Test
    void aFrameArrivesAfterItsDelayIntactWithItsSource() {
        fabric(1, 1).link(0).delayNs(5_000);
        send(a, IP_B, 77, 100, 0);
        Recorder r = new Recorder();
        long t0 = clock.nowNs();
        run(b, t0 + 4_999, 4_999, r);
        assertThat(r.frames).isEmpty();
        run(b, t0 + 5_000, 1, r);
        assertThat(r.frames).containsExactly(new Rx(77, t0 + 5_000, 100, IP_A, UDP, (byte) 77));
        assertThat(fabric.link(0).deliveredFrames).isEqualTo(1);
        assertThat(fabric.link(0).deliveredBytes).isEqualTo(100);
        assertThat(b.counters().rxFrames).isEqualTo(1);
        assertThat(a.counters().txFrames).isEqualTo(1);
        assertThat(a.flush()).isEqualTo(1);
        assertThat(b.fd()).isEqualTo(-1);
    }

    @Test
    void theEntropySelectorAimsAtALinkAndDifferentDelaysReorderAcrossLinks() {
        fabric(1, 4).selector(LinkSelector.ENTROPY_MOD);
        for (int i = 0; i < 4; i++) {
            fabric.link(i).delayNs(10_000 - i * 2_000L);
        }
        for (int i = 0; i < 8; i++) {
            send(a, IP_B, i, 64, i);
        }
        Recorder r = drain(b);
        assertThat(r.frames).extracting(Rx::seq).containsExactly(3L, 7L, 2L, 6L, 1L, 5L, 0L, 4L);
        for (int i = 0; i < 4; i++) {
            assertThat(fabric.link(i).deliveredFrames).isEqualTo(2);
        }
    }

    @Test
    void theHashSelectorKeepsAPathOnOneLinkAndSpreadsPathsOverAllLinks() {
        int[] perLink = new int[8];
        for (int e = 0; e < 256; e++) {
            int l = LinkSelector.HASH.link(IP_A, IP_B, UDP, e, 8);
            assertThat(LinkSelector.HASH.link(IP_A, IP_B, UDP, e, 8)).isEqualTo(l);
            perLink[l]++;
        }
        for (int n : perLink) {
            assertThat(n).isBetween(16, 48); // 32 expected
        }
        assertThat(LinkSelector.HASH.link(IP_B, IP_A, UDP, 5, 8)).isBetween(0, 7);
    }

    @Test
    void aLinkIsFifoEvenWhenItsDelayShrinksAndFramesDiffer() {
        fabric(3, 1).link(0).delayNs(50_000).rateBitsPerSec(1_000_000_000L);
        java.util.Random rnd = new java.util.Random(3);
        for (int i = 0; i < 200; i++) {
            send(a, IP_B, i, 16 + rnd.nextInt(2000), 0);
            if (i == 100) {
                fabric.link(0).delayNs(1_000);
            }
            clock.advance(rnd.nextInt(3_000));
        }
        Recorder r = drain(b);
        assertThat(r.frames).extracting(Rx::seq).isSorted().hasSize(200);
    }

    @Test
    void jitterIsBoundedAndReordersWithinALinkOnlyWhenEnabled() {
        fabric(4, 1).link(0).delayNs(10_000).jitterNs(20_000);
        long t0 = clock.nowNs();
        for (int i = 0; i < 1000; i++) {
            send(a, IP_B, i, 64, 0);
        }
        Recorder r = run(b, t0 + 100_000, 100, new Recorder());
        assertThat(r.frames).hasSize(1000);
        assertThat(r.frames).allSatisfy(x -> assertThat(x.atNs() - t0).isBetween(10_000L, 30_000L));
        assertThat(r.frames)
                .extracting(Rx::seq)
                .isNotEqualTo(r.frames.stream().map(Rx::seq).sorted().toList());
    }

    @Test
    void randomLossMatchesItsRateWithinStatisticalBounds() {
        fabric(5, 2).selector(LinkSelector.ENTROPY_MOD).link(0).lossRate(0.01);
        int n = 100_000;
        for (int i = 0; i < n; i++) {
            send(a, IP_B, i, 64, i & 1);
            if ((i & 1023) == 0) {
                drain(b);
            }
        }
        drain(b);
        SimLink lossy = fabric.link(0);
        // binomial: mean 500, sigma 22; 5 sigma
        assertThat(lossy.droppedRandom).isBetween(390L, 610L);
        assertThat(lossy.deliveredFrames).isEqualTo(n / 2 - lossy.droppedRandom);
        assertThat(fabric.link(1).droppedFrames()).isZero();
        assertThat(fabric.link(1).deliveredFrames).isEqualTo(n / 2);
    }

    @Test
    void burstLossHasItsLongRunRateAndBurstLength() {
        // enter 0.002, leave 0.2, lose all in bad: loss 0.002 / 0.202 = 0.99 %, bursts of 5 on average
        fabric(6, 1).link(0).burstLoss(0.002, 0.2, 1.0);
        int n = 200_000;
        Recorder r = new Recorder();
        for (int i = 0; i < n; i++) {
            send(a, IP_B, i, 64, 0);
            if ((i & 1023) == 1023) {
                run(b, clock.nowNs() + 1_000, 1_000, r);
            }
        }
        run(b, clock.nowNs() + 1_000, 1_000, r);
        long expectedLost = n - r.frames.size();
        assertThat(fabric.link(0).droppedBurst).isEqualTo(expectedLost);
        assertThat((double) expectedLost / n).isCloseTo(0.0099, within(0.0025));
        // gaps in the received sequence are the bursts
        long bursts = 0;
        long prev = -1;
        for (Rx x : r.frames) {
            if (x.seq() != prev + 1) {
                bursts++;
            }
            prev = x.seq();
        }
        assertThat((double) expectedLost / bursts).isBetween(4.0, 6.0);
    }

    @Test
    void duplicationDeliversIdenticalCopiesRightAfterTheOriginal() {
        fabric(7, 1).link(0).dupRate(0.05);
        int n = 20_000;
        Recorder r = new Recorder();
        for (int i = 0; i < n; i++) {
            send(a, IP_B, i, 100 + (i % 50), 0);
            if ((i & 255) == 255) {
                run(b, clock.nowNs() + 1_000, 1_000, r);
            }
        }
        run(b, clock.nowNs() + 1_000, 1_000, r);
        long dups = fabric.link(0).duplicated;
        assertThat(dups).isBetween(1000L - 5 * 31, 1000L + 5 * 31);
        assertThat(r.frames).hasSize(n + (int) dups);
        long seen = 0;
        for (int i = 1; i < r.frames.size(); i++) {
            Rx x = r.frames.get(i);
            Rx p = r.frames.get(i - 1);
            if (x.seq() == p.seq()) {
                assertThat(x).isEqualTo(p); // same bytes, same length, same arrival
                seen++;
            } else {
                assertThat(x.seq()).isEqualTo(p.seq() + 1);
            }
        }
        assertThat(seen).isEqualTo(dups);
    }

    @Test
    void aBlackholeDropsEverythingUntilLifted() {
        fabric(8, 2).selector(LinkSelector.ENTROPY_MOD).link(1).blackhole(true);
        for (int i = 0; i < 1000; i++) {
            send(a, IP_B, i, 64, i);
        }
        Recorder r = drain(b);
        assertThat(r.frames)
                .hasSize(500)
                .allSatisfy(x -> assertThat(x.seq() % 2).isZero());
        assertThat(fabric.link(1).droppedBlackhole).isEqualTo(500);
        assertThat(fabric.link(1).deliveredFrames).isZero();
        fabric.link(1).blackhole(false);
        send(a, IP_B, 1, 64, 1);
        assertThat(drain(b).frames).extracting(Rx::seq).containsExactly(1L);
    }

    @Test
    void aGrayFailureLosesSomeAndDelaysTheRest() {
        fabric(9, 1).link(0).delayNs(2_000).gray(0.3, 40_000);
        Recorder r = new Recorder();
        int n = 10_000;
        for (int round = 0; round < 10; round++) {
            long t0 = clock.nowNs();
            int before = r.frames.size();
            for (int i = 0; i < n / 10; i++) {
                send(a, IP_B, i, 64, 0);
            }
            run(b, t0 + 100_000, 500, r);
            for (Rx x : r.frames.subList(before, r.frames.size())) {
                assertThat(x.atNs() - t0).isEqualTo(42_000L);
            }
        }
        // binomial: mean 3000, sigma 46; 5 sigma
        assertThat(fabric.link(0).droppedGray).isBetween(3000L - 5 * 46, 3000L + 5 * 46);
        assertThat(r.frames).hasSize(n - (int) fabric.link(0).droppedGray);
        fabric.link(0).gray(0, 0);
        long t1 = clock.nowNs();
        send(a, IP_B, 1, 64, 0);
        assertThat(run(b, t1 + 2_000, 1_000, new Recorder()).frames).hasSize(1);
    }

    @ParameterizedTest(name = "{0} bit/s")
    @ValueSource(longs = {1_000_000_000L, 10_000_000_000L, 25_000_000_000L})
    void theRateLimitGivesTheConfiguredThroughputAndTheQueueIsBounded(long bps) {
        int frame = 1500;
        long queue = 64 * 1024;
        long delay = 1_000;
        fabric(10, 1).link(0).delayNs(delay).rateBitsPerSec(bps).queueBytes(queue);
        // offer twice the capacity for 10 ms, in 1 us steps
        long t0 = clock.nowNs();
        long end = t0 + 10_000_000;
        double offerPerUs = 2.0 * bps / 8e6 / frame;
        long[] sentAt = new long[(int) (offerPerUs * 10_000) + 16];
        double credit = 0;
        int seq = 0;
        Recorder r = new Recorder();
        while (clock.nowNs() < end) {
            credit += offerPerUs;
            while (credit >= 1) {
                sentAt[seq] = clock.nowNs();
                send(a, IP_B, seq++, frame, 0);
                credit -= 1;
            }
            clock.advance(1_000);
            while (b.poll(r) == SimFabric.RX_BATCH) {
                // drain
            }
        }
        SimLink l = fabric.link(0);
        double measuredBps = r.frames.size() * (long) frame * 8 / 0.010;
        assertThat(measuredBps / bps).isCloseTo(1.0, within(0.01));
        assertThat(l.droppedQueue).isPositive();
        assertThat(l.droppedQueue + l.deliveredFrames + fabric.inFlight()).isEqualTo(seq);
        assertThat(r.frames).extracting(Rx::seq).isSorted();
        // a frame waits at most for a full queue (itself included) and its propagation delay
        long maxLatencyNs = (long) Math.ceil(queue * 8e9 / bps) + delay + 1;
        long worst = 0;
        for (Rx x : r.frames) {
            worst = Math.max(worst, x.atNs() - sentAt[(int) x.seq()]);
        }
        assertThat(worst)
                .isLessThanOrEqualTo(maxLatencyNs + 1_000) // + the 1 us poll step
                .isGreaterThan(maxLatencyNs / 2); // and the queue did fill
    }

    /** Every frame's fate and time, folded into one number. */
    long fingerprint(long seed) {
        long start = clock.nowNs();
        fabric(seed, 4);
        fabric.forEachLink(l -> l.delayNs(3_000 + l.index() * 1_000L)
                .jitterNs(l.index() == 3 ? 2_000 : 0)
                .rateBitsPerSec(10_000_000_000L)
                .queueBytes(16 * 1024)
                .lossRate(0.02)
                .dupRate(0.02)
                .burstLoss(0.01, 0.3, 0.8)
                .gray(l.index() == 2 ? 0.1 : 0, 5_000));
        long h = 1;
        Recorder r = new Recorder();
        java.util.Random traffic = new java.util.Random(99);
        for (int i = 0; i < 20_000; i++) {
            send(a, IP_B, i, 64 + traffic.nextInt(1900), traffic.nextInt(65536));
            if ((i & 15) == 15) {
                clock.advance(2_000);
                b.poll(r);
            }
        }
        run(b, clock.nowNs() + 1_000_000, 1_000, r);
        for (Rx x : r.frames) {
            h = h * 31 + x.seq();
            h = h * 31 + x.atNs() - start;
        }
        h = h * 31 + r.frames.size();
        fabric.close();
        fabric = null;
        return h;
    }

    @Test
    void aSeedGivesTheSameRunBitForBitAndAnotherSeedDoesNot() {
        long first = fingerprint(42);
        long again = fingerprint(42);
        long other = fingerprint(43);
        assertThat(again).isEqualTo(first);
        assertThat(other).isNotEqualTo(first);
    }

    @Test
    void anEmptyPoolLosesFramesButNeverFails() {
        fabric = new SimFabric(12, 1, clock, 256, 8, 2);
        a = fabric.attach(IP_A, UDP);
        b = fabric.attach(IP_B, UDP);
        fabric.link(0).delayNs(1_000);
        for (int i = 0; i < 20; i++) {
            send(a, IP_B, i, 64, 0);
        }
        assertThat(fabric.droppedPoolEmpty).isEqualTo(12);
        assertThat(drain(b).frames).hasSize(8);
        assertThat(fabric.freeFrames()).isEqualTo(8); // delivered frames return at the next poll
        send(a, 0x0A000001, 1, 64, 0);
        assertThat(fabric.droppedNoRoute).isEqualTo(1);
    }

    @Test
    void theSteadyStateAllocatesNothing() {
        fabric(13, 8)
                .forEachLink(l -> l.delayNs(2_000)
                        .rateBitsPerSec(10_000_000_000L)
                        .lossRate(0.01)
                        .dupRate(0.01)
                        .burstLoss(0.01, 0.5, 0.5));
        Port.FrameHandler sink = (frame, view, length, srcIp, srcPort, ecn) -> {};
        Runnable round = () -> {
            for (int i = 0; i < 100_000; i++) {
                MemorySegment f = a.claim();
                f.set(SEQ, 0, i);
                a.commit(1024, IP_B, UDP, i & 255);
                a.flush();
                if ((i & 7) == 7) {
                    clock.advance(1_000);
                    while (b.poll(sink) > 0) {
                        // drain
                    }
                }
            }
        };
        round.run(); // warm up (class loading, first compilations)
        round.run();
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = mx.getCurrentThreadAllocatedBytes();
        round.run();
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        assertThat(allocated).as("bytes allocated for 100000 frames").isLessThan(10_000);
    }
}
