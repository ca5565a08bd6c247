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
            // Clean, a message takes 2 ticks (one to send, one to see its ACK); a loss costs a
            // tail-loss probe timeout (here about 50 us) and at worst a path RTO.
            assertThat(worst).as("the slowest message, in 10 us ticks\n%s", log).isLessThanOrEqualTo(100);
            assertThat(total).as("200 messages, in 10 us ticks\n%s", log).isLessThan(2 * 200 + 400);
            for (int i = 0; i < 8; i++) {
                assertThat(h.path(i).stateName()).as("path %d\n%s", i, log)
                        .isEqualTo(dead[i] ? "dead" : "active");
            }
            assertThat(h.req().unacknowledged()).isZero();
            assertThat(h.completions).hasSize(250).allMatch(c -> c.status() == 0);
        }
    }

    /** Posts one SEND and steps until it completes; the peer acknowledges what {@code dead} lets through. */
    private static long pingOnce(RequesterHarness h, int m, boolean[] dead, StringBuilder log) {
        h.post(1);
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
