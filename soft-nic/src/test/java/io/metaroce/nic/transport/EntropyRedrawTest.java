package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.sim.LinkSelector;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * A retired path's entropy is redrawn until it lands on a healthy link (spec 10): on a SimFabric of
 * 4 links whose link is a function of the source port the entropy maps to (an ECMP hash of
 * {@code entropy mod pool}, the same both ways, as a symmetric hash of a real fabric would give),
 * one link is black-holed for good; once the QP has recovered, none of its ACTIVE paths sits on the
 * dead link, and the paths are ACTIVE again (up to 64 paths all of them; of 256, those the probe
 * budget has re-admitted by then), or trying the home they left (spec 10, "Home return"), from
 * which a lost probe sends them back. For 8 and 64 paths on the daemon's 64 entropy ports
 * (64 on 64 is the case where, before redraws, a replacement got its old port back) and 256 paths
 * on 256 ports; and 32 paths on the entropy-mod-links fabric, the other such case (32 replacements
 * a multiple of 4 links). Every byte of every message is checked (SimStream).
 */
class EntropyRedrawTest {
    static final int LINKS = 4;

    static LinkSelector byPort(int pool) {
        return (srcIp, dstIp, dstPort, entropy, links) -> LinkSelector.hash(0, 0, 0, entropy % pool, links);
    }

    /** One QP of {@code paths} paths; {@code dead} black-holed from 10 ms on; 200 ms in all. */
    static void blackholeAndRecover(int paths, int pool, LinkSelector selector, int dead) throws Exception {
        SimStream.Config c = new SimStream.Config();
        c.seed = 13;
        c.links = LINKS;
        c.paths = paths;
        c.entropyPorts = pool;
        c.selector = selector;
        c.stepNs = 2_000;
        c.warmupNs = 150_000_000L;
        c.measureNs = 50_000_000L;
        c.schedule = (f, t) -> {
            if (t == 10_000_000L) {
                f.link(dead).blackhole(true);
            }
        };
        int[] onDead = new int[1];
        int[] active = new int[1];
        int[] initialOnDead = new int[1];
        c.inspect = r -> {
            for (int i = 0; i < r.pathCount(); i++) {
                Path p = r.path(i);
                boolean there = selector.link(SimStream.IP_A, SimStream.IP_B, SimStream.UDP, p.entropy, LINKS) == dead;
                if (p.state == Path.ACTIVE) {
                    active[0]++;
                    if (there) {
                        onDead[0]++;
                    }
                } else if (p.homeTrial) {
                    active[0]++; // re-admitted, now trying its home (spec 10): back where it was if that fails
                }
                if (Boolean.getBoolean("redraw.dump")) {
                    System.out.println("  p" + i + " " + p.stateName() + " e" + p.entropy + " link "
                            + selector.link(0, 0, 0, p.entropy, LINKS) + " gen " + p.generation + " losses " + p.losses
                            + " timeouts " + p.timeouts + " sent " + p.packetsSent + " probes " + p.probesSent
                            + " srtt " + p.srttNs + " rto " + p.rtoNs + " inflight " + p.hasInflight());
                }
                if (p.generation > 0) {
                    initialOnDead[0]++;
                }
            }
        };
        SimStream.Result res = SimStream.run(c);
        System.out.println(String.format(
                Locale.ROOT,
                "entropy-redraw %3d paths, %5s: %3d retirements, %4d redraws, %5d probes; after: %3d of %3d ACTIVE,"
                        + " %d on the dead link; %.2f Gbit/s of the 3 left, %d messages checked",
                paths,
                pool == 0 ? "e%4" : pool + " ports",
                res.retirements(),
                res.redraws(),
                res.probes(),
                active[0],
                paths,
                onDead[0],
                res.gbps(),
                res.messagesChecked()));
        assertThat(res.failed()).as(res.note()).isFalse();
        assertThat(res.messagesChecked()).isPositive();
        assertThat(res.retirements()).as("paths of the dead link retired").isPositive();
        assertThat(onDead[0]).as("ACTIVE paths on the black-holed link").isZero();
        // Most paths are ACTIVE again (on healthy links); with 256 paths the per-QP probe budget
        // (16 a millisecond) paces the re-admissions, so some are still on probation at the end
        // (154 of 256 before a tail-loss probe stopped counting another silent path's probe as
        // evidence, spec 8; 126 since, and 2.67 instead of 2.90 Gbit/s: the price of ping-pongs
        // that no longer crawl when two dead paths carry a message's last packets).
        assertThat(active[0])
                .as("paths ACTIVE again, on healthy links")
                .isGreaterThanOrEqualTo(paths <= 64 ? paths : paths * 45 / 100);
        assertThat(res.gbps()).as("the three healthy links carry the QP").isGreaterThan(2.0);
    }

    @Test
    void eightPaths() throws Exception {
        blackholeAndRecover(8, 64, byPort(64), 1);
    }

    @Test
    void sixtyFourPathsOnSixtyFourPorts() throws Exception {
        blackholeAndRecover(64, 64, byPort(64), 1);
    }

    @Test
    void twoHundredFiftySixPaths() throws Exception {
        blackholeAndRecover(256, 256, byPort(256), 1);
    }

    @Test
    void thirtyTwoPathsOnEntropyModLinks() throws Exception {
        blackholeAndRecover(32, 0, LinkSelector.ENTROPY_MOD, 0);
    }
}
