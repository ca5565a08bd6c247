package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * Many paths cost nothing when all are healthy (spec 10): one QP over a clean SimFabric of 4 links
 * of 1 Gbit/s with 8, 32, 48 (the daemon's default) and 256 paths, 64 KiB SENDs, every byte
 * checked. Printed per path count: simulated goodput, engine work items (what the engines' duty
 * cycles report done) per data packet, probes and retirements, and, for information only, the
 * CPU time the simulation took. Asserted (guards, not the benchmark): goodput within 10 % of 8
 * paths', work per packet within 50 %, probes within the QP's probe budget. Measured: 48 and 256
 * paths deliver 1.04 and 1.00 of 8 paths' goodput with 1.05 and 1.19 times the work per packet;
 * the cost is retransmissions (7, 136, 164, 364 of about 2600 packets for 8, 32, 48, 256 paths):
 * each path's congestion window grows on its own, so many paths together overfill the links'
 * queues; the QP window (spec 10a rule 3), which counts only the RSNs in flight, bounds that.
 */
class PathScaleTest {

    static SimStream.Result run(int paths) throws Exception {
        SimStream.Config c = new SimStream.Config();
        c.seed = 13;
        c.links = 4;
        c.paths = paths;
        c.warmupNs = 10_000_000L;
        c.measureNs = 30_000_000L;
        return SimStream.run(c);
    }

    @Test
    void manyHealthyPathsCostNothing() throws Exception {
        var bean = ManagementFactory.getThreadMXBean();
        SimStream.Result base = null;
        for (int n : new int[] {8, 32, TransportSettings.DEFAULT_PATHS, 256}) {
            long cpu0 = bean.getCurrentThreadCpuTime();
            SimStream.Result r = run(n);
            long cpuMs = (bean.getCurrentThreadCpuTime() - cpu0) / 1_000_000;
            double workPerPacket = (double) r.work() / Math.max(1, r.dataTx());
            System.out.println(String.format(
                    Locale.ROOT,
                    "path-scale %3d paths, clean 4 x 1 Gbit/s: %.3f Gbit/s, %.3f work items per data packet"
                            + " (%d packets), %d probes, %d retirements, %d retransmits; simulation CPU %d ms",
                    n,
                    r.gbps(),
                    workPerPacket,
                    r.dataTx(),
                    r.probes(),
                    r.retirements(),
                    r.retransmits(),
                    cpuMs));
            assertThat(r.failed()).as(r.note()).isFalse();
            assertThat(r.messagesChecked()).isPositive();
            // a clean fabric still drops at its queues (256 KiB a link): SUSPECT paths are probed
            assertThat(r.probes())
                    .as("probes, within the QP's budget")
                    .isLessThanOrEqualTo((r.elapsedNs() / Datapath.PROBE_EPOCH_NS + 1) * Datapath.PROBES_PER_QP);
            if (base == null) {
                base = r;
            } else {
                assertThat(r.goodputBps()).as(n + " paths: goodput").isGreaterThan(0.9 * base.goodputBps());
                double baseWork = (double) base.work() / base.dataTx();
                assertThat(workPerPacket).as(n + " paths: work per packet").isLessThan(1.5 * baseWork);
            }
        }
    }
}
