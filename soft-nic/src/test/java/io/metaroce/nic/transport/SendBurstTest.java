package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.sim.SimFabric;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * Bursts per path (spec 10, "Bursts"): on a port that sends a path's run of packets as one buffer
 * (the UDP port's GSO; here the SimFabric's port answering {@code sendBurst} 8), the requester
 * gives each path up to that many packets back to back, so most packets leave in runs; the
 * spraying, the gray-failure tolerance and every byte stay as with bursts of one. Simulated time:
 * one QP of 32 paths over 4 links of 1 Gbit/s, 64 KiB SENDs, every byte checked, the daemon's
 * timer floors; three seeds, mean goodput.
 */
class SendBurstTest {

    /** Seeds 13, 14, 15: goodput summed, and the frames sent and sent in runs. */
    record Runs(double gbps, long txFrames, long txCoalesced) {}

    static Runs run(int burst, BiConsumer<SimFabric, Long> impairment) throws Exception {
        double gbps = 0;
        long frames = 0;
        long coalesced = 0;
        for (long seed = 13; seed <= 15; seed++) {
            SimStream.Config c = GrayFailureThroughputTest.fabric(true, impairment);
            c.seed = seed;
            c.sendBurst = burst;
            SimStream.Result r = SimStream.run(c);
            assertThat(r.failed()).as(r.note()).isFalse();
            assertThat(r.messagesChecked()).isPositive();
            gbps += r.gbps() / 3;
            frames += r.txFrames();
            coalesced += r.txCoalesced();
        }
        return new Runs(gbps, frames, coalesced);
    }

    static void compare(String what, BiConsumer<SimFabric, Long> impairment, double floor) throws Exception {
        Runs one = run(1, impairment);
        Runs eight = run(8, impairment);
        double ratio = eight.gbps() / one.gbps();
        double coalesced = (double) eight.txCoalesced() / eight.txFrames();
        System.out.printf(
                java.util.Locale.ROOT,
                "send-burst %-28s burst 1: %6.3f Gbit/s  burst 8: %6.3f Gbit/s (%.2f), %.2f of frames in runs"
                        + " (burst 1: %.2f)%n",
                what,
                one.gbps(),
                eight.gbps(),
                ratio,
                coalesced,
                (double) one.txCoalesced() / one.txFrames());
        assertThat(ratio).as(what + ": bursts of 8 against bursts of 1").isGreaterThanOrEqualTo(floor);
        assertThat(coalesced)
                .as(what + ": frames that left in runs of one path")
                .isGreaterThan(0.5);
    }

    @Test
    void mostPacketsLeaveInRunsOfOnePathAtTheSameThroughput() throws Exception {
        compare("clean", (f, t) -> {}, 0.95);
    }

    @Test
    void aSlowLinkStillDoesNotDragTheQueuePairDown() throws Exception {
        compare("link 0 20x slower", GrayFailureThroughputTest.slower(20), 0.9);
    }

    @Test
    void lossIsRecoveredAsWithoutBursts() throws Exception {
        // issue 13's bar for this row, against clean: measured 0.90 of bursts of one
        compare("1 % loss on link 0", GrayFailureThroughputTest.loss(0.01, false), 0.85);
    }
}
