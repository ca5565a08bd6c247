package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.sim.LinkSelector;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * A QP whose paths hash unevenly over the links (docs/spec/transport.md section 10, "Balance"):
 * one QP, 128 paths, over a SimFabric of 4 links of 500 Mbit/s (625 KiB queues, the daemon's
 * timer floors and delay slack), 64 KiB SENDs with every byte checked. The entropies split
 * 35/32/37/24 over the links, as 128 entropies hashed on the 4-spine veth fabric
 * (bench/fabric/run-fabric). Round robin alone gave every path the same rate, so the link with
 * 37 paths filled and the QP stopped at 1.72 Gbit/s (0.86 of 2; the even split 32/32/32/32 moves
 * 1.98), as the veth fabric's clean row did (docs/benchmarks.md). With the balance cap: 1.84.
 * Asserted (a guard, not the benchmark): the uneven split at least 0.9 of the 2 Gbit/s, the even
 * one at least 0.95.
 */
class UnevenSpreadTest {
    /** 128 consecutive entropies over 4 links: 35, 32, 37 and 24 of them. */
    static final LinkSelector UNEVEN = (s, d, p, entropy, links) -> {
        int k = Math.floorMod(entropy, 128);
        return k < 35 ? 0 : k < 67 ? 1 : k < 104 ? 2 : 3;
    };

    static SimStream.Result run(LinkSelector selector) throws Exception {
        SimStream.Config c = new SimStream.Config();
        c.seed = 13;
        c.links = 4;
        c.paths = 128;
        c.rateBitsPerSec = 500_000_000L;
        c.queueBytes = 625 * 1024;
        c.daemonTimers = true;
        c.selector = selector;
        c.warmupNs = 20_000_000L;
        c.measureNs = 40_000_000L;
        return SimStream.run(c);
    }

    @Test
    void theLinkWithTheMostPathsDoesNotCapTheQueuePair() throws Exception {
        SimStream.Result even = checked("even 32/32/32/32", run(LinkSelector.ENTROPY_MOD));
        SimStream.Result uneven = checked("uneven 35/32/37/24", run(UNEVEN));
        assertThat(even.gbps()).as("even split, Gbit/s").isGreaterThan(0.95 * 2);
        assertThat(uneven.gbps()).as("uneven split, Gbit/s").isGreaterThan(0.9 * 2);
    }

    /** Prints a run's figures and checks that it delivered every message intact. */
    private static SimStream.Result checked(String split, SimStream.Result r) {
        System.out.println(String.format(
                Locale.ROOT,
                "uneven-spread 128 paths, %s over 4 x 500 Mbit/s: %.3f Gbit/s (%.2f of 2), %d retransmits,"
                        + " %d messages checked",
                split,
                r.gbps(),
                r.gbps() / 2,
                r.retransmits(),
                r.messagesChecked()));
        assertThat(r.failed()).as(r.note()).isFalse();
        assertThat(r.messagesChecked()).isPositive();
        return r;
    }
}
