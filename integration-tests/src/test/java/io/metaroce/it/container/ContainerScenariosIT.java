package io.metaroce.it.container;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.PerftestClock;
import io.metaroce.it.Wait;
import io.metaroce.it.container.ContainerFabric.Counters;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Unmodified applications between containers on the standard fabric (hosts A and C behind leaf
 * A, host B behind leaf B, four ECMP spine links; see {@link ContainerFabric}), one daemon per
 * container, each writing per-path stats. Every scenario asserts on the data (rc_pingpong's
 * checked buffers and result lines, mrce_integrity's checksums) and on counters: packets per
 * spine link (the leaves' interface counters) and the daemons' per-path and transport counters.
 */
@Tag("container")
@Timeout(600)
class ContainerScenariosIT {
    /**
     * Scenarios assert that every spine carries some of a run's traffic. The kernel hashes each
     * path's source port onto a spine with a seed drawn at boot; with the default 8 paths a spine
     * gets none of a QP's paths about a third of the time, with 32 paths over 1024 ports about
     * once in 2 500 QPs (4 * (3/4)^32).
     */
    static final String[] DAEMON_ARGS = {"--paths", "32", "--entropy-ports", "1024"};

    /** ib_write_bw's result row: #bytes #iterations BW peak BW average MsgRate. */
    private static final Pattern WRITE_BW_ROW =
            Pattern.compile("(?m)^\\s*65536\\s+2000\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)");

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    /** Messages of a faulted mrce_integrity run, and after how many of them the fault comes. */
    private static final int MESSAGES = 2000;

    private static final int PAUSE_AT = 500;
    private static final AtomicInteger PORT = new AtomicInteger(19100);
    private static ContainerFabric fabric;
    private static Node a;
    private static Node b;
    private static Node c;

    @BeforeAll
    static void fabric() {
        ContainerEnv.assumeDocker();
        fabric = ContainerFabric.builder("ContainerScenariosIT")
                .leafA("A", "C")
                .leafB("B")
                .build();
        a = fabric.host("A");
        b = fabric.host("B");
        c = fabric.host("C");
        fabric.startDaemons(DAEMON_ARGS);
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void rcPingPongChecksDataAcrossContainers() {
        Counters before = fabric.spineCounters();
        int port = PORT.getAndIncrement();
        Apps.Exits e =
                Apps.startPingPong(fabric, b, a, port, "-c", "-n", "1000").finish(RUN_TIMEOUT);
        Apps.assertPingPong(e, 4096, 1000, "ibv_rc_pingpong -c -n 1000, A to B");
        Counters carried = fabric.spineCounters().minus(before);
        System.out.printf("ContainerScenariosIT: rc_pingpong: packets per spine link %s%n", carried);
        assertThat(carried.totalAtoB()).as("A->B packets on the spine").isGreaterThanOrEqualTo(1000);
        assertThat(carried.totalBtoA()).as("B->A packets on the spine").isGreaterThanOrEqualTo(1000);
    }

    @Test
    void perftestWriteBwAcrossContainers() {
        int port = PORT.getAndIncrement();
        List<String> cmd = List.of(
                "ib_write_bw",
                "-d",
                "mrce0",
                "-x",
                "0",
                "-F",
                "-s",
                "65536",
                "-n",
                "2000",
                "-p",
                Integer.toString(port));
        Counters before = fabric.spineCounters();
        Apps.Exits e = Apps.start(fabric, b, a, port, cmd, cmd).finish(RUN_TIMEOUT);
        assertThat(e.clientExit()).as("ib_write_bw client" + e.context()).isZero();
        assertThat(e.serverExit()).as("ib_write_bw server" + e.context()).isZero();
        Matcher row = WRITE_BW_ROW.matcher(e.clientOutput());
        assertThat(row.find()).as("the 65536-byte result row" + e.context()).isTrue();
        double mbs = Double.parseDouble(row.group(2));
        if (!PerftestClock.unmeasured(mbs, e.clientOutput())) {
            assertThat(mbs).as("average MB/s" + e.context()).isPositive();
        }
        Counters carried = fabric.spineCounters().minus(before);
        System.out.printf(
                "ContainerScenariosIT: ib_write_bw 64 KiB x 2000: %s MB/s average; packets per spine %s%n",
                row.group(2), carried);
        // 2000 x 64 KiB in 1 KiB packets: about 131k packets A -> B, sprayed over every spine
        // (health-weighted: not evenly).
        for (int l = 0; l < fabric.spineCount(); l++) {
            assertThat(carried.aToB()[l])
                    .as("A->B packets on spine %d (%s)", l, carried)
                    .isPositive();
        }
    }

    @Test
    void javaRcPingPongAgainstCServerAcrossContainers() {
        int port = PORT.getAndIncrement();
        NodeProc server = b.startApp("rc_pingpong-server", Apps.pingPongCmd(port, "-c", "-n", "500"));
        boolean up = Wait.until(Duration.ofSeconds(20), () -> b.tcpListening(port) || !server.isAlive());
        assertThat(up && server.isAlive())
                .as("server listening: " + server.output())
                .isTrue();
        NodeProc client = a.start(
                "jverbs-client",
                List.of(
                        "jverbs",
                        "rc-pingpong",
                        "-d",
                        "mrce0",
                        "-g",
                        "0",
                        "-p",
                        Integer.toString(port),
                        "-c",
                        "-n",
                        "500",
                        b.mgmtAddr()));
        Apps.Exits e = new Apps.Pair(fabric, server, client).finish(RUN_TIMEOUT);
        Apps.assertPingPong(e, 4096, 500, "Java rc-pingpong (A) against C ibv_rc_pingpong (B), -c -n 500");
    }

    @Test
    void integrityWithOnePercentLossOnOneSpine() {
        // 1 % loss on the spine that carried the most of the run's first part: some of the run's
        // paths are on it for sure.
        DaemonStats statsBefore = a.freshStats();
        FaultedRun r = integrityWithFault(0xc0_1001L, "made 1 % lossy", l -> l.loss(Link.Loss.PCT_1));
        Apps.assertIntegrity(r.exits(), MESSAGES, "1 % loss on spine link " + r.link());
        Counters carried = r.whole();
        DaemonStats stats = a.freshStats();
        System.out.printf(
                "ContainerScenariosIT: 1 %% loss on spine %d: packets per link %s; the run's paths in A: %s%n",
                r.link(), carried, stats.lastClosedQpPaths());
        for (int l = 0; l < fabric.spineCount(); l++) {
            assertThat(carried.aToB()[l])
                    .as("A->B packets on spine link %d (%s)", l, carried)
                    .isPositive();
        }
        assertThat(r.after().aToB()[r.link()])
                .as("A->B packets on the lossy link after the fault")
                .isPositive();
        // The sender saw the loss on its paths and repaired it: per-path losses, retransmissions.
        assertThat(stats.delta(statsBefore, "pathLosses"))
                .as("A's path losses (%s)", stats.counters())
                .isPositive();
        assertThat(stats.lastClosedQpPaths())
                .as("the run's paths in A")
                .isNotEmpty()
                .anySatisfy(p -> assertThat(p.losses()).isPositive());
        assertThat(stats.delta(statsBefore, "dataRetransmits"))
                .as("A's retransmissions")
                .isPositive();
    }

    @Test
    void spineBlackholedMidTransfer() {
        DaemonStats statsBefore = a.freshStats();
        FaultedRun r = integrityWithFault(0xc0_1002L, "black-holed", Link::blackhole);
        int dead = r.link();
        Apps.assertIntegrity(r.exits(), MESSAGES, "spine link " + dead + " black-holed mid-transfer");
        Counters after = r.after();
        DaemonStats stats = a.freshStats();
        System.out.printf(
                "ContainerScenariosIT: after black-holing spine %d: %s; A's counters %s; the run's paths %s%n",
                dead, after, stats.counters(), stats.lastClosedQpPaths());
        assertThat(r.before().aToB()[dead])
                .as("A->B packets on the link before it was black-holed")
                .isPositive();
        // Drops happen before the count, the apps' TCP is on the management bridge: only ARP and the
        // daemons' connection-manager TCP (heartbeats; the blackhole drops MetaRoCE's UDP only) may cross.
        assertThat(after.aToB()[dead])
                .as("A->B packets across the black-holed link (A's CM segments %d)", r.cmSegmentsAtoB())
                .isLessThanOrEqualTo(20 + r.cmSegmentsAtoB());
        assertThat(after.bToA()[dead])
                .as("B->A packets across the black-holed link (B's CM segments %d)", r.cmSegmentsBtoA())
                .isLessThanOrEqualTo(20 + r.cmSegmentsBtoA());
        assertThat(after.totalAtoB() - after.aToB()[dead])
                .as("A->B packets on the live links")
                .isPositive();
        // The transport noticed: the dead link's paths lost packets or timed out, and the data went around.
        assertThat(stats.delta(statsBefore, "pathLosses") + stats.delta(statsBefore, "pathTimeouts"))
                .as("A's path losses + path timeouts (%s)", stats.counters())
                .isPositive();
        assertThat(stats.delta(statsBefore, "dataRetransmits"))
                .as("A's retransmissions")
                .isPositive();
        // Paths whose source port hashed onto the dead link were retired and replaced by new ports.
        assertThat(stats.delta(statsBefore, "pathRetirements"))
                .as("A's path retirements")
                .isPositive();
        assertThat(stats.lastClosedQpPaths())
                .as("the run's paths in A: some were replaced")
                .isNotEmpty()
                .anySatisfy(p -> assertThat(p.get("replacements")).isPositive());
    }

    @Test
    void oneSlowSpine() {
        FaultedRun r = integrityWithFault(0xc0_1003L, "slowed to 5 Mbit/s", l -> l.rate("5mbit", 50));
        int slow = r.link();
        Apps.assertIntegrity(r.exits(), MESSAGES, "spine link " + slow + " limited to 5 Mbit/s");
        Counters before = r.before();
        Counters after = r.after();
        System.out.printf(
                "ContainerScenariosIT: spine %d at 5 Mbit/s: packets per link before %s, after %s; the run's"
                        + " paths in A %s%n",
                slow, before, after, a.freshStats().lastClosedQpPaths());
        long others = after.totalAtoB() - after.aToB()[slow];
        long othersAverage = others / (fabric.spineCount() - 1);
        assertThat(before.aToB()[slow])
                .as("A->B packets on the busiest link before it was slowed")
                .isPositive();
        assertThat(othersAverage)
                .as("A->B packets per healthy link after the slowdown (%s)", after)
                .isPositive();
        // The sender weighs paths by health: the slow link gets less than half of a healthy link's share.
        assertThat(after.aToB()[slow] * 2)
                .as("A->B packets on the slow link vs the others' average (%s)", after)
                .isLessThan(othersAverage);
    }

    @Test
    void daemonRestartedMidRun() {
        Apps.Pair run =
                Apps.startIntegrity(fabric, b, a, PORT.getAndIncrement(), 100_000, 0xc0_1004L, Duration.ofSeconds(60));
        Counters start = fabric.spineCounters();
        boolean flowing = Wait.until(
                Duration.ofSeconds(60),
                () -> fabric.spineCounters().minus(start).totalAtoB() >= 500 || !run.clientAlive());
        assertThat(flowing && run.clientAlive()).as("the transfer is under way").isTrue();
        b.killDaemon();
        // The server in B loses its daemon: it must fail with an error, not hang.
        Integer serverExit = run.server().tryWait(Duration.ofSeconds(30));
        String serverOut = run.server().output();
        run.close();
        assertThat(serverExit)
                .as("the server in B ends within 30 s of its daemon's crash; its output:%n%s", serverOut)
                .isNotNull();
        assertThat(serverExit).as("the server's exit status").isNotZero();
        assertThat(serverOut).as("the server reports a failure").contains("mrce_integrity: FAIL");
        // A new daemon in B; a new run across the same containers completes with correct data.
        b.startDaemon(DAEMON_ARGS);
        b.awaitDaemonReady();
        Apps.Exits e = Apps.startIntegrity(fabric, b, a, PORT.getAndIncrement(), 500, 0xc0_1005L, RUN_TIMEOUT)
                .finish(RUN_TIMEOUT);
        Apps.assertIntegrity(e, 500, "after B's daemon was restarted");
        Apps.assertPingPong(
                Apps.startPingPong(fabric, b, a, PORT.getAndIncrement(), "-c", "-n", "200")
                        .finish(RUN_TIMEOUT),
                4096,
                200,
                "rc_pingpong after B's daemon was restarted");
    }

    @Test
    void incastTwoHostsSendToOne() {
        DaemonStats bBefore = b.freshStats();
        Apps.Pair fromA = Apps.startIntegrity(fabric, b, a, PORT.getAndIncrement(), 1000, 0xc0_1006L, RUN_TIMEOUT);
        Apps.Pair fromC;
        try {
            fromC = Apps.startIntegrity(fabric, b, c, PORT.getAndIncrement(), 1000, 0xc0_1007L, RUN_TIMEOUT);
        } catch (RuntimeException | Error e) {
            fromA.close();
            throw e;
        }
        Apps.Exits ea;
        Apps.Exits ec;
        try {
            ea = fromA.finish(RUN_TIMEOUT);
        } finally {
            ec = fromC.finish(RUN_TIMEOUT);
        }
        Apps.Integrity ra = Apps.assertIntegrity(ea, 1000, "incast: A to B, with C sending to B at once");
        Apps.Integrity rc = Apps.assertIntegrity(ec, 1000, "incast: C to B, with A sending to B at once");
        assertThat(ra.checksum()).as("different seeds, different data").isNotEqualTo(rc.checksum());
        DaemonStats bAfter = b.freshStats();
        System.out.printf("ContainerScenariosIT: incast: B's counters %s%n", bAfter.counters());
        // Both transfers landed in B at once: B received at least both payloads' packets.
        long minPackets = (ra.bytes() + rc.bytes()) / 1500;
        assertThat(bAfter.delta(bBefore, "dataRx"))
                .as("data packets B received")
                .isGreaterThanOrEqualTo(minPackets);
    }

    // --- helpers ---

    /** A faulted run: which link, the spine counters at its start, at the fault and at its end; the apps' exits. */
    private record FaultedRun(
            int link,
            Counters start,
            Counters atFault,
            Counters end,
            Apps.Exits exits,
            long cmSegmentsAtoB,
            long cmSegmentsBtoA) {
        Counters before() {
            return atFault.minus(start);
        }

        Counters after() {
            return end.minus(atFault);
        }

        Counters whole() {
            return end.minus(start);
        }
    }

    /**
     * Runs mrce_integrity from A to B ({@link #MESSAGES} messages) with its client paused after
     * {@link #PAUSE_AT}; while it waits, applies {@code fault} to the spine link that carried the
     * most of the run so far, then lets it go on and waits for both ends. The fault always meets
     * the rest of the run, however fast the first part went, and the link is made healthy again
     * whatever happens ({@link Link#clear}).
     */
    private static FaultedRun integrityWithFault(long seed, String what, Consumer<Link> fault) {
        Counters start = fabric.spineCounters();
        Apps.PausedRun run =
                Apps.startIntegrityPaused(fabric, b, a, PORT.getAndIncrement(), MESSAGES, PAUSE_AT, seed, RUN_TIMEOUT);
        Link faulted = null;
        try {
            run.awaitPaused(RUN_TIMEOUT);
            Counters atFault = fabric.spineCounters();
            long cmA = a.cmSegmentsOut();
            long cmB = b.cmSegmentsOut();
            Counters so = atFault.minus(start);
            int busiest = 0;
            for (int l = 1; l < fabric.spineCount(); l++) {
                if (so.both(l) > so.both(busiest)) {
                    busiest = l;
                }
            }
            faulted = fabric.spine(busiest);
            fault.accept(faulted);
            System.out.printf(
                    "ContainerScenariosIT: %s spine link %d after %d of %d messages (%s)%n",
                    what, busiest, PAUSE_AT, MESSAGES, so);
            run.resume();
            Apps.Exits exits = run.pair().finish(RUN_TIMEOUT);
            Counters end = fabric.spineCounters();
            return new FaultedRun(
                    busiest, start, atFault, end, exits, a.cmSegmentsOut() - cmA, b.cmSegmentsOut() - cmB);
        } finally {
            run.pair().close();
            if (faulted != null) {
                faulted.clear();
            }
        }
    }
}
