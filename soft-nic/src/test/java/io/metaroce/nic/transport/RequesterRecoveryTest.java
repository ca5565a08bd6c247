package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RequesterHarness.SQ_PSN;
import static io.metaroce.nic.transport.RequesterHarness.data;
import static io.metaroce.nic.transport.RequesterHarness.onPath;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.transport.RequesterHarness.Pkt;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One requester stepped by hand against a peer the test plays (spec sections 6 and 8): selective
 * retransmission of exactly the lost RSNs on another path with a fresh PSN, tail-loss probes,
 * per-path RTOs from the RTT estimator, and their backoff.
 */
class RequesterRecoveryTest {

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void exactlyTheLostPacketsAreResentOnAnotherPathWithAFreshPsn(long seed) throws Exception {
        Random rnd = new Random(seed);
        try (RequesterHarness h = new RequesterHarness(4)) {
            h.post(32);
            List<Pkt> sent = data(h.pump());
            assertThat(sent).hasSize(32);
            assertThat(sent).extracting(Pkt::rsn).doesNotHaveDuplicates();
            for (int p = 0; p < 4; p++) {
                List<Pkt> on = onPath(sent, p);
                assertThat(on).as("sprayed over every path").hasSize(8);
                for (int k = 0; k < on.size(); k++) {
                    assertThat(on.get(k).psn())
                            .as("path %d PSNs count from 0", p)
                            .isEqualTo(k);
                }
            }
            // Lose a random set; the last packet of each path always arrives (it reveals the gaps).
            Set<Integer> lastOfPath = new HashSet<>();
            for (int p = 0; p < 4; p++) {
                List<Pkt> on = onPath(sent, p);
                lastOfPath.add(on.get(on.size() - 1).rsn());
            }
            List<Pkt> arrived = new ArrayList<>();
            Map<Integer, Pkt> lost = new HashMap<>();
            for (Pkt p : sent) {
                if (!lastOfPath.contains(p.rsn()) && rnd.nextInt(4) == 0) {
                    lost.put(p.rsn(), p);
                } else {
                    arrived.add(p);
                }
            }
            if (lost.isEmpty()) {
                lost.put(sent.get(0).rsn(), sent.get(0));
                arrived.remove(sent.get(0));
            }
            long lossesBefore = h.dp().counters.pathLosses;
            h.clock.addAndGet(20_000);
            h.ackPlaced(arrived, RcRequester.WINDOW);
            List<Pkt> out = h.pump();
            List<Pkt> resent = data(out);
            assertThat(resent).allMatch(Pkt::retransmit);
            assertThat(resent)
                    .extracting(Pkt::rsn)
                    .as("exactly the lost RSNs, once each, never go-back-N")
                    .containsExactlyInAnyOrderElementsOf(lost.keySet());
            assertThat(h.dp().counters.pathLosses - lossesBefore).isEqualTo(lost.size());
            int[] nextPsn = {8, 8, 8, 8};
            for (Pkt r : out) { // data and any PROBE of a path that turned SUSPECT, in send order
                assertThat(r.psn()).as("a fresh PSN of path %d", r.path()).isEqualTo(nextPsn[r.path()]++);
                if (r.isData()) {
                    Pkt original = lost.get(r.rsn());
                    assertThat(r.path())
                            .as("RSN %d resent on another path", r.rsn())
                            .isNotEqualTo(original.path());
                    assertThat(h.path(r.path()).state).as("on a healthy path").isEqualTo(Path.ACTIVE);
                    assertThat(r.msn()).isEqualTo(original.msn());
                }
            }
            // Nothing more is sent until something else happens.
            assertThat(data(h.step(1_000))).isEmpty();
            h.clock.addAndGet(20_000);
            h.ackPlaced(resent, RcRequester.WINDOW);
            h.pump();
            assertThat(h.completions).hasSize(32);
            for (int i = 0; i < 32; i++) {
                assertThat(h.completions.get(i).wrId()).isEqualTo(i);
                assertThat(h.completions.get(i).status()).isEqualTo(Ibv.WC_SUCCESS);
            }
            assertThat(h.req().unacknowledged()).isZero();
            for (int p = 0; p < 4; p++) {
                Path path = h.path(p);
                assertThat(path.inflightBytes).isZero();
                assertThat(path.state)
                        .as("path %d with %d losses", p, path.losses)
                        .isEqualTo(path.losses >= 3 ? Path.SUSPECT : Path.ACTIVE);
            }
        }
    }

    @Test
    void theLastCumulativeAckOfAVanishedPeerCompletesWhatItPlaced() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            h.post(3); // one packet each: RSNs SQ_PSN .. SQ_PSN + 2
            List<Pkt> sent = data(h.pump());
            assertThat(sent).hasSize(3);
            // The peer placed the first two, its ACK was lost and its QP was destroyed: its daemon's
            // DISCONNECT says so, over the connection manager.
            h.req().onFinalAck(h.dp(), SQ_PSN + 2, h.now());
            h.pump();
            assertThat(h.completions).extracting(c -> c.wrId()).containsExactly(0L, 1L);
            assertThat(h.completions).allMatch(c -> c.status() == Ibv.WC_SUCCESS);
            assertThat(h.pending()).isEqualTo(1);
            // Nonsense (behind una, beyond what was sent) changes nothing.
            h.req().onFinalAck(h.dp(), SQ_PSN + 1, h.now());
            h.req().onFinalAck(h.dp(), SQ_PSN + 9, h.now());
            h.pump();
            assertThat(h.completions).hasSize(2);
        }
    }

    @Test
    void aLostRetransmissionIsResentAgainSelectively() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            h.post(8);
            List<Pkt> sent = data(h.pump());
            Pkt victim = onPath(sent, 1).get(0);
            List<Pkt> arrived = new ArrayList<>(sent);
            arrived.remove(victim);
            h.clock.addAndGet(20_000);
            h.ackPlaced(arrived, RcRequester.WINDOW);
            List<Pkt> first = h.pump();
            assertThat(first).hasSize(1);
            Pkt retx = first.get(0);
            assertThat(retx.rsn()).isEqualTo(victim.rsn());
            // The retransmission is lost too; a later packet on its path reveals it.
            h.post(4);
            List<Pkt> more = data(h.pump());
            Pkt later = more.stream()
                    .filter(p -> p.path() == retx.path())
                    .findFirst()
                    .orElseThrow();
            h.clock.addAndGet(20_000);
            h.ackPlaced(List.of(later), RcRequester.WINDOW);
            List<Pkt> second = h.pump();
            assertThat(second).extracting(Pkt::rsn).containsExactly(victim.rsn());
            assertThat(second.get(0).path()).isNotEqualTo(retx.path());
        }
    }

    @Test
    void tailLossProbeFiresAfterThePtoAndRevealsTheLosses() throws Exception {
        // The TLP alone: cross-path loss detection (CrossPathLossTest) would find the same
        // tail lost at srtt + 4 rttvar; push it out of the way.
        try (RequesterHarness h =
                new RequesterHarness(TransportSettings.SIMULATION.withPaths(4).withLossDetectVarFactor(1_000))) {
            // A clean round gives every path an RTT sample: srtt 20 us, rttvar 10 us, PTO 60 us.
            h.post(8);
            h.cleanRound(20_000);
            h.pump();
            Path p2 = h.path(2);
            assertThat(p2.srttNs).isEqualTo(20_000);
            assertThat(p2.rttvarNs).isEqualTo(10_000);
            assertThat(p2.ptoNs(h.dp().rtoInitialNs, h.dp().tlpMinNs)).isEqualTo(60_000);
            // Next round: both packets of path 2 (its tail) vanish.
            h.post(8);
            List<Pkt> sent = data(h.pump());
            long sentAt = h.now();
            List<Pkt> tail = onPath(sent, 2);
            assertThat(tail).hasSize(2);
            List<Pkt> arrived = new ArrayList<>(sent);
            arrived.removeAll(tail);
            h.clock.addAndGet(20_000);
            h.ackPlaced(arrived, RcRequester.WINDOW);
            assertThat(h.pump())
                    .as("no report of path 2 yet, nothing to resend")
                    .isEmpty();
            h.clock.set(sentAt + 59_999);
            assertThat(h.pump()).as("before the PTO").isEmpty();
            h.clock.set(sentAt + 60_000);
            List<Pkt> tlp = h.pump();
            assertThat(tlp).hasSize(1);
            Pkt probe = tlp.get(0);
            assertThat(probe.rsn())
                    .as("the newest unacknowledged RSN")
                    .isEqualTo(tail.get(1).rsn());
            assertThat(probe.path()).as("on the same path").isEqualTo(2);
            assertThat(probe.psn()).isEqualTo(tail.get(1).psn() + 1);
            assertThat(probe.flags() & Wire.FLAG_ACK_NOW).isNotZero();
            assertThat(p2.tlps).isEqualTo(1);
            assertThat(h.step(20_000)).as("one TLP per silence").isEmpty();
            // The probe arrives: its report shows the PSNs before it lost; only the first RSN is
            // still missing (the second arrived as the probe) and goes on another path.
            h.ackPlaced(tlp, RcRequester.WINDOW);
            List<Pkt> resent = h.pump();
            assertThat(resent).extracting(Pkt::rsn).containsExactly(tail.get(0).rsn());
            assertThat(resent.get(0).path()).isNotEqualTo(2);
            assertThat(p2.losses).as("the probe delivered the second RSN").isEqualTo(1);
            h.clock.addAndGet(20_000);
            h.ackPlaced(resent, RcRequester.WINDOW);
            h.pump();
            assertThat(h.completions).hasSize(16);
            assertThat(h.req().unacknowledged()).isZero();
        }
    }

    @Test
    void anOvertakenAckStillResolvesThePathsItReports() throws Exception {
        // ACKs are sprayed over the paths and reorder. The responder reports a path only when it
        // got something new on it, so an ACK overtaken by a later one may hold the only report of
        // a message's last packets on some paths: dropped whole, as an ACK behind una once was,
        // those paths waited for their tail-loss probe (and their peers took its copy as a
        // duplicate) although everything had arrived.
        try (RequesterHarness h =
                new RequesterHarness(TransportSettings.SIMULATION.withPaths(4).withLossDetectVarFactor(1_000))) {
            h.post(8);
            h.cleanRound(20_000);
            h.pump();
            int oldCum = h.cum;
            h.post(8);
            List<Pkt> sent = data(h.pump());
            assertThat(sent).hasSize(8);
            h.clock.addAndGet(20_000);
            h.place(sent);
            // The later ACK arrives first: every RSN, reports of paths 2 and 3 ...
            h.ack(RcRequester.WINDOW, 2, 0, highestPsn(sent, 2), 3, 0, highestPsn(sent, 3));
            // ... then the earlier one: a cumulative RSN behind una, reports of paths 0 and 1.
            int newCum = h.cum;
            h.cum = oldCum;
            h.ack(RcRequester.WINDOW, 0, 0, highestPsn(sent, 0), 1, 0, highestPsn(sent, 1));
            h.cum = newCum;
            h.pump();
            assertThat(h.dp().counters.staleAcks).isEqualTo(1);
            assertThat(h.completions).hasSize(16);
            for (int i = 0; i < 4; i++) {
                assertThat(h.path(i).hasInflight()).as("path %d resolved", i).isFalse();
            }
            for (int t = 0; t < 100; t++) {
                assertThat(h.step(100_000)).as("nothing to probe or resend").isEmpty();
            }
            for (int i = 0; i < 4; i++) {
                assertThat(h.path(i).tlps + h.path(i).timeouts).isZero();
                assertThat(h.path(i).losses).isZero();
            }
        }
    }

    private static int highestPsn(List<Pkt> pkts, int path) {
        return onPath(pkts, path).stream().mapToInt(Pkt::psn).max().orElseThrow();
    }

    @Test
    void tailLossProbeWaitsForItsFloor() throws Exception {
        // The daemon's real-port floors: RTO 10 ms, TLP 2 ms (srtt + 4 rttvar alone is shorter
        // than a scheduling stall, and each stall sent a duplicate probe on every path); the TLP
        // alone, as above.
        TransportSettings s = TransportSettings.SIMULATION.withPaths(4).withLossDetectVarFactor(1_000);
        try (RequesterHarness h = new RequesterHarness(s.withFloors(10_000_000L, 2_000_000L, s.ccSlackMinNs()))) {
            Path p2 = h.path(2);
            assertThat(p2.ptoNs(h.dp().rtoInitialNs, h.dp().tlpMinNs))
                    .as("before any sample")
                    .isEqualTo(h.dp().rtoInitialNs / 2);
            assertThat(p2.ptoNs(h.dp().rtoInitialNs, 3_000_000L))
                    .as("the floor wins")
                    .isEqualTo(3_000_000L);
            h.post(8);
            h.cleanRound(20_000);
            h.pump();
            assertThat(p2.ptoNs(h.dp().rtoInitialNs, h.dp().tlpMinNs))
                    .as("60 us from the estimator, raised to the floor")
                    .isEqualTo(2_000_000L);
            h.post(8);
            List<Pkt> sent = data(h.pump());
            long sentAt = h.now();
            List<Pkt> tail = onPath(sent, 2);
            assertThat(tail).hasSize(2);
            List<Pkt> arrived = new ArrayList<>(sent);
            arrived.removeAll(tail);
            h.clock.addAndGet(20_000);
            h.ackPlaced(arrived, RcRequester.WINDOW);
            h.pump();
            for (long t = 60_000; t < 2_000_000; t += 10_000) {
                h.clock.set(sentAt + t);
                assertThat(h.pump())
                        .as("no probe %d us after the tail", t / 1000)
                        .isEmpty();
            }
            h.clock.set(sentAt + 2_000_000);
            List<Pkt> tlp = h.pump();
            assertThat(tlp).extracting(Pkt::rsn).containsExactly(tail.get(1).rsn());
            assertThat(tlp.get(0).path()).isEqualTo(2);
            assertThat(p2.tlps).isEqualTo(1);
            assertThat(p2.timeouts).isZero();
        }
    }

    @Test
    void pathRtoFollowsTheEstimatorAndBacksOff() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            Path p = h.path(0);
            assertThat(p.rtoNs).as("initial RTO before any sample").isEqualTo(5_000_000L);
            h.post(1);
            h.cleanRound(100_000); // srtt 100, rttvar 50: RTO 300 us
            h.pump();
            assertThat(p.srttNs).isEqualTo(100_000);
            assertThat(p.rttvarNs).isEqualTo(50_000);
            assertThat(p.rtoNs).isEqualTo(300_000);
            h.post(1);
            h.cleanRound(300_000); // rttvar 87.5, srtt 125: RTO 475 us
            h.pump();
            assertThat(p.rttvarNs).isEqualTo(87_500);
            assertThat(p.srttNs).isEqualTo(125_000);
            assertThat(p.minRttNs).isEqualTo(100_000);
            assertThat(p.rtoNs).isEqualTo(475_000);
            for (int i = 0; i < 40; i++) { // steady 10 us samples: the 200 us floor holds
                h.post(1);
                h.cleanRound(10_000);
                h.pump();
            }
            assertThat(p.rtoNs).isEqualTo(200_000);
            long rto = p.rtoNs;
            // Now the peer goes silent: one packet, resent at each path timeout, RTO doubling.
            h.post(1);
            List<Pkt> first = data(h.pump());
            assertThat(first).hasSize(1);
            long t = h.now();
            long pto = p.ptoNs(h.dp().rtoInitialNs, h.dp().tlpMinNs);
            List<Long> retxTimes = new ArrayList<>();
            for (long step = 0; step < 3_500_000; step += 1_000) {
                h.clock.set(t + step);
                for (Pkt x : h.pump()) {
                    if (x.isData() && (x.flags() & Wire.FLAG_ACK_NOW) == 0) {
                        assertThat(x.rsn()).isEqualTo(first.get(0).rsn());
                        retxTimes.add(step);
                    }
                }
            }
            assertThat(pto).isLessThan(rto);
            assertThat(retxTimes)
                    .as("timeouts after RTO, then 2x, 4x, 8x (each from the resend)")
                    .startsWith(rto, rto + 2 * rto, rto + 6 * rto, rto + 14 * rto);
            assertThat(p.timeouts).isGreaterThanOrEqualTo(4);
            assertThat(p.tlps).as("a TLP in each silence").isGreaterThanOrEqualTo(4);
            // A report restarts the estimator's RTO (no more backoff).
            h.place(first);
            h.ack(RcRequester.WINDOW, 0, 0, p.nextPsn - 1);
            h.step(1_000);
            assertThat(p.rtoNs).isLessThanOrEqualTo(h.dp().rtoMaxNs).isLessThan(rto * 16);
            assertThat(h.req().unacknowledged()).isZero();
        }
    }

    @Test
    void packetsPerPathAreFifoNumberedAcrossRetransmissionsAndProbes() throws Exception {
        try (RequesterHarness h = new RequesterHarness(3)) {
            Map<Integer, Integer> next = new HashMap<>();
            Random rnd = new Random(9);
            for (int round = 0; round < 30; round++) {
                h.post(1 + rnd.nextInt(12));
                List<Pkt> sent = h.pump();
                for (Pkt x : sent) {
                    int want = next.getOrDefault(x.path(), 0);
                    assertThat(x.psn()).as("path %d", x.path()).isEqualTo(want);
                    next.put(x.path(), want + 1);
                }
                List<Pkt> arrived = new ArrayList<>();
                for (Pkt x : sent) {
                    if (rnd.nextInt(6) != 0) {
                        arrived.add(x);
                    }
                }
                h.clock.addAndGet(15_000 + rnd.nextInt(10_000));
                h.ackPlaced(arrived, RcRequester.WINDOW);
            }
            for (int i = 0; i < 2000 && (h.req().unacknowledged() > 0 || h.req().outstanding() > 0); i++) {
                List<Pkt> sent = h.step(20_000);
                for (Pkt x : sent) {
                    int want = next.getOrDefault(x.path(), 0);
                    assertThat(x.psn()).as("path %d", x.path()).isEqualTo(want);
                    next.put(x.path(), want + 1);
                }
                if (!sent.isEmpty()) {
                    h.ackPlaced(sent, RcRequester.WINDOW);
                }
            }
            h.step(1_000);
            assertThat(h.req().unacknowledged()).isZero();
            assertThat(h.req().outstanding()).isZero();
            assertThat(h.completions).extracting(c -> c.status()).containsOnly(Ibv.WC_SUCCESS);
            for (int i = 0; i < h.completions.size(); i++) {
                assertThat(h.completions.get(i).wrId()).isEqualTo(i);
            }
            assertThat(h.completions.size()).isPositive();
            assertThat(SQ_PSN + h.completions.size()).isEqualTo(h.cum);
        }
    }

    /**
     * T-6.6: after an RNR NAK the requester sends nothing for the timer's delay, counted from when
     * it read the NAK. Its receive batch began 1 ms earlier (the thread preempted between reading
     * the clock and polling): the wait still starts at the NAK.
     */
    @Test
    void anRnrWaitIsCountedFromTheNakNotFromTheStartOfItsBatch() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            h.post(1);
            List<Pkt> sent = data(h.pump());
            assertThat(sent).hasSize(1);
            long batchStartNs = h.now();
            h.clock.addAndGet(1_000_000);
            h.req().onNak(h.dp(), sent.get(0).rsn(), Wire.NAK_RNR, 26, batchStartNs);
            long delayNs = RcRequester.rnrDelayNs(26);
            assertThat(delayNs).isEqualTo(81_920_000L);
            // past the wait counted from the batch's start, short of the one counted from the NAK
            assertThat(data(h.step(delayNs - 500_000)))
                    .as("nothing before the RNR timer ran out")
                    .isEmpty();
            assertThat(data(h.step(600_000)))
                    .as("the same request again once it did")
                    .extracting(Pkt::rsn)
                    .containsExactly(sent.get(0).rsn());
        }
    }
}
