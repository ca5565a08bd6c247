package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RequesterHarness.PKT;
import static io.metaroce.nic.transport.RequesterHarness.data;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.transport.RequesterHarness.Pkt;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Per-path congestion control (spec section 11) and the receive window (section 7), one path,
 * driven by hand-made ACKs: additive increase below the delay target, multiplicative decrease
 * above it and on loss or ECN (at most once per srtt), the BDP cap, and a window of 1 that holds
 * the sender back.
 */
class CongestionControlTest {
    static final long RTT = 20_000;

    @Test
    void windowGrowsBelowTheDelayTargetAndStaysUnderTheCaps() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            Path p = h.path(0);
            assertThat(p.cwndBytes).as("initial window 16 P").isEqualTo(16L * RequesterHarness.P);
            long prev = p.cwndBytes;
            int grew = 0;
            for (int round = 0; round < 40; round++) {
                h.post(Math.max(0, 200 - h.pending()));
                // this duty cycle takes the previous round's ACK, then sends the next window
                List<Pkt> sent = h.cleanRound(RTT);
                assertThat(sent).isNotEmpty();
                assertThat(p.cwndBytes).as("below the target: never less").isGreaterThanOrEqualTo(prev);
                assertThat(p.inflightBytes).as("a window's worth").isLessThanOrEqualTo(p.cwndBytes);
                grew += p.cwndBytes > prev ? 1 : 0;
                prev = p.cwndBytes;
                assertThat(p.cwndBytes).isLessThanOrEqualTo((long) RcRequester.WINDOW * PKT);
                if (p.deliveryRateBps > 0) {
                    long bdp = 2 * p.deliveryRateBps * p.minRttNs / 1_000_000_000L;
                    assertThat(p.cwndBytes).as("BDP cap").isLessThanOrEqualTo(Math.max(16L * PKT, bdp));
                }
            }
            assertThat(p.losses + p.timeouts + p.tlps).isZero();
            assertThat(grew).isGreaterThanOrEqualTo(10);
            assertThat(p.cwndBytes).as("grew well past the initial window").isGreaterThan(24L * PKT);
        }
    }

    @Test
    void anApplicationLimitedPathIsCappedAtItsBdp() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            Path p = h.path(0);
            for (int round = 0; round < 60; round++) {
                h.post(2); // 2 packets per RTT: 2 * rate * min_rtt is 4 packets, under the 16-packet floor
                h.cleanRound(RTT);
                h.pump();
                assertThat(p.cwndBytes).isLessThanOrEqualTo(16L * PKT);
            }
            assertThat(p.deliveryRateBps).isPositive();
            assertThat(p.cwndBytes).as("held at max(16 packets, 2 BDP)").isEqualTo(16L * PKT);
        }
    }

    @Test
    void delayAboveTheTargetDecreasesMultiplicativelyOncePerSrtt() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            Path p = h.path(0);
            for (int round = 0; round < 5; round++) {
                h.post(8);
                h.cleanRound(RTT);
                h.pump();
            }
            assertThat(p.minRttNs).isEqualTo(RTT);
            long before = p.cwndBytes;
            // target = min_rtt + max(min_rtt / 4, 20 us) = 40 us; a 100 us sample: x max(0.5, 1 - 0.8 * 60 / 100)
            h.post(2);
            List<Pkt> sent = data(h.pump());
            h.clock.addAndGet(100_000);
            h.ackPlaced(sent.subList(0, 1), RcRequester.WINDOW);
            h.pump();
            assertThat(p.cwndBytes).isEqualTo((long) (before * 0.52));
            long once = p.cwndBytes;
            h.ackPlaced(sent.subList(1, 2), RcRequester.WINDOW); // another late sample at once
            h.pump();
            assertThat(p.cwndBytes).as("at most once per srtt").isEqualTo(once);
        }
    }

    @Test
    void theSlackFloorKeepsRttNoiseBelowItFromCuttingTheWindow() throws Exception {
        // A real host's samples: min RTT 20 us, then up to a millisecond more of scheduling noise.
        // With the SimFabric's 20 us floor every noisy sample reads as a queue and the window
        // ends at a packet or two; with the daemon's 1 ms floor it never shrinks.
        assertThat(windowAfterNoise(20_000L))
                .as("20 us slack: pinned near the minimum")
                .isLessThanOrEqualTo(2L * PKT);
        try (RequesterHarness h = new RequesterHarness(daemonFloors(1_000_000L))) {
            Path p = h.path(0);
            long w = noisyRounds(h);
            assertThat(w).as("1 ms slack: never cut").isGreaterThanOrEqualTo(16L * RequesterHarness.P);
            // A sample beyond the floor is still congestion: target = 20 us + max(5 us, 1 ms),
            // a 5 ms sample cuts by max(0.5, 1 - 0.8 * (5000 - 1020) / 5000) = 0.5.
            h.clock.addAndGet(5_000_000L); // past one srtt since any decrease (there was none)
            h.post(1);
            List<Pkt> sent = data(h.pump());
            h.clock.addAndGet(5_000_000L);
            h.ackPlaced(sent, RcRequester.WINDOW);
            h.pump();
            assertThat(p.lastRttNs).isEqualTo(5_000_000L);
            assertThat(p.cwndBytes).isEqualTo(w / 2);
        }
    }

    /** One path under the daemon's timer floors (RTO 10 ms, TLP 2 ms) and the given delay-target slack. */
    private static TransportSettings daemonFloors(long slackNs) {
        return TransportSettings.SIMULATION.withPaths(1).withFloors(10_000_000L, 2_000_000L, slackNs);
    }

    private static long windowAfterNoise(long slackNs) throws Exception {
        try (RequesterHarness h = new RequesterHarness(daemonFloors(slackNs))) {
            return noisyRounds(h);
        }
    }

    /**
     * 40 rounds with RTT samples in [20 us, 1020 us) (fixed seed), under the daemon's timer
     * floors (so that only the delay target differs); returns the final window.
     */
    private static long noisyRounds(RequesterHarness h) {
        Path p = h.path(0);
        Random rnd = new Random(11);
        for (int round = 0; round < 40; round++) {
            h.post(Math.max(0, 64 - h.pending()));
            h.cleanRound(RTT + rnd.nextLong(1_000_000L)); // takes the previous round's ACK first
            if (h.dp().ccSlackMinNs >= 1_000_000L) {
                // grows, or is held by the BDP cap, which never goes below 16 packets
                assertThat(p.cwndBytes).as("round %d", round).isGreaterThanOrEqualTo(16L * RequesterHarness.P);
            }
        }
        h.pump(); // the last ACK
        assertThat(p.minRttNs).isBetween(RTT, RTT + 1_000_000L);
        assertThat(p.losses + p.timeouts + p.tlps).isZero();
        return p.cwndBytes;
    }

    @Test
    void lossAndEcnHalveTheWindowOncePerSrtt() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            Path p = h.path(0);
            for (int round = 0; round < 5; round++) {
                h.post(8);
                h.cleanRound(RTT);
                h.pump();
            }
            long w = p.cwndBytes;
            // A loss: halved.
            h.post(4);
            List<Pkt> sent = data(h.pump());
            h.clock.addAndGet(RTT);
            h.ackPlaced(sent.subList(1, 4), RcRequester.WINDOW);
            List<Pkt> retx = data(h.pump());
            assertThat(retx).extracting(Pkt::rsn).containsExactly(sent.get(0).rsn());
            assertThat(p.cwndBytes).isEqualTo(w / 2);
            w = p.cwndBytes;
            // Right after, an ECN mark: within the same srtt, no second decrease.
            h.place(retx);
            h.ack(RcRequester.WINDOW, 0, 1, retx.get(0).psn());
            h.pump();
            assertThat(p.ecnMarks).isEqualTo(1);
            assertThat(p.cwndBytes).as("once per srtt").isEqualTo(w);
            // A clean RTT later, a CE mark halves it.
            h.post(4);
            sent = data(h.pump());
            h.clock.addAndGet(RTT);
            h.place(sent);
            h.ack(RcRequester.WINDOW, 0, 3, sent.get(sent.size() - 1).psn());
            h.pump();
            assertThat(p.ecnMarks).isEqualTo(4);
            assertThat(p.losses).isEqualTo(1);
            assertThat(p.cwndBytes).isEqualTo(Math.max(PKT, w / 2));
            assertThat(h.req().unacknowledged()).isZero();
        }
    }

    @Test
    void aReceiveWindowOfOneHoldsTheSenderBack() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            h.post(40);
            List<Pkt> first = data(h.pump());
            assertThat(first).hasSize(32); // one burst
            h.clock.addAndGet(RTT);
            h.ackPlaced(first, 1); // the responder falls behind: window 1
            List<Pkt> next = data(h.pump());
            assertThat(next).as("one packet outstanding at most").hasSize(1);
            assertThat(h.req().receiveWindow()).isEqualTo(1);
            for (int i = 0; i < 5; i++) {
                assertThat(data(h.step(1_000))).noneMatch(p -> !p.retransmit());
            }
            h.clock.addAndGet(RTT);
            h.ackPlaced(next, 1);
            assertThat(data(h.pump())).hasSize(1);
            h.clock.addAndGet(RTT);
            h.ack(RcRequester.WINDOW); // caught up: the full window again
            List<Pkt> rest = data(h.pump());
            assertThat(rest).hasSize(40 - 32 - 2);
        }
    }
}
