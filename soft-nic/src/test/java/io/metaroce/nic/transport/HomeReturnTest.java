package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.sim.LinkSelector;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * A link that heals is used again (spec 10, "Home return"): on the SimFabric of {@link
 * EntropyRedrawTest} (4 links of 1 Gbit/s, the link a hash of the entropy's source port), one link
 * is black-holed from 10 ms on. Its paths are retired and redrawn onto the three others; each keeps
 * the entropy it left as its home and tries it again, backing off from 50 ms to at most 500 ms. When
 * the link is restored the paths go home within a second, and the QP runs on all four links again:
 * more than three links could carry. When the link stays dead the tries fail, cost little, and no
 * ACTIVE path is left on it. Every byte of every message is checked (SimStream).
 */
class HomeReturnTest {
    static final int LINKS = 4;
    static final int DEAD = 1;

    record Outcome(SimStream.Result result, int activeOnLink, int active, int away) {}

    /** One QP of {@code paths} paths on {@code pool} ports; link 1 black-holed from 10 ms to {@code restoreNs}. */
    static Outcome run(int paths, int pool, long restoreNs, long measureFromNs) throws Exception {
        LinkSelector selector = EntropyRedrawTest.byPort(pool);
        SimStream.Config c = new SimStream.Config();
        c.seed = 17;
        c.links = LINKS;
        c.paths = paths;
        c.entropyPorts = pool;
        c.selector = selector;
        c.stepNs = 2_000;
        c.warmupNs = measureFromNs;
        c.measureNs = 100_000_000L;
        c.schedule = (f, t) -> {
            if (t == 10_000_000L) {
                f.link(DEAD).blackhole(true);
            } else if (t == restoreNs) {
                f.link(DEAD).blackhole(false);
            }
        };
        int[] counts = new int[3];
        c.inspect = r -> {
            for (int i = 0; i < r.pathCount(); i++) {
                Path p = r.path(i);
                if (p.state == Path.ACTIVE) {
                    counts[1]++;
                    if (selector.link(SimStream.IP_A, SimStream.IP_B, SimStream.UDP, p.entropy, LINKS) == DEAD) {
                        counts[0]++;
                    }
                }
                if (p.homeEntropy >= 0) {
                    counts[2]++;
                }
            }
        };
        SimStream.Result res = SimStream.run(c);
        Outcome o = new Outcome(res, counts[0], counts[1], counts[2]);
        System.out.println(String.format(
                Locale.ROOT,
                "home-return %3d paths, link %d %s: %3d retirements, %4d home tries, %3d home returns;"
                        + " at the end %3d of %3d paths ACTIVE, %3d on link %d, %3d away;"
                        + " %.2f Gbit/s over [%d, %d] ms, %d messages checked",
                paths,
                DEAD,
                restoreNs == Long.MAX_VALUE ? "dead for good" : "restored at " + restoreNs / 1_000_000 + " ms",
                res.retirements(),
                res.homeTrials(),
                res.homeReturns(),
                o.active(),
                paths,
                o.activeOnLink(),
                DEAD,
                o.away(),
                res.gbps(),
                measureFromNs / 1_000_000,
                (measureFromNs + c.measureNs) / 1_000_000,
                res.messagesChecked()));
        assertThat(res.failed()).as(res.note()).isFalse();
        assertThat(res.messagesChecked()).isPositive();
        assertThat(res.retirements())
                .as("paths of the black-holed link retired")
                .isPositive();
        assertThat(res.homeTrials()).as("retired paths tried their homes").isPositive();
        return o;
    }

    /** Restored after 290 ms, measured a second after that: the paths are home, four links carry the QP. */
    static void healedLinkIsUsedAgain(int paths, int pool) throws Exception {
        Outcome o = run(paths, pool, 300_000_000L, 1_300_000_000L);
        assertThat(o.result().homeReturns()).as("paths back on their homes").isPositive();
        assertThat(o.away()).as("paths still away from their homes").isZero();
        assertThat(o.activeOnLink()).as("ACTIVE paths on the healed link").isPositive();
        // three links carry at most 3 Gbit/s of wire bytes; the clean fabric gives 3.9 to 4.0
        assertThat(o.result().gbps()).as("the four links carry the QP again").isGreaterThan(3.3);
    }

    @Test
    void eightPathsComeHome() throws Exception {
        healedLinkIsUsedAgain(8, 64);
    }

    @Test
    void sixtyFourPathsComeHome() throws Exception {
        healedLinkIsUsedAgain(64, 64);
    }

    @Test
    void triesOfALinkThatStaysDeadCostLittle() throws Exception {
        Outcome o = run(64, 64, Long.MAX_VALUE, 1_000_000_000L);
        assertThat(o.result().homeReturns())
                .as("no path went home to the dead link")
                .isZero();
        assertThat(o.activeOnLink()).as("ACTIVE paths on the dead link").isZero();
        assertThat(o.away()).as("the dead link's paths keep their homes").isPositive();
        assertThat(o.result().gbps()).as("the three healthy links carry the QP").isGreaterThan(2.5);
    }
}
