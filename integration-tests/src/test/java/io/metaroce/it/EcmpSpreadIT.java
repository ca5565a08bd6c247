package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.EcmpFabric.Counters;
import io.metaroce.it.EcmpFabric.Direction;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Spraying on a real fabric (four ECMP spine links, see {@link EcmpFabric}): the traffic of
 * unmodified {@code ibv_rc_pingpong -c -e} and {@code mrce_integrity} crosses every link in both
 * directions, each link carrying at least {@value #MIN_LINK_SHARE_PCT} % of the packets.
 *
 * <p>The kernel hashes each path's UDP source port onto a link with a seed drawn at boot, so which
 * links a QP's paths reach changes from machine to machine and from QP to QP. With the daemons'
 * default 8 paths one of 4 links gets none of them about a third of the time (4 * (3/4)^8, less
 * the overlaps), and the assertion would test the draw. These daemons run 64 paths over 1024
 * source ports: a link gets fewer than 4 of them (under 5 %) about once in 14 000 draws. (The
 * transport spreads evenly over its paths; a path whose link fails is retired and takes a new
 * source port, {@link EcmpPingPongIT}.)
 */
@Tag("multipath")
@Timeout(600)
class EcmpSpreadIT {
    static final int MIN_LINK_SHARE_PCT = 5;
    static final String[] DAEMON_ARGS = {"--paths", "64", "--entropy-ports", "1024"};
    private static final AtomicInteger PORT = new AtomicInteger(18760);
    /** Package-private: {@link EcmpSpreadIpv6IT} runs the same tests on its own fabric. */
    static EcmpFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = EcmpFabric.create("EcmpSpreadIT", EcmpFabric.DEFAULT_LINKS, 1500);
        fabric.startDaemons(DAEMON_ARGS);
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void rcPingPongUsesEverySpineLink() {
        Counters before = fabric.counters();
        EcmpPingPongIT.pingPong(fabric, PORT.getAndIncrement(), 4096, 2000, "-c", "-e", "-n", "2000");
        assertEveryLinkCarries(fabric.counters().minus(before), "ibv_rc_pingpong -c -e -n 2000");
    }

    @Test
    void integrityUsesEverySpineLink() {
        Counters before = fabric.counters();
        EcmpPingPongIT.integrity(fabric, PORT.getAndIncrement(), 1000, 0xec3001L, null);
        assertEveryLinkCarries(fabric.counters().minus(before), "mrce_integrity -n 1000");
    }

    private static void assertEveryLinkCarries(Counters carried, String what) {
        System.out.printf("EcmpSpreadIT: %s: packets per spine link %s%n", what, carried);
        for (Direction d : Direction.values()) {
            long total = carried.total(d);
            assertThat(total).as("%s: packets %s", what, d).isGreaterThan(1000);
            for (int l = 0; l < fabric.links(); l++) {
                assertThat(carried.of(d)[l] * 100)
                        .as(
                                "%s: spine link %d carries at least %d %% of the %s packets (per link: %s)",
                                what, l, MIN_LINK_SHARE_PCT, d, Arrays.toString(carried.of(d)))
                        .isGreaterThanOrEqualTo(total * MIN_LINK_SHARE_PCT);
            }
        }
    }
}
