package io.metaroce.nic.engine;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The idle strategies: what an engine thread does after duty cycles without work. */
class IdleStrategyTest {

    @Test
    void backoffSpinsThenYieldsThenSleepsAndStartsOverAfterWork() {
        IdleStrategy s = IdleStrategy.backoff(3, 2);
        int[] expected = {
            IdleStrategy.SPUN,
            IdleStrategy.SPUN,
            IdleStrategy.YIELDED,
            IdleStrategy.YIELDED,
            IdleStrategy.SLEEP,
            IdleStrategy.SLEEP
        };
        for (int round = 0; round < 2; round++) {
            for (int e : expected) {
                assertThat(s.idle()).isEqualTo(e);
            }
            s.reset();
        }
        IdleStrategy none = IdleStrategy.backoff(0, 0);
        assertThat(none.idle()).as("no spins, no yields: sleeps at once").isEqualTo(IdleStrategy.SLEEP);
    }

    @Test
    void busySpinAndYieldNeverSleep() {
        IdleStrategy spin = IdleStrategy.busySpin();
        IdleStrategy yield = IdleStrategy.yielding();
        for (int i = 0; i < 1000; i++) {
            assertThat(spin.idle()).isEqualTo(IdleStrategy.SPUN);
            assertThat(yield.idle()).isEqualTo(IdleStrategy.YIELDED);
        }
    }
}
