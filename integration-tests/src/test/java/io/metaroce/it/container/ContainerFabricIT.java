package io.metaroce.it.container;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.model.Container;
import io.metaroce.it.Proc;
import io.metaroce.it.Sh;
import io.metaroce.it.Wait;
import io.metaroce.it.container.ContainerFabric.Counters;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The container fabric itself, with plain UDP ({@code udp_flows}, in the node image) and no
 * daemon: flows spread over every spine link by source port, the blackhole drops MetaRoCE's port
 * and nothing else, a downed spine link moves its flows and comes back, the TBF limit slows a
 * link; and teardown and the reaping of a killed run's leftovers leave nothing behind.
 */
@Tag("container")
@Timeout(300)
class ContainerFabricIT {

    private static final String UDP_FLOWS = "/opt/metaroce/integration-tests/target/bpf/udp_flows";
    private static final Pattern FLOW = Pattern.compile("(?m)^flow (\\d+) (\\d+)$");
    private static final int FLOWS = 64;
    private static final int FIRST_SPORT = 40000;
    private static ContainerFabric fabric;

    @BeforeAll
    static void fabric() {
        ContainerEnv.assumeDocker();
        fabric = ContainerFabric.builder("ContainerFabricIT")
                .leafA("A")
                .leafB("B")
                .build();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void udpFlowsSpreadOverEverySpineLink() {
        Counters before = fabric.spineCounters();
        Map<Integer, Long> got = sendFlows(5000, 20);
        Counters carried = fabric.spineCounters().minus(before);
        System.out.printf("ContainerFabricIT: %d flows: packets per spine link %s%n", FLOWS, carried);
        assertThat(got)
                .as("every flow arrived whole")
                .hasSize(FLOWS)
                .allSatisfy((port, n) -> assertThat(n).isEqualTo(20));
        for (int l = 0; l < fabric.spineCount(); l++) {
            assertThat(carried.aToB()[l])
                    .as("A->B packets on spine link %d (%s)", l, carried)
                    .isGreaterThanOrEqualTo(20);
        }
    }

    @Test
    void blackholeDropsOnlyMetaRocePortOnItsLink() {
        Link spine = fabric.spine(0);
        spine.blackhole();
        try {
            Counters before = fabric.spineCounters();
            Map<Integer, Long> metaroce = sendFlows(4793, 10);
            Counters carried = fabric.spineCounters().minus(before);
            Map<Integer, Long> other = sendFlows(5001, 10);
            System.out.printf(
                    "ContainerFabricIT: spine 0 black-holed: flows to 4793 arrived %d of %d, %s%n",
                    metaroce.size(), FLOWS, carried);
            assertThat(carried.aToB()[0])
                    .as("packets to port 4793 across the black hole")
                    .isZero();
            assertThat(metaroce.size())
                    .as("flows to 4793 that avoid spine 0 arrive")
                    .isBetween(1, FLOWS - 1);
            assertThat(metaroce.values())
                    .as("a flow arrives whole or not at all")
                    .allSatisfy(n -> assertThat(n).isEqualTo(10));
            assertThat(other).as("other ports are not dropped").hasSize(FLOWS);
        } finally {
            spine.clearLoss();
        }
        assertThat(sendFlows(4793, 10))
                .as("after clearing, every flow to 4793 arrives")
                .hasSize(FLOWS);
    }

    @Test
    void spineLinkDownAndUp() {
        fabric.spineDown(1);
        try {
            Counters before = fabric.spineCounters();
            Map<Integer, Long> got = sendFlows(5002, 10);
            Counters carried = fabric.spineCounters().minus(before);
            assertThat(got).as("every flow arrives over the other links").hasSize(FLOWS);
            assertThat(carried.aToB()[1])
                    .as("packets over the downed link (%s)", carried)
                    .isZero();
        } finally {
            fabric.spineUp(1);
        }
        Counters before = fabric.spineCounters();
        assertThat(sendFlows(5003, 10)).hasSize(FLOWS);
        assertThat(fabric.spineCounters().minus(before).aToB()[1])
                .as("the link carries flows again")
                .isPositive();
    }

    @Test
    void rateLimitSlowsItsLink() {
        Link hostLink = fabric.hostLink("A");
        double fast = tcpMbitPerSec();
        hostLink.rate("10mbit", 100);
        double slow;
        try {
            slow = tcpMbitPerSec();
        } finally {
            hostLink.clearRate();
        }
        System.out.printf(
                "ContainerFabricIT: TCP A to B: %.1f Mbit/s, with A's link at 10 Mbit/s %.1f Mbit/s%n", fast, slow);
        assertThat(slow).as("Mbit/s through a 10 Mbit/s link").isBetween(3.0, 11.0);
        assertThat(fast).as("Mbit/s unlimited").isGreaterThan(50.0);
    }

    @Test
    void closeAndReapLeaveNothing() {
        ContainerFabric small =
                ContainerFabric.builder("ContainerFabricIT-small").spines(1).build();
        String id = small.id();
        List<String> namespaces = small.namespaces();
        assertThat(containersOf(id)).as("containers of the running fabric").hasSize(2);
        small.close();
        assertThat(containersOf(id)).as("containers after close").isEmpty();
        assertThat(Sh.check("ip", "netns", "list")).as("namespaces after close").doesNotContain(id);
        assertThat(namespaces).isNotEmpty();

        // A run whose JVM was killed: its container and namespace carry a pid that is gone.
        long deadPid = deadPid();
        String leftoverNs = ContainerEnv.NS_PREFIX + deadPid + "-000000-la";
        Sh.check("ip", "netns", "add", leftoverNs);
        String leftover = ContainerEnv.client()
                .createContainerCmd(ContainerEnv.image())
                .withCmd("sleep", "infinity")
                .withLabels(Map.of(ContainerEnv.OWNER_LABEL, Long.toString(deadPid)))
                .withHostConfig(com.github.dockerjava.api.model.HostConfig.newHostConfig()
                        .withNetworkMode("none"))
                .exec()
                .getId();
        ContainerEnv.client().startContainerCmd(leftover).exec();
        ContainerEnv.reapNow();
        assertThat(ContainerEnv.client().listContainersCmd().withShowAll(true).exec())
                .as("containers after reaping")
                .noneMatch(c -> c.getId().equals(leftover));
        assertThat(Sh.check("ip", "netns", "list"))
                .as("namespaces after reaping")
                .doesNotContain(leftoverNs);
    }

    // --- helpers ---

    /** FLOWS flows of COUNT datagrams each from A to PORT on B; what arrived per source port. */
    private static Map<Integer, Long> sendFlows(int port, int count) {
        Node a = fabric.host("A");
        Node b = fabric.host("B");
        long expected = (long) FLOWS * count;
        NodeProc rx = b.start(
                "udp_flows-recv", List.of(UDP_FLOWS, "recv", Integer.toString(port), Long.toString(expected), "1000"));
        try {
            assertThat(Wait.until(Duration.ofSeconds(10), () -> rx.output().contains("listening") || !rx.isAlive()))
                    .as("udp_flows receiver started: %s", rx.output())
                    .isTrue();
            Proc.Result tx = a.exec(
                    Duration.ofSeconds(60),
                    UDP_FLOWS,
                    "send",
                    b.addr(),
                    Integer.toString(port),
                    Integer.toString(FIRST_SPORT),
                    Integer.toString(FLOWS),
                    Integer.toString(count));
            assertThat(tx.output()).as("udp_flows send").contains("sent " + expected);
            assertThat(rx.waitFor(Duration.ofSeconds(30)))
                    .as("udp_flows recv: %s", rx.output())
                    .isZero();
            Map<Integer, Long> perFlow = new TreeMap<>();
            Matcher m = FLOW.matcher(rx.output());
            while (m.find()) {
                perFlow.put(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)));
            }
            return perFlow;
        } finally {
            rx.close();
        }
    }

    private static final Pattern RECEIVED_BPS =
            Pattern.compile("\"sum_received\":\\s*\\{[^}]*?\"bits_per_second\":\\s*([0-9.eE+]+)");

    /** One second of iperf3 TCP from A to B's fabric address: what B received, in Mbit/s. */
    private static double tcpMbitPerSec() {
        Node a = fabric.host("A");
        Node b = fabric.host("B");
        NodeProc server = b.start("iperf3-server", List.of("iperf3", "-s", "-1", "-p", "5201"));
        try {
            assertThat(Wait.until(Duration.ofSeconds(10), () -> b.tcpListening(5201) || !server.isAlive()))
                    .as("iperf3 server listening: %s", server.output())
                    .isTrue();
            Proc.Result r = a.exec(Duration.ofSeconds(30), "iperf3", "-c", b.addr(), "-p", "5201", "-t", "1", "-J");
            Matcher m = RECEIVED_BPS.matcher(r.output());
            assertThat(r.ok() && m.find()).as("iperf3 client: %s", r.output()).isTrue();
            server.waitFor(Duration.ofSeconds(10));
            return Double.parseDouble(m.group(1)) / 1e6;
        } finally {
            server.close();
        }
    }

    private static List<Container> containersOf(String fabricId) {
        return ContainerEnv.client()
                .listContainersCmd()
                .withShowAll(true)
                .withLabelFilter(Map.of("io.metaroce.it.fabric", fabricId))
                .exec();
    }

    private static long deadPid() {
        for (long pid = 4_000_000; ; pid++) {
            if (ProcessHandle.of(pid).isEmpty()) {
                return pid;
            }
        }
    }
}
