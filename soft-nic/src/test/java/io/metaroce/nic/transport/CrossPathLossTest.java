package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RequesterHarness.data;
import static io.metaroce.nic.transport.RequesterHarness.onPath;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.transport.RequesterHarness.Pkt;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Cross-path, time-based loss detection (docs/spec/transport.md section 8): a path that goes
 * silent while later packets on other paths are delivered is found lost within about one of its
 * own smoothed RTTs, well before its RTO; a path that is merely slower is judged by its own RTT
 * and never accused. The engine is stepped with the injected clock.
 */
class CrossPathLossTest {
    static final long RTT = 10_000;

    @Test
    void aSilentPathIsFoundLostWithinItsSmoothedRttsAndItsPacketsGoElsewhere() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            for (int i = 0; i < 6; i++) {
                h.post(16);
                h.cleanRound(RTT);
            }
            h.pump();
            Path p1 = h.path(1);
            assertThat(p1.state).isEqualTo(Path.ACTIVE);
            long srtt = p1.srttNs;
            assertThat(srtt).isEqualTo(RTT);
            // Path 1 goes black: nothing it carries arrives, the others deliver.
            h.post(16);
            List<Pkt> sent = data(h.pump());
            long sentAt = h.now();
            List<Pkt> lostOnes = onPath(sent, 1);
            assertThat(lostOnes).isNotEmpty();
            List<Pkt> arrived = new ArrayList<>(sent);
            arrived.removeAll(lostOnes);
            h.clock.addAndGet(RTT);
            h.ackPlaced(arrived, RcRequester.WINDOW);
            List<Pkt> out = new ArrayList<>();
            long step = 1_000;
            while (p1.state == Path.ACTIVE && h.now() - sentAt < 3 * srtt) {
                out.addAll(h.step(step));
            }
            assertThat(p1.state).as("found within 3 srtt of its own").isEqualTo(Path.SUSPECT);
            assertThat(h.now() - sentAt)
                    .as("detection time")
                    .isLessThan(3 * srtt)
                    .isLessThan(h.dp().rtoMinNs);
            assertThat(p1.timeouts).as("no RTO needed").isZero();
            assertThat(h.dp().counters.crossPathLosses).isEqualTo(lostOnes.size());
            assertThat(p1.losses).isEqualTo(lostOnes.size());
            out.addAll(h.pump());
            List<Pkt> resent = data(out).stream().filter(Pkt::retransmit).toList();
            assertThat(resent)
                    .extracting(Pkt::rsn)
                    .containsExactlyInAnyOrderElementsOf(
                            lostOnes.stream().map(Pkt::rsn).toList());
            assertThat(resent).allMatch(p -> p.path() != 1);
            h.ackPlaced(resent, RcRequester.WINDOW);
            h.pump();
            assertThat(h.pending()).isZero();
            assertThat(h.completions).hasSize(6 * 16 + 16).allMatch(c -> c.status() == 0);
        }
    }

    @Test
    void aSlowerPathIsJudgedByItsOwnRttAndNeverAccused() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            Path p1 = h.path(1);
            // Path 1 takes 4 RTTs, the others one: every round, later packets on paths 0, 2 and 3
            // are delivered long before path 1's.
            for (int round = 0; round < 40; round++) {
                h.post(16);
                List<Pkt> sent = data(h.pump());
                List<Pkt> slow = onPath(sent, 1);
                List<Pkt> fast = new ArrayList<>(sent);
                fast.removeAll(slow);
                h.clock.addAndGet(RTT);
                h.ackPlaced(fast, RcRequester.WINDOW);
                for (int k = 0; k < 3; k++) {
                    h.step(RTT);
                }
                h.ackPlaced(slow, RcRequester.WINDOW);
                h.pump();
            }
            assertThat(p1.srttNs).isGreaterThanOrEqualTo(3 * RTT);
            assertThat(h.dp().counters.crossPathLosses)
                    .as("reordering across paths is no loss")
                    .isZero();
            assertThat(p1.state).isEqualTo(Path.ACTIVE);
            assertThat(p1.losses).isZero();
            // Its packets at the tail are copied to the faster paths (spec 10a rule 4), which is
            // no loss: every resend is opportunistic.
            assertThat(h.dp().counters.dataRetransmits).isEqualTo(h.dp().counters.opportunisticRetransmits);
            assertThat(h.completions).hasSize(40 * 16);
        }
    }

    @Test
    void packetsQueuedBehindEarlierOnesAreNotLostWhenTheEarlierOnesAreAcknowledged() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            for (int i = 0; i < 6; i++) {
                h.post(16);
                h.cleanRound(RTT);
            }
            // One duty cycle hands 16 packets (4 per path) to the port, all stamped with one time;
            // they leave in that order but slowly (the port's TX ring drains behind earlier kicks):
            // the first half is acknowledged after 3 RTTs while the second is still on its way.
            for (int round = 0; round < 20; round++) {
                h.post(16);
                List<Pkt> sent = data(h.pump());
                assertThat(sent).hasSize(16);
                h.clock.addAndGet(3 * RTT);
                h.ackPlaced(sent.subList(0, 8), RcRequester.WINDOW);
                h.pump();
                h.step(RTT / 2);
                h.step(RTT / 2);
                h.ackPlaced(sent.subList(8, 16), RcRequester.WINDOW);
                h.pump();
            }
            assertThat(h.dp().counters.crossPathLosses)
                    .as("a later packet acknowledged first is no loss")
                    .isZero();
            assertThat(h.dp().counters.dataRetransmits).isZero();
            for (int i = 0; i < 4; i++) {
                assertThat(h.path(i).state).as("path %d", i).isEqualTo(Path.ACTIVE);
            }
            assertThat(h.pending()).isZero();
            assertThat(h.completions).hasSize(26 * 16).allMatch(c -> c.status() == 0);
        }
    }

    @Test
    void aDetectionProvedFalseWidensTheReorderingTolerance() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            for (int i = 0; i < 6; i++) {
                h.post(16);
                h.cleanRound(RTT);
            }
            // Path 1's packets come 6 RTTs late (reordering, not loss): the first time they are
            // resolved lost and resent; their own late reports prove it false, and from then on
            // the same reordering is tolerated.
            long[] detections = new long[12];
            for (int round = 0; round < detections.length; round++) {
                long before = h.dp().counters.crossPathLosses;
                h.post(16);
                List<Pkt> sent = data(h.pump());
                List<Pkt> late = onPath(sent, 1);
                List<Pkt> early = new ArrayList<>(sent);
                early.removeAll(late);
                h.clock.addAndGet(RTT);
                h.ackPlaced(early, RcRequester.WINDOW);
                h.pump();
                List<Pkt> resent = new ArrayList<>();
                for (int k = 0; k < 5; k++) {
                    resent.addAll(h.step(RTT)); // retransmissions, and probes of a SUSPECT path
                }
                h.ackPlaced(late, RcRequester.WINDOW); // the late originals, and their path's report
                h.pump();
                h.ackPlaced(resent, RcRequester.WINDOW);
                h.pump();
                detections[round] = h.dp().counters.crossPathLosses - before;
            }
            System.out.println("CrossPathLossTest: detections per round " + java.util.Arrays.toString(detections)
                    + ", false " + h.dp().counters.spuriousLosses);
            assertThat(detections[0])
                    .as("the first round's late packets are taken for lost")
                    .isPositive();
            assertThat(h.dp().counters.spuriousLosses).as("and proved not lost").isPositive();
            assertThat(detections[detections.length - 1])
                    .as("the last round: tolerated")
                    .isZero();
            assertThat(h.path(1).state).isEqualTo(Path.ACTIVE);
            assertThat(h.pending()).isZero();
            assertThat(h.completions).hasSize((6 + detections.length) * 16).allMatch(c -> c.status() == 0);
        }
    }

    @Test
    void aStallOfThePeerBlamesNoPath() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            for (int i = 0; i < 6; i++) {
                h.post(16);
                h.cleanRound(RTT);
            }
            // The peer goes silent for every path at once (a descheduled daemon): the paths time
            // out, but none is to blame, none is demoted, and the QP does not fail.
            h.post(16);
            List<Pkt> sent = data(h.pump());
            for (int k = 0; k < 100; k++) {
                h.step(RTT);
            }
            for (int i = 0; i < 4; i++) {
                assertThat(h.path(i).state).as("path %d", i).isEqualTo(Path.ACTIVE);
            }
            assertThat(h.dp().counters.pathTimeouts).isPositive();
            assertThat(h.dp().counters.crossPathLosses).isZero();
            assertThat(h.dp().counters.pathRetirements).isZero();
            h.ackPlaced(sent, RcRequester.WINDOW);
            h.pump();
            assertThat(h.pending()).isZero();
            assertThat(h.completions).allMatch(c -> c.status() == 0);
        }
    }
}
