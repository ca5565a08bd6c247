package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.sim.SimFabric;
import java.util.Locale;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * Gray-failure tolerance (spec section 10a) measured on the SimFabric in simulated time, so the
 * figures are deterministic, not wall-clock: one QP of 32 paths over 4 links of 1 Gbit/s (8 paths
 * a link), 64 KiB SENDs, every byte checked, against the same fabric clean. Impairments of link 0:
 * 100 and 20 times slower (the latter under the daemon's timer floors, as on a real host, where it
 * cut the QP to 0.14 of clean before 10a), 4 times slower, a delay spike (1 ms added for 10 ms)
 * and flapping (down 5 ms in every 10). The table is printed ({@code mvn -o -B -pl soft-nic -am
 * test -Dtest=GrayFailureThroughputTest}); the asserts are guards, not the benchmark.
 */
class GrayFailureThroughputTest {
    static final long RATE = 1_000_000_000L;

    static SimStream.Config fabric(boolean daemonTimers, BiConsumer<SimFabric, Long> impairment) {
        SimStream.Config c = new SimStream.Config();
        c.seed = 13;
        c.links = 4;
        c.paths = 32;
        c.rateBitsPerSec = RATE;
        c.daemonTimers = daemonTimers;
        c.warmupNs = 10_000_000;
        c.measureNs = 40_000_000;
        c.schedule = impairment;
        return c;
    }

    /** Link 0 at {@code 1 / factor} of the others' rate from the first step on. */
    static BiConsumer<SimFabric, Long> slower(int factor) {
        return (f, t) -> {
            if (t == 1_000) {
                f.link(0).rateBitsPerSec(RATE / factor);
            }
        };
    }

    static void print(String what, SimStream.Result r, SimStream.Result clean, double offered) {
        System.out.println(String.format(
                Locale.ROOT,
                "gray-failure %-40s %6.3f Gbit/s %6.3f of clean (offered %5.3f)  retx %5d (opportunistic %4d)"
                        + "  qp-timeouts %2d  retirements %3d  messages %5d %s",
                what,
                r.gbps(),
                r.goodputBps() / clean.goodputBps(),
                offered,
                r.retransmits(),
                r.opportunistic(),
                r.timeouts(),
                r.retirements(),
                r.messagesChecked(),
                r.note()));
    }

    static double check(String what, SimStream.Result r, SimStream.Result clean, double offered) {
        print(what, r, clean, offered);
        assertThat(r.failed()).as(what + ": " + r.note()).isFalse();
        assertThat(r.messagesChecked()).as(what + ": messages checked").isPositive();
        return r.goodputBps() / clean.goodputBps();
    }

    @Test
    void aSlowOrSickLinkDoesNotDragTheQueuePairDown() throws Exception {
        SimStream.Result clean = SimStream.run(fabric(false, (f, t) -> {}));
        SimStream.Result cleanDaemon = SimStream.run(fabric(true, (f, t) -> {}));
        check("clean, 4 x 1 Gbit/s", clean, clean, 1);
        check("clean, daemon timers", cleanDaemon, cleanDaemon, 1);
        assertThat(clean.gbps()).as("clean: most of 4 Gbit/s").isGreaterThan(3.5);
        assertThat(cleanDaemon.gbps()).as("clean, daemon timers").isGreaterThan(3.5);

        double slow100 = check("link 0 100x slower", SimStream.run(fabric(false, slower(100))), clean, 0.7525);
        SimStream.Result slow20r = SimStream.run(fabric(true, slower(20)));
        double slow20 = check("link 0 20x slower, daemon timers", slow20r, cleanDaemon, 0.7625);
        assertThat(slow20r.opportunistic())
                .as("packets stuck on the slow link sent again on fast ones")
                .isPositive();
        double slow4 = check("link 0 4x slower", SimStream.run(fabric(false, slower(4))), clean, 0.8125);
        double spike = check(
                "link 0 +1 ms delay for 10 ms",
                SimStream.run(fabric(false, (f, t) -> {
                    if (t == 20_000_000L) {
                        f.link(0).gray(0, 1_000_000L);
                    } else if (t == 30_000_000L) {
                        f.link(0).gray(0, 0);
                    }
                })),
                clean,
                1);
        double flap = check(
                "link 0 flapping, down 5 ms in 10",
                SimStream.run(fabric(false, (f, t) -> f.link(0).blackhole((t / 5_000_000L) % 2 == 1))),
                clean,
                0.875);
        // Guards: three quarters of the capacity is left in each case.
        assertThat(slow100).as("one link 100x slower").isGreaterThanOrEqualTo(0.6);
        assertThat(slow20).as("one link 20x slower, daemon timers").isGreaterThanOrEqualTo(0.6);
        assertThat(slow4).as("one link 4x slower").isGreaterThanOrEqualTo(0.6);
        assertThat(spike).as("a delay spike").isGreaterThanOrEqualTo(0.6);
        assertThat(flap).as("a flapping link").isGreaterThanOrEqualTo(0.6);
    }

    /** Random loss from the first step on, on link 0 or on every link. */
    static BiConsumer<SimFabric, Long> loss(double rate, boolean everyLink) {
        return (f, t) -> {
            if (t == 1_000) {
                if (everyLink) {
                    f.forEachLink(l -> l.lossRate(rate));
                } else {
                    f.link(0).lossRate(rate);
                }
            }
        };
    }

    /**
     * Random loss is recovered, not taken for congestion (issue 13's rows "1 % loss on one spine,
     * and on all four: ≥ 0.85 and ≥ 0.75"; measured 1.00 and 0.98 of clean here). On the veth
     * fabric the same rows measure lower (bench/fabric/run-fabric, docs/benchmarks.md): 0.58 and
     * 0.31 of the ceiling at f3f6c7a, where a QP-level timeout (20 ms and more) ended a quarter of
     * the losses, 0.72 and 0.68 at 3f5ea1c with no QP timeout, on a machine whose own speed moved
     * its clean runs from 0.66 to 0.91.
     */
    @Test
    void randomLossIsRecoveredNotTakenForCongestion() throws Exception {
        SimStream.Result clean = SimStream.run(fabric(true, (f, t) -> {}));
        double one =
                check("1 % loss on link 0, daemon timers", SimStream.run(fabric(true, loss(0.01, false))), clean, 1);
        double all =
                check("1 % loss on every link, daemon timers", SimStream.run(fabric(true, loss(0.01, true))), clean, 1);
        assertThat(one).as("1 % loss on one link").isGreaterThanOrEqualTo(0.85);
        assertThat(all).as("1 % loss on every link").isGreaterThanOrEqualTo(0.75);
    }
}
