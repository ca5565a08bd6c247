package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** The probability that n paths reach all k links of an ECMP fabric (spec 10's default path count). */
class PathCoverageTest {

    @Test
    void inclusionExclusionAgreesWithHandComputedValues() {
        assertThat(PathSet.coverage(1, 1)).isEqualTo(1.0);
        assertThat(PathSet.coverage(4, 3)).isZero(); // fewer paths than links
        assertThat(PathSet.coverage(2, 2)).isCloseTo(0.5, within(1e-12));
        // 4 links, 4 paths: 4! / 4^4
        assertThat(PathSet.coverage(4, 4)).isCloseTo(24.0 / 256, within(1e-12));
        // 4 links, 32 paths: 1 - 4 (3/4)^32 + 6 (1/2)^32 - 4 (1/4)^32
        double p432 = 1 - 4 * Math.pow(0.75, 32) + 6 * Math.pow(0.5, 32) - 4 * Math.pow(0.25, 32);
        assertThat(PathSet.coverage(4, 32)).isCloseTo(p432, within(1e-12));
        assertThatThrownBy(() -> PathSet.coverage(0, 8)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theDefaultPathCountReachesEveryLinkOfFourAndEightLinkFabrics() {
        int n = TransportSettings.DEFAULT_PATHS;
        assertThat(PathSet.coverage(4, 8)).as("the old default, 4 links").isCloseTo(0.623, within(0.001));
        assertThat(PathSet.coverage(4, n)).as("4 links").isGreaterThan(0.99999);
        assertThat(PathSet.coverage(8, n)).as("8 links").isCloseTo(0.987, within(0.001));
        assertThat(n)
                .as("fits the default 64 entropy ports with room for redraws")
                .isLessThan(64);
    }

    @Test
    void agreesWithASeededSimulation() {
        Random r = new Random(13);
        int trials = 20_000;
        int all = 0;
        for (int t = 0; t < trials; t++) {
            int used = 0;
            for (int i = 0; i < 24; i++) {
                used |= 1 << r.nextInt(8);
            }
            all += used == 0xff ? 1 : 0;
        }
        assertThat((double) all / trials).isCloseTo(PathSet.coverage(8, 24), within(0.015));
    }
}
