package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.transport.RequesterHarness.Pkt;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A ping-pong over a QP whose paths are half black-holed (spec section 8, tail-loss probe): one
 * message in flight at a time, so when it is lost no other path carries anything whose report
 * could accuse the silent one. Before the probe went on another path in that case, the RTO found
 * nobody to blame, the retransmission went round-robin onto the next black-holed path, each path
 * RTO doubled, and every fourth message took 0.8 s of simulated time (on the ECMP fabric
 * {@code ibv_rc_pingpong -e} crawled for minutes); black-holed paths were never retired.
 */
class PingPongBlackholeTest {
    static final long TICK = 10_000;

    @Test
    void aPingPongWithHalfThePathsBlackHoledKeepsItsPaceAndRetiresThem() throws Exception {
        try (RequesterHarness h = new RequesterHarness(8)) {
            for (int m = 0; m < 50; m++) {
                pingOnce(h, m, new boolean[8], new StringBuilder());
            }
            boolean[] dead = {true, true, true, false, false, false, false, true};
            StringBuilder log = new StringBuilder();
            long worst = 0;
            long total = 0;
            for (int m = 0; m < 200; m++) {
                long ticks = pingOnce(h, m, dead, log);
                worst = Math.max(worst, ticks);
                total += ticks;
            }
            System.out.printf(
                    "PingPongBlackholeTest: 1-packet messages, 4 of 8 paths black-holed: slowest %d ticks, 200 in %d%n",
                    worst, total);
            // Clean, a message takes 2 ticks (one to send, one to see its ACK); a loss costs a
            // tail-loss probe timeout (here about 50 us) and at worst a path RTO.
            assertThat(worst).as("the slowest message, in 10 us ticks\n%s", log).isLessThanOrEqualTo(100);
            assertThat(total).as("200 messages, in 10 us ticks\n%s", log).isLessThan(2 * 200 + 400);
            for (int i = 0; i < 8; i++) {
                assertThat(h.path(i).stateName()).as("path %d\n%s", i, log).isEqualTo(dead[i] ? "dead" : "active");
            }
            assertThat(h.req().unacknowledged()).isZero();
            assertThat(h.completions).hasSize(250).allMatch(c -> c.status() == 0);
        }
    }

    /**
     * Messages of four packets, and the two paths that the last two packets of a message take both
     * black-holed (as on the ECMP fabric, where two adjacent paths hashed onto the dead spine): each
     * silent path's tail-loss probe found the other silent path still awaiting a report, took that
     * for evidence and went on its own dead path; both RTOs then found nothing delivered after
     * their packets and blamed nobody; the paths stayed ACTIVE, their RTOs doubled towards rto_max,
     * and the ping-pong crawled (CI: 875 probes lost on each of two ACTIVE paths, the run timed out).
     */
    @Test
    void twoSilentPathsAtTheTailOfEveryMessageDoNotVouchForEachOther() throws Exception {
        try (RequesterHarness h = new RequesterHarness(8)) {
            for (int m = 0; m < 50; m++) {
                pingOnce(h, m, 4, new boolean[8], new StringBuilder());
            }
            boolean[] dead = {false, false, true, true, false, false, true, true};
            StringBuilder log = new StringBuilder();
            long worst = 0;
            for (int m = 0; m < 200; m++) {
                worst = Math.max(worst, pingOnce(h, m, 4, dead, log));
            }
            System.out.printf(
                    "PingPongBlackholeTest: 4-packet messages, paths 2, 3, 6, 7 black-holed: slowest %d ticks%n",
                    worst);
            assertThat(worst).as("the slowest message, in 10 us ticks\n%s", log).isLessThanOrEqualTo(100);
            for (int i = 0; i < 8; i++) {
                assertThat(h.path(i).stateName()).as("path %d\n%s", i, log).isEqualTo(dead[i] ? "dead" : "active");
            }
            assertThat(h.req().unacknowledged()).isZero();
            assertThat(h.completions).hasSize(1000).allMatch(c -> c.status() == 0);
        }
    }

    private static long pingOnce(RequesterHarness h, int m, boolean[] dead, StringBuilder log) {
        return pingOnce(h, m, 1, dead, log);
    }

    /**
     * Posts {@code packets} one-packet SENDs (one message's packets) and steps until they complete;
     * the peer acknowledges what {@code dead} lets through.
     */
    private static long pingOnce(RequesterHarness h, int m, int packets, boolean[] dead, StringBuilder log) {
        h.post(packets);
        int t = 0;
        for (; t < 100_000 && h.pending() > 0; t++) {
            List<Pkt> sent = h.step(TICK);
            for (Pkt p : sent) {
                if (p.opcode() != Wire.OP_PROBE) {
                    log.append(p.path()).append(p.retransmit() ? "r " : " ");
                }
            }
            List<Pkt> got = sent.stream().filter(p -> !dead[p.path()]).toList();
            if (!got.isEmpty()) {
                h.ackPlaced(got, RcRequester.WINDOW);
            }
        }
        log.append("[message ").append(m).append(": ").append(t).append(" ticks]\n");
        assertThat(h.pending()).as("message %d\n%s", m, log).isZero();
        return t;
    }
}
