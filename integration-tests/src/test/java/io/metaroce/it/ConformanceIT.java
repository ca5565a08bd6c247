package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The wire conformance suite (bin/mrce-conformance, docs/conformance.md) against the reference
 * daemon: mrce-nicd and the suite's target agent in host B, the suite itself (plain UDP sockets,
 * no daemon) in host A, across a direct veth link. The daemon passes every case over the UDP port
 * and the AF_XDP port; started with each of its conformance break hooks
 * ({@code -Dmetaroce.conformance.break}), it fails the case that checks the rule it breaks.
 */
@Timeout(900)
class ConformanceIT {
    private static final Duration SUITE_TIMEOUT = Duration.ofSeconds(300);
    private static final Duration AGENT_TIMEOUT = Duration.ofSeconds(60);
    private static final String AGENT_PORT = "4795";
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("ConformanceIT", 1500);
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    /** What one run of the suite gave: exit status, its output, and junit.xml. */
    record Run(int exit, String output, String junit, Path reportDir, String daemonLog) {
        /** The ids of the cases junit.xml lists, and of those that failed. */
        List<String> cases(boolean failedOnly) {
            Matcher m = Pattern.compile("<testcase classname=\"mrce-conformance\" name=\"([^\"]+)\"[^>]*>\\s*"
                    + "<system-out>[^<]*</system-out>\\s*(<failure)?").matcher(junit);
            List<String> ids = new java.util.ArrayList<>();
            while (m.find()) {
                if (!failedOnly || m.group(2) != null) {
                    ids.add(m.group(1));
                }
            }
            return ids;
        }
    }

    /** Starts the daemon in B (with env), the agent beside it, runs the suite from A; stops both. */
    private static Run runSuite(String name, Map<String, String> env, String... daemonArgs) throws IOException {
        NetnsFabric.Host a = fabric.a();
        NetnsFabric.Host b = fabric.b();
        Daemon d = fabric.startDaemon(b, env, daemonArgs);
        try {
            fabric.awaitReady(d);
            try (Proc agent = fabric.start(b, "agent-" + name, List.of(Env.bin("mrce-conformance").toString(), "agent",
                    "--listen", b.addr() + ":" + AGENT_PORT))) {
                boolean up = Wait.until(AGENT_TIMEOUT, () -> agent.output().contains("listening") || !agent.isAlive());
                assertThat(up && agent.isAlive()).as("the target agent did not start: %s", agent.output()).isTrue();
                Path reportDir = fabric.logDir().resolve("report-" + name);
                try (Proc suite = fabric.start(a, "suite-" + name, List.of(Env.bin("mrce-conformance").toString(),
                        "--target", b.addr(), "--agent", b.addr() + ":" + AGENT_PORT, "--report",
                        reportDir.toString()))) {
                    int exit = suite.waitFor(SUITE_TIMEOUT);
                    Path junit = reportDir.resolve("junit.xml");
                    String xml = Files.exists(junit) ? Files.readString(junit) : "";
                    return new Run(exit, suite.output() + "\n--- agent:\n" + agent.output(), xml, reportDir,
                            d.logText());
                }
            }
        } finally {
            d.stop(Duration.ofSeconds(15));
        }
    }

    @ParameterizedTest(name = "--port {0}")
    @ValueSource(strings = {"udp", "xdp"})
    void referenceDaemonPassesEveryCase(String port) throws IOException {
        Run r = runSuite("pass-" + port, Map.of(), "--port", port);
        assertThat(r.exit()).as("suite exit; its output:\n%s\n%s", r.output(), fabric.diagnostics()).isZero();
        assertThat(r.cases(false)).as("cases in junit.xml").hasSizeGreaterThanOrEqualTo(26)
                .contains("rc.write.out-of-order", "rc.gap.acked-at-once", "rc.drop.bad-token", "rc.read.resend-range",
                        "rc.atomic.replay", "rc.requester.retransmit-other-path", "ud.qkey-and-grh",
                        "cm.connect-no-qp");
        assertThat(r.cases(true)).as("failed cases").isEmpty();
        assertThat(r.daemonLog()).doesNotContain("conformance test hook ON");
        assertThat(r.output()).containsPattern("mrce-conformance: \\d+ passed, 0 failed of \\d+ cases");
    }

    @ParameterizedTest(name = "break {0} is caught by {1}")
    @CsvSource({
        "ignore-token, rc.drop.bad-token",
        "ignore-crc, rc.drop.bad-crc",
        "place-duplicate-twice, rc.duplicate.dropped",
        "gap-unreported, rc.gap.acked-at-once",
        "retransmit-same-path, rc.requester.retransmit-other-path",
        "resend-whole-read, rc.read.resend-range",
        "ignore-rwnd, rc.requester.receive-window",
        "ignore-rnr-timer, rc.requester.rnr-wait",
    })
    void suiteCatchesEachBrokenRule(String rule, String caseId) throws IOException {
        Run r = runSuite("break-" + rule, Map.of("MRCE_NICD_JAVA_OPTS", "-Dmetaroce.conformance.break=" + rule),
                "--port", "udp");
        assertThat(r.daemonLog()).as("the daemon says the hook is on").contains("breaking rule '" + rule + "'");
        assertThat(r.exit()).as("suite exit with %s broken; output:\n%s", rule, r.output()).isEqualTo(1);
        assertThat(r.cases(true)).as("failed cases with %s broken; output:\n%s", rule, r.output()).contains(caseId);
        Path pcap = r.reportDir().resolve(caseId + ".pcap");
        assertThat(pcap).as("the failing case's packets").exists();
        assertThat(Files.size(pcap)).as("pcap with at least one packet").isGreaterThan(24 + 16 + 28 + 48);
    }
}
