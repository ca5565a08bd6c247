package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RequesterHarness.data;
import static io.metaroce.nic.transport.RequesterHarness.onPath;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.transport.RequesterHarness.Pkt;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Path states (spec section 10): a path that keeps losing or times out turns SUSPECT, then DEAD
 * (retired: a new entropy, probed once per probe interval, never given data), and is re-admitted
 * after three answered probes in a row; a lost probe restarts the count.
 */
class PathRepairTest {
    static final long TICK = 10_000;

    /** Steps {@code ticks} times; the peer gets and acknowledges at once what {@code arrives}. */
    static List<Pkt> run(RequesterHarness h, int ticks, Predicate<Pkt> arrives) {
        List<Pkt> all = new ArrayList<>();
        for (int i = 0; i < ticks; i++) {
            List<Pkt> sent = h.step(TICK);
            all.addAll(sent);
            List<Pkt> got = sent.stream().filter(arrives).toList();
            if (!got.isEmpty()) {
                h.ackPlaced(got, RcRequester.WINDOW);
            }
        }
        return all;
    }

    static List<Pkt> probes(List<Pkt> pkts, int path) {
        return pkts.stream()
                .filter(p -> p.opcode() == Wire.OP_PROBE && p.path() == path)
                .toList();
    }

    @Test
    void aLossyPathIsSuspectedRetiredWithANewEntropyProbedAndReadmitted() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            h.post(16);
            h.cleanRound(TICK);
            h.pump();
            Path p1 = h.path(1);
            int entropy0 = p1.entropy;
            assertThat(p1.state).isEqualTo(Path.ACTIVE);
            // Three of the four packets of path 1 are lost: a loss burst.
            h.post(16);
            List<Pkt> sent = data(h.pump());
            List<Pkt> arrived = new ArrayList<>(sent);
            arrived.removeAll(onPath(sent, 1).subList(0, 3));
            h.clock.addAndGet(TICK);
            h.ackPlaced(arrived, RcRequester.WINDOW);
            List<Pkt> out = h.pump();
            assertThat(p1.state).isEqualTo(Path.SUSPECT);
            assertThat(data(out)).hasSize(3).allMatch(p -> p.path() != 1);
            assertThat(probes(out, 1)).as("a SUSPECT path is probed while idle").hasSize(1);
            assertThat(probes(out, 1).get(0).replyEntropy()).isEqualTo(entropy0);
            // It keeps failing: its probe is never answered; the probe's RTO retires it.
            h.ackPlaced(data(out), RcRequester.WINDOW);
            List<Pkt> later = run(h, 30, p -> p.path() != 1);
            assertThat(p1.state).isEqualTo(Path.DEAD);
            // retired once; each unanswered probe since redrew its entropy (spec 10)
            assertThat(p1.generation).isEqualTo(1 + h.dp().counters.entropyRedraws);
            assertThat(p1.replacements).isEqualTo(p1.generation);
            assertThat(p1.entropy).as("a redrawn entropy, not the retired one").isNotEqualTo(entropy0);
            for (int i = 0; i < 4; i++) {
                if (i != 1) {
                    assertThat(h.path(i).entropy).isNotEqualTo(p1.entropy);
                }
            }
            assertThat(h.dp().counters.pathRetirements).isEqualTo(1);
            List<Pkt> newProbes = probes(later, 1).stream()
                    .filter(p -> p.replyEntropy() != entropy0)
                    .toList();
            assertThat(newProbes)
                    .as("the retired path is probed under its new entropy")
                    .isNotEmpty();
            // While DEAD: probes only (one per max(srtt, 1 ms)), no data; the peer answers none.
            h.post(40);
            List<Pkt> dead = run(h, 300, p -> p.path() != 1);
            assertThat(data(dead)).as("no data on a DEAD path").noneMatch(p -> p.path() == 1);
            assertThat(h.completions).hasSize(72);
            List<Pkt> deadProbes = probes(dead, 1);
            assertThat(deadProbes)
                    .as("unanswered, still about one probe per ms (no backoff)")
                    .hasSizeBetween(2, 4);
            assertThat(p1.state).isEqualTo(Path.DEAD);
            // The path heals: two probes answered, the third lost (the count restarts), then three.
            int answered = 0;
            int lostOne = 0;
            int lostPsn = -1;
            List<Pkt> healing = new ArrayList<>();
            for (int i = 0; i < 2_000 && p1.state == Path.DEAD; i++) {
                List<Pkt> sentNow = h.step(TICK);
                healing.addAll(sentNow);
                List<Pkt> got = new ArrayList<>();
                for (Pkt p : sentNow) {
                    if (p.opcode() == Wire.OP_PROBE && p.path() == 1) {
                        if (answered == 2 && lostOne == 0) {
                            lostOne++;
                            lostPsn = p.psn();
                            continue;
                        }
                        answered++;
                    }
                    got.add(p);
                }
                if (!got.isEmpty()) {
                    h.ackPlaced(got, RcRequester.WINDOW);
                }
            }
            h.step(TICK);
            assertThat(p1.state).isEqualTo(Path.ACTIVE);
            assertThat(lostOne).isEqualTo(1);
            assertThat(answered).as("2 answered, 1 lost, then 3 in a row").isEqualTo(5);
            assertThat(p1.cwndBytes).as("a fresh window").isEqualTo(16L * RequesterHarness.P);
            List<Pkt> gaps = probes(healing, 1);
            for (int i = 1; i < gaps.size(); i++) {
                // after an answered probe the next waits max(srtt, 1 ms); a lost one, its RTO
                long floor = gaps.get(i - 1).psn() == lostPsn ? h.dp().rtoMinNs : 1_000_000L;
                assertThat(gaps.get(i).timeNs() - gaps.get(i - 1).timeNs())
                        .as("one probe per probe interval")
                        .isGreaterThanOrEqualTo(floor);
            }
            // Re-admitted: data flows over it again.
            h.post(40);
            List<Pkt> after = run(h, 50, p -> true);
            assertThat(data(after)).anyMatch(p -> p.path() == 1);
            assertThat(h.completions).hasSize(112);
            assertThat(h.req().unacknowledged()).isZero();
        }
    }

    @Test
    void aBlackHoledPathTimesOutToSuspectThenDeadAndNothingIsLost() throws Exception {
        try (RequesterHarness h = new RequesterHarness(4)) {
            h.post(16);
            h.cleanRound(TICK);
            h.pump();
            Path p3 = h.path(3);
            h.post(64);
            List<Pkt> all = new ArrayList<>();
            long start = h.now();
            long suspectAt = -1;
            long deadAt = -1;
            for (int i = 0; i < 400; i++) {
                List<Pkt> sent = h.step(TICK);
                all.addAll(sent);
                List<Pkt> got = sent.stream().filter(p -> p.path() != 3).toList();
                if (!got.isEmpty()) {
                    h.ackPlaced(got, RcRequester.WINDOW);
                }
                if (suspectAt < 0 && p3.state == Path.SUSPECT) {
                    suspectAt = h.now();
                }
                if (deadAt < 0 && p3.state == Path.DEAD) {
                    deadAt = h.now();
                }
            }
            assertThat(p3.timeouts).isGreaterThanOrEqualTo(2);
            assertThat(suspectAt).as("SUSPECT after the path RTO").isPositive();
            assertThat(suspectAt - start).isLessThanOrEqualTo(300_000);
            assertThat(deadAt).as("DEAD after a probe timed out").isGreaterThan(suspectAt);
            assertThat(p3.state).isEqualTo(Path.DEAD);
            assertThat(h.completions)
                    .as("every message completed over the other paths")
                    .hasSize(80);
            assertThat(h.req().unacknowledged()).isZero();
            assertThat(all.stream()
                            .filter(p -> p.isData() && !p.retransmit())
                            .map(Pkt::rsn)
                            .distinct()
                            .count())
                    .isEqualTo(64);
        }
    }
}
