package io.metaroce.it.container;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.metaroce.it.container.ContainerFabric.Counters;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Multi-plane QPs between containers (issue 20): a {@link ContainerFabric} with two separate
 * planes, each its own pair of leaves and four spine links; every host's daemon serves ONE device
 * {@code mrce0} over both ({@code --device mrce0=fab0+fab1}). Unmodified-verbs
 * {@code mrce_integrity} (checksummed SENDs over one RC QP) from A to B runs in three legs that
 * the client's own progress delimits (it pauses after 1000 and 2000 completed messages): both
 * planes carry the first; plane 2 is black-holed on every spine link (tc-BPF on both ends drops
 * all MetaRoCE UDP) for the second, which then crosses plane 1 only; plane 2 is restored for the
 * third, and traffic comes back to it. Asserted: the data (checksums, counts), packets per plane
 * (the leaves' spine counters), the daemons' per-plane frame counters ({@code mrce-ctl counters}:
 * groups plane0, plane1) and the states of A's plane-2 paths while the plane is dead.
 */
@Tag("container")
@Timeout(600)
class ContainerPlanesIT {
    /** 32 paths, 16 per plane, each over 4 spines: every spine of each plane gets some. */
    private static final int PATHS = 32;

    private static final String[] DAEMON_ARGS = {"--paths", Integer.toString(PATHS), "--entropy-ports", "1024"};
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(240);
    private static final int MESSAGES = 3000;
    private static final ObjectMapper JSON = new ObjectMapper();

    private static ContainerFabric fabric;
    private static Node a;
    private static Node b;

    @BeforeAll
    static void fabric() {
        ContainerEnv.assumeDocker();
        fabric = ContainerFabric.builder("ContainerPlanesIT")
                .leafA("A")
                .leafB("B")
                .planes(2)
                .build();
        a = fabric.host("A");
        b = fabric.host("B");
        fabric.startMultiPlaneDaemons(DAEMON_ARGS);
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    private static JsonNode ctl(Node n, String what) {
        String out = n.check("mrce-ctl", what, "--json");
        try {
            return JSON.readTree(out);
        } catch (IOException e) {
            throw new AssertionError("mrce-ctl " + what + " --json in " + n.name() + " is not JSON: " + out, e);
        }
    }

    /** A host's device's frames per plane: {rx plane 0, tx plane 0, rx plane 1, tx plane 1}. */
    private static long[] planeFrames(Node n) {
        JsonNode c = ctl(n, "counters");
        long[] v = new long[4];
        for (int k = 0; k < 2; k++) {
            JsonNode p = c.path("plane" + k);
            assertThat(p.isMissingNode())
                    .as("group plane%d in %s's counters %s", k, n.name(), c)
                    .isFalse();
            v[2 * k] = p.path("rxFrames").asLong();
            v[2 * k + 1] = p.path("txFrames").asLong();
        }
        return v;
    }

    /** States of A's paths on plane 2 (entropy mod 2 = 1). */
    private static List<String> plane2PathStates() {
        List<String> states = new ArrayList<>();
        for (JsonNode qp : ctl(a, "paths").path("qps")) {
            for (JsonNode p : qp.path("paths")) {
                if (p.path("entropy").asLong() % 2 == 1) {
                    states.add(p.path("state").asText());
                }
            }
        }
        return states;
    }

    private static long[] minus(long[] x, long[] y) {
        long[] d = new long[x.length];
        for (int i = 0; i < x.length; i++) {
            d[i] = x[i] - y[i];
        }
        return d;
    }

    /** Every spine link of plane 2 drops MetaRoCE's UDP both ways. */
    private static void blackholePlane2() {
        for (int i = 0; i < fabric.spineCount(); i++) {
            fabric.spine(2, i).blackhole();
        }
    }

    private static void healPlane2() {
        for (int i = 0; i < fabric.spineCount(); i++) {
            fabric.spine(2, i).clearLoss();
        }
    }

    @Test
    void oneQpOverTwoPlanesLeavesABlackHoledPlaneAndComesBack() {
        assertThat(a.daemon().output())
                .as("A's daemon serves one device over two planes")
                .contains("mrce0: 2 planes (fab0 " + a.addr() + ", fab1 " + fabric.plane2Addr(a) + ")");
        Counters[] p1 = new Counters[4];
        Counters[] p2 = new Counters[4];
        long[][] fa = new long[4][];
        long[][] fb = new long[4][];
        List<String> statesDead;
        Apps.Exits exits;
        p1[0] = fabric.spineCounters(1);
        p2[0] = fabric.spineCounters(2);
        fa[0] = planeFrames(a);
        fb[0] = planeFrames(b);
        Apps.PausedRun run = Apps.startIntegrityPaused(
                fabric, b, a, 19300, MESSAGES, new int[] {1000, 2000}, 0xc0_2001L, RUN_TIMEOUT);
        boolean broken = false;
        try {
            run.awaitPaused(RUN_TIMEOUT, 1);
            p1[1] = fabric.spineCounters(1);
            p2[1] = fabric.spineCounters(2);
            fa[1] = planeFrames(a);
            fb[1] = planeFrames(b);
            broken = true;
            blackholePlane2();
            run.resume(0);
            run.awaitPaused(RUN_TIMEOUT, 2);
            p1[2] = fabric.spineCounters(1);
            p2[2] = fabric.spineCounters(2);
            fa[2] = planeFrames(a);
            fb[2] = planeFrames(b);
            statesDead = plane2PathStates();
            healPlane2();
            broken = false;
            run.resume(1);
            exits = run.pair().finish(RUN_TIMEOUT);
        } finally {
            run.pair().close();
            if (broken) {
                healPlane2();
            }
        }
        p1[3] = fabric.spineCounters(1);
        p2[3] = fabric.spineCounters(2);
        fa[3] = planeFrames(a);
        fb[3] = planeFrames(b);
        String report = String.format(
                "legs (both planes; plane 2 black-holed; healed): spine packets plane 1 %s | %s | %s;"
                        + " plane 2 %s | %s | %s; device frames {rx0, tx0, rx1, tx1} A %s | %s | %s,"
                        + " B %s | %s | %s; A's plane-2 paths while dead %s",
                p1[1].minus(p1[0]),
                p1[2].minus(p1[1]),
                p1[3].minus(p1[2]),
                p2[1].minus(p2[0]),
                p2[2].minus(p2[1]),
                p2[3].minus(p2[2]),
                Arrays.toString(minus(fa[1], fa[0])),
                Arrays.toString(minus(fa[2], fa[1])),
                Arrays.toString(minus(fa[3], fa[2])),
                Arrays.toString(minus(fb[1], fb[0])),
                Arrays.toString(minus(fb[2], fb[1])),
                Arrays.toString(minus(fb[3], fb[2])),
                statesDead);
        System.out.println("ContainerPlanesIT: " + report);
        Apps.assertIntegrity(exits, MESSAGES, "one QP over two planes, plane 2 black-holed and restored mid-run");
        // leg 1: both planes carry the QP's data
        assertThat(p1[1].minus(p1[0]).totalAtoB())
                .as("A->B on plane 1, leg 1: " + report)
                .isGreaterThan(100);
        assertThat(p2[1].minus(p2[0]).totalAtoB())
                .as("A->B on plane 2, leg 1: " + report)
                .isGreaterThan(100);
        assertThat(minus(fb[1], fb[0])[2])
                .as("B received on plane 2, leg 1: " + report)
                .isGreaterThan(100);
        // leg 2: nothing of MetaRoCE crosses plane 2 (the drops come before the leaves' count; ARP may);
        // plane 1 carries the run on, and A's plane-2 paths are out of the spray
        assertThat(p2[2].minus(p2[1]).totalAtoB())
                .as("A->B on the dead plane 2: " + report)
                .isLessThanOrEqualTo(20);
        assertThat(p2[2].minus(p2[1]).totalBtoA())
                .as("B->A on the dead plane 2: " + report)
                .isLessThanOrEqualTo(20);
        assertThat(minus(fb[2], fb[1])[2])
                .as("B received on the dead plane 2: " + report)
                .isZero();
        assertThat(minus(fa[2], fa[1])[2])
                .as("A received on the dead plane 2: " + report)
                .isZero();
        assertThat(p1[2].minus(p1[1]).totalAtoB())
                .as("A->B on plane 1, leg 2: " + report)
                .isGreaterThan(100);
        assertThat(statesDead)
                .as("A's plane-2 paths while the plane is dead: " + report)
                .hasSize(PATHS / 2)
                .doesNotContain("active");
        // leg 3: plane 2 carries traffic again
        assertThat(p2[3].minus(p2[2]).totalAtoB())
                .as("A->B on the healed plane 2: " + report)
                .isGreaterThan(100);
        assertThat(minus(fb[3], fb[2])[2])
                .as("B received on the healed plane 2: " + report)
                .isGreaterThan(100);
    }
}
