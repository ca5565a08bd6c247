package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The test fabric itself, without MetaRoCE: links carry traffic, the drop program drops what it
 * should at about the rate it was built for and nothing else, and close() leaves nothing behind.
 * The loss tests rely on this.
 */
@Timeout(180)
class FabricIT {

    private static final int PACKETS = 10_000;

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    @Test
    void directLinkIsLossless() {
        try (TwoHostFabric f = TwoHostFabric.direct("FabricIT-lossless", 1500)) {
            assertThat(f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, PACKETS))
                    .isEqualTo(PACKETS);
            assertThat(f.udpProbe(f.b(), f.a(), TwoHostFabric.MRCE_UDP_PORT, 0, PACKETS))
                    .isEqualTo(PACKETS);
        }
    }

    @Test
    void routedPathForwards() {
        try (TwoHostFabric f = TwoHostFabric.routed("FabricIT-routed", 1500)) {
            assertThat(f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, 2000))
                    .isEqualTo(2000);
        }
    }

    @Test
    void dropProgramDropsOnlyMetaRoceUdpAtItsRate() {
        try (TwoHostFabric f = TwoHostFabric.direct("FabricIT-drop", 1500)) {
            f.dropOnLink(TwoHostFabric.Loss.PCT_5);
            // To port 4793, each direction: about 5 % lost (mean 500, sd about 22 for 10000).
            long ab = f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, PACKETS);
            long ba = f.udpProbe(f.b(), f.a(), TwoHostFabric.MRCE_UDP_PORT, 0, PACKETS);
            assertThat(PACKETS - ab).as("dropped A->B of %d", PACKETS).isBetween(350L, 650L);
            assertThat(PACKETS - ba).as("dropped B->A of %d", PACKETS).isBetween(350L, 650L);
            // From port 4793 to another port: dropped too (replies of a daemon).
            long fromPort = f.udpProbe(f.a(), f.b(), 4794, TwoHostFabric.MRCE_UDP_PORT, PACKETS);
            assertThat(PACKETS - fromPort).as("dropped from port 4793").isBetween(350L, 650L);
            // Other UDP passes untouched.
            assertThat(f.udpProbe(f.a(), f.b(), 4794, 0, PACKETS)).isEqualTo(PACKETS);
        }
    }

    @Test
    void onePercentProgramDropsAboutOnePercent() {
        try (TwoHostFabric f = TwoHostFabric.direct("FabricIT-drop1", 1500)) {
            f.dropOnLink(TwoHostFabric.Loss.PCT_1);
            long ab = f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, PACKETS);
            assertThat(PACKETS - ab).as("dropped A->B of %d", PACKETS).isBetween(40L, 180L);
        }
    }

    @Test
    void blackholeDropsEverythingAndClearing() {
        try (TwoHostFabric f = TwoHostFabric.direct("FabricIT-blackhole", 1500)) {
            f.dropOnLink(TwoHostFabric.Loss.PCT_100);
            assertThat(f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, 1000))
                    .isZero();
            f.clearDrops();
            assertThat(f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, 1000))
                    .isEqualTo(1000);
        }
    }

    @Test
    void closeRemovesTheNamespaces() {
        String nsA;
        String nsB;
        try (TwoHostFabric f = TwoHostFabric.direct("FabricIT-close", 1500)) {
            nsA = f.a().ns();
            nsB = f.b().ns();
            assertThat(Sh.check("ip", "netns", "list")).contains(nsA, nsB);
            // A long-running process in the namespace must not keep it alive.
            Proc sleeper = f.start(f.a(), "sleeper", java.util.List.of("sleep", "600"));
            assertThat(Wait.until(Duration.ofSeconds(5), sleeper::isAlive)).isTrue();
        }
        String after = Sh.check("ip", "netns", "list");
        assertThat(after).doesNotContain(nsA).doesNotContain(nsB);
    }
}
