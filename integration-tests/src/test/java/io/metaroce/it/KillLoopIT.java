package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 6's reclaim check: ibv_rc_pingpong pairs are started until {@value #KILLS} client
 * processes of the daemons have been SIGKILLed while running (at most {@code 2 x KILLS} pairs),
 * each at a random point: while opening the device and making
 * their objects, while exchanging addresses, while connecting their QP, and mid-transfer. Then
 * each daemon shows, from {@code mrce-ctl objects} and its own {@code /proc/self}, no session, no
 * QP, MR, CQ or PD left, and as many file descriptors and memory mappings as before the loop
 * (within a small allowance for the JVM's own threads and code cache); and an application run
 * afterwards still completes with correct results. Seeded ({@code -Dmetaroce.killloop.seed}).
 */
@Timeout(1200)
class KillLoopIT {
    static final int KILLS = Integer.getInteger("metaroce.killloop.kills", 1000);
    static final int MAX_PAIRS = 2 * KILLS;
    /** File descriptors the daemon may have gained for itself (JIT/GC threads do not hold fds). */
    private static final int FD_ALLOWANCE = 4;
    /** Mappings the JVM may add on its own (thread stacks, code cache segments, malloc arenas). */
    private static final int MAPPING_ALLOWANCE = 48;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("KillLoopIT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void killedClientsLeaveNothingBehind() {
        long seed = Long.getLong("metaroce.killloop.seed", 0x6b11L);
        Random random = new Random(seed);
        int port = 19100;
        // Warm the daemons up (JIT, first sessions, entropy sockets) before the baseline.
        for (int i = 0; i < 3; i++) {
            RcPingPong.run(fabric, port++, Duration.ofSeconds(60), "-n", "200").assertCompleted(4096, 200, "warm-up");
        }
        awaitNoSessions();
        long[] fdsBefore = {
            daemonFacts(fabric.a()).path("openFds").asLong(),
            daemonFacts(fabric.b()).path("openFds").asLong()
        };
        long[] mapsBefore = {
            daemonFacts(fabric.a()).path("mappings").asLong(),
            daemonFacts(fabric.b()).path("mappings").asLong()
        };

        int killed = 0;

        int pairs = 0;
        for (int i = 0; i < MAX_PAIRS && killed < KILLS; i++) {
            pairs++;
            String iters = random.nextInt(3) == 0 ? "100000" : "2000";
            RcPingPong.Running run =
                    RcPingPong.start(fabric, port++, "-n", iters, "-s", Integer.toString(64 << random.nextInt(8)));
            // One side first at a random point, the other a little later (or it fails on its own).
            boolean clientFirst = random.nextBoolean();
            Proc first = clientFirst ? run.client() : run.server();
            Proc second = clientFirst ? run.server() : run.client();
            sleepMs(random.nextInt(250));
            if (first.isAlive()) {
                first.kill();
                killed++;
            }
            sleepMs(random.nextInt(50));
            if (second.isAlive()) {
                second.kill();
                killed++;
            }
        }
        System.out.printf(
                "KillLoopIT: %d of %d processes SIGKILLed while running (seed %#x)%n", killed, 2 * pairs, seed);
        assertThat(killed).as("processes killed while running").isGreaterThanOrEqualTo(KILLS);

        awaitNoSessions();
        for (int k = 0; k < 2; k++) {
            NetnsFabric.Host h = k == 0 ? fabric.a() : fabric.b();
            JsonNode o = objects(h);
            assertThat(o.path("totals").path("qps").asInt())
                    .as(h.name() + " QPs")
                    .isZero();
            assertThat(o.path("totals").path("mrs").asInt())
                    .as(h.name() + " MRs")
                    .isZero();
            assertThat(o.path("totals").path("cqs").asInt())
                    .as(h.name() + " CQs")
                    .isZero();
            assertThat(o.path("totals").path("pds").asInt())
                    .as(h.name() + " PDs")
                    .isZero();
            JsonNode d = o.path("daemon");
            assertThat(d.path("openFds").asLong())
                    .as(h.name() + " daemon fds (before: " + fdsBefore[k] + ")")
                    .isLessThanOrEqualTo(fdsBefore[k] + FD_ALLOWANCE);
            assertThat(d.path("mappings").asLong())
                    .as(h.name() + " daemon mappings (before: " + mapsBefore[k] + ")")
                    .isLessThanOrEqualTo(mapsBefore[k] + MAPPING_ALLOWANCE);
        }
        for (Daemon d : fabric.daemons()) {
            assertThat(d.isAlive())
                    .as("daemon in " + d.host().name() + " alive")
                    .isTrue();
        }
        RcPingPong.run(fabric, port, Duration.ofSeconds(60), "-n", "500")
                .assertCompleted(4096, 500, "after " + killed + " kills");
    }

    private static void awaitNoSessions() {
        for (NetnsFabric.Host h : List.of(fabric.a(), fabric.b())) {
            boolean none = Wait.until(
                    Duration.ofSeconds(30), () -> objects(h).path("sessions").asInt() == 0);
            assertThat(none)
                    .as("daemon of " + h.name() + " reclaimed every session: " + objects(h))
                    .isTrue();
        }
    }

    private static JsonNode daemonFacts(NetnsFabric.Host h) {
        return objects(h).path("daemon");
    }

    private static JsonNode objects(NetnsFabric.Host h) {
        Proc.Result r =
                fabric.exec(h, Duration.ofSeconds(30), Env.bin("mrce-ctl").toString(), "objects", "--json");
        assertThat(r.ok()).as("mrce-ctl objects: " + r.output()).isTrue();
        try {
            return JSON.readTree(r.output());
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + r.output(), e);
        }
    }

    private static void sleepMs(int ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
