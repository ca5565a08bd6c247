package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 6's operator view on the 4-link ECMP fabric: {@code mrce-ctl paths --json}, taken in host A
 * while {@code mrce_integrity} runs, shows the client's QP with traffic on every one of its paths
 * (each with a measured RTT); the table form prints a row per path; once the
 * applications are gone, {@code mrce-ctl objects} shows no verbs object left in either daemon.
 */
@Timeout(600)
class MrceCtlIT {
    private static EcmpFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = EcmpFabric.create("MrceCtlIT", EcmpFabric.DEFAULT_LINKS, 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void pathsShowTrafficOnEveryPathDuringATransfer() {
        JsonNode device = ctlJson(fabric.a(), "devices");
        assertThat(device.path("device").asText()).isEqualTo("mrce0");
        assertThat(device.path("ifname").asText()).isEqualTo(fabric.a().ifname());
        int pathsPerQp = device.path("pathsPerQp").asInt();
        assertThat(pathsPerQp).isGreaterThanOrEqualTo(4);

        Integrity.Running run = Integrity.start(fabric, 18900, 3000, 0xc71L, Duration.ofSeconds(180));
        JsonNode busiest = null;
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (run.clientAlive() && System.nanoTime() < deadline) {
                JsonNode stats = ctlJson(fabric.a(), "paths");
                for (JsonNode qp : stats.path("qps")) {
                    if (allPathsCarried(qp) && (busiest == null || sent(qp) > sent(busiest))) {
                        busiest = qp;
                    }
                }
                if (busiest != null && sent(busiest) > 2000) {
                    break;
                }
                try {
                    Thread.sleep(300);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(e);
                }
            }
            String table = ctl(fabric.a(), "paths");
            assertThat(table.lines().findFirst().orElse("")).startsWith("QPN");
        } finally {
            Integrity.Result r = run.finish();
            assertThat(r.client().ok()).as("client OK\n" + r.client().output()).isTrue();
            assertThat(r.server().ok()).as("server OK\n" + r.server().output()).isTrue();
            assertThat(r.client().checksum()).isEqualTo(r.server().checksum());
        }
        assertThat(busiest)
                .as("a snapshot taken during the transfer with traffic on every path")
                .isNotNull();
        assertThat(busiest.path("paths")).hasSize(pathsPerQp);
        assertThat(busiest.path("paths"))
                .as("paths active during the transfer")
                .anySatisfy(p -> assertThat(p.path("state").asText()).isEqualTo("active"));
        for (JsonNode p : busiest.path("paths")) {
            assertThat(p.path("packetsSent").asLong()).as("path %s", p).isPositive();
            // A clean fabric: no path is dead (a path may be suspect for a moment when a probe is late).
            assertThat(p.path("state").asText()).as("path %s", p).isIn("active", "suspect");
            assertThat(p.path("srttNs").asLong()).as("path %s", p).isPositive();
        }

        for (NetnsFabric.Host h : new NetnsFabric.Host[] {fabric.a(), fabric.b()}) {
            boolean empty = Wait.until(Duration.ofSeconds(15), () -> {
                JsonNode o = ctlJson(h, "objects");
                return o.path("sessions").asInt() == 0
                        && o.path("totals").path("qps").asInt() == 0
                        && o.path("totals").path("mrs").asInt() == 0;
            });
            assertThat(empty)
                    .as("no objects left in the daemon of " + h.name() + ": " + ctl(h, "objects"))
                    .isTrue();
        }
    }

    private static boolean allPathsCarried(JsonNode qp) {
        if (qp.path("paths").isEmpty()) {
            return false;
        }
        for (JsonNode p : qp.path("paths")) {
            if (p.path("packetsSent").asLong() == 0) {
                return false;
            }
        }
        return true;
    }

    private static long sent(JsonNode qp) {
        long n = 0;
        for (JsonNode p : qp.path("paths")) {
            n += p.path("packetsSent").asLong();
        }
        return n;
    }

    private static JsonNode ctlJson(NetnsFabric.Host h, String what) {
        return Ctl.json(fabric, h, what);
    }

    private static String ctl(NetnsFabric.Host h, String... args) {
        return Ctl.run(fabric, h, args);
    }
}
