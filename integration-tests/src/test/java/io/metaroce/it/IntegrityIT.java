package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Data integrity across the namespaces with mrce_integrity, on a clean link and with 1 % and 5 % of
 * MetaRoCE's UDP packets dropped in each direction: both sides must report OK with the same message
 * count, byte count and checksum. The loss is measured with plain UDP before the daemons start, so
 * a broken drop program cannot pass for a loss-tolerant transport.
 */
@Timeout(400)
class IntegrityIT {

    private static final int MESSAGES = 2000;
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(180);
    private static final int PROBE_PACKETS = 5000;

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    @Test
    void noLoss() {
        run("IntegrityIT-0pct", null, 0x5eed0001L);
    }

    /**
     * METAROCE_SHARED_MR=1 on both sides: the provider moves each registered buffer into a memfd
     * the daemon maps (SHARE_MR), so the daemons copy the SENDs out of the client's buffer and into
     * the server's through their mappings, on a lossy link (retransmissions read the buffer again).
     */
    @Test
    void sharedRegionsOnePercentLoss() {
        run("IntegrityIT-shared", TwoHostFabric.Loss.PCT_1, 0x5eed0004L, true);
    }

    @Test
    void onePercentLoss() {
        run("IntegrityIT-1pct", TwoHostFabric.Loss.PCT_1, 0x5eed0002L);
    }

    @Test
    void fivePercentLoss() {
        run("IntegrityIT-5pct", TwoHostFabric.Loss.PCT_5, 0x5eed0003L);
    }

    private static void run(String name, TwoHostFabric.Loss loss, long seed) {
        run(name, loss, seed, false);
    }

    private static void run(String name, TwoHostFabric.Loss loss, long seed, boolean shared) {
        try (TwoHostFabric f = TwoHostFabric.direct(name, 1500)) {
            if (loss != null) {
                f.dropOnLink(loss);
                long got = f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, PROBE_PACKETS);
                double measured = 1.0 - (double) got / PROBE_PACKETS;
                assertThat(measured)
                        .as("measured loss on the link before the test (%s)", loss)
                        .isBetween(loss.rate * 0.4, loss.rate * 1.8);
            }
            f.startDaemons();
            Integrity.Result r = shared
                    ? Integrity.run(
                            f,
                            18600,
                            MESSAGES,
                            seed,
                            RUN_TIMEOUT,
                            java.util.List.of("METAROCE_SHARED_MR=1", "METAROCE_DEBUG=1"))
                    : Integrity.run(f, 18600, MESSAGES, seed, RUN_TIMEOUT);
            String context = "\n--- server:\n" + r.server().output() + "\n--- client:\n"
                    + r.client().output() + "\n" + f.diagnostics();
            if (shared) {
                assertThat(r.server().output())
                        .as("server's region shared" + context)
                        .contains("shared with the daemon");
                assertThat(r.client().output())
                        .as("client's region shared" + context)
                        .contains("shared with the daemon");
            }
            assertThat(r.server().ok()).as("server reports OK" + context).isTrue();
            assertThat(r.client().ok()).as("client reports OK" + context).isTrue();
            assertThat(r.server().exit()).as("server exit" + context).isZero();
            assertThat(r.client().exit()).as("client exit" + context).isZero();
            assertThat(r.client().messages()).as("client messages").isEqualTo(MESSAGES);
            assertThat(r.server().messages())
                    .as("server messages")
                    .isEqualTo(r.client().messages());
            assertThat(r.server().bytes())
                    .as("server bytes")
                    .isEqualTo(r.client().bytes())
                    .isPositive();
            assertThat(r.server().checksum())
                    .as("server checksum")
                    .isEqualTo(r.client().checksum());
        }
    }
}
