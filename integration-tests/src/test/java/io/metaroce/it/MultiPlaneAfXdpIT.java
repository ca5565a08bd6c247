package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link MultiPlaneIT} on the AF_XDP port ({@code --port xdp}): the multi-plane device opens one
 * XSK per plane interface, each with the steering program; mrce_integrity over one QP, plane 2's
 * link down for the middle leg, then up. (A tc egress drop does not see frames an XSK sends, so
 * the black hole is MultiPlaneIT's alone.)
 */
@Timeout(600)
class MultiPlaneAfXdpIT {
    private static TwoPlaneFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoPlaneFabric.create("MultiPlaneAfXdpIT", 1500);
        fabric.startMultiPlaneDaemons("--port", "xdp");
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void aPlaneWhoseLinkGoesDownIsLeftAndComesBackWhenItIsUp() {
        assertThat(fabric.daemon(fabric.a()).logText()).contains("mrce0: 2 planes (p1-a 198.18.1.1, p2-a 198.18.2.1)");
        MultiPlaneIT.threeLegs(
                fabric, "link down (AF_XDP)", () -> fabric.plane2Link(false), () -> fabric.plane2Link(true), 19402, 22);
    }
}
