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
                            + "<system-out>[^<]*</system-out>\\s*(<failure)?")
                    .matcher(junit);
            List<String> ids = new java.util.ArrayList<>();
            while (m.find()) {
                if (!failedOnly || m.group(2) != null) {
                    ids.add(m.group(1));
                }
            }
            return ids;
        }
    }

    /** Starts the daemon in B (with env), the agent beside it, runs the suite (or the cases {@code only} names) from A; stops both. */
    private static Run runSuite(String name, String only, Map<String, String> env, String... daemonArgs)
            throws IOException {
        NetnsFabric.Host a = fabric.a();
        NetnsFabric.Host b = fabric.b();
        Daemon d = fabric.startDaemon(b, env, daemonArgs);
        try {
            fabric.awaitReady(d);
            try (Proc agent = fabric.start(
                    b,
                    "agent-" + name,
                    List.of(
                            Env.bin("mrce-conformance").toString(),
                            "agent",
                            "--listen",
                            b.addr() + ":" + AGENT_PORT))) {
                boolean up = Wait.until(AGENT_TIMEOUT, () -> agent.output().contains("listening") || !agent.isAlive());
                assertThat(up && agent.isAlive())
                        .as("the target agent did not start: %s", agent.output())
                        .isTrue();
                Path reportDir = fabric.logDir().resolve("report-" + name);
                List<String> cmd = new java.util.ArrayList<>(List.of(
                        Env.bin("mrce-conformance").toString(),
                        "--target",
                        b.addr(),
                        "--agent",
                        b.addr() + ":" + AGENT_PORT,
                        "--report",
                        reportDir.toString()));
                if (only != null) {
                    cmd.addAll(List.of("--only", only));
                }
                try (Proc suite = fabric.start(a, "suite-" + name, cmd)) {
                    int exit = suite.waitFor(SUITE_TIMEOUT);
                    Path junit = reportDir.resolve("junit.xml");
                    String xml = Files.exists(junit) ? Files.readString(junit) : "";
                    return new Run(
                            exit, suite.output() + "\n--- agent:\n" + agent.output(), xml, reportDir, d.logText());
                }
            }
        } finally {
            d.stop(Duration.ofSeconds(15));
        }
    }

    /**
     * Every case of the suite and the break hook that makes the reference daemon fail it
     * (docs/conformance.md, "It catches broken rules"): one rule broken at a time.
     */
    static final Map<String, String> HOOKS = orderedMap(
            "rc.write.in-order", "write-ignores-offset",
            "rc.write.out-of-order", "drop-out-of-order",
            "rc.send.out-of-order", "send-ignores-offset",
            "rc.write-imm.completes-receive", "write-imm-loses-imm",
            "rc.gap.acked-at-once", "gap-unreported",
            "rc.ack.path-reports", "report-psn-ahead",
            "rc.duplicate.dropped", "place-duplicate-twice",
            "rc.window.edges", "accept-rsn-window-256",
            "rc.probe", "probe-unanswered",
            "rc.drop.bad-token", "ignore-token",
            "rc.drop.bad-crc", "ignore-crc",
            "rc.drop.bad-version", "ignore-version",
            "rc.drop.unknown-dst-qpn", "uncounted-unknown-qp",
            "rc.drop.wrong-src-qpn", "ignore-src-qpn",
            "rc.nak.rnr", "rnr-timer-zero",
            "rc.nak.remote-access", "nak-once",
            "rc.nak.invalid-request.length", "length-nak-remote-op",
            "rc.nak.invalid-request.atomic-alignment", "misaligned-atomic-access-nak",
            "rc.read.responses", "read-resp-wrong-rsn",
            "rc.read.resend-range", "resend-whole-read",
            "rc.atomic.replay", "atomic-no-replay",
            "rc.requester.retransmit-other-path", "retransmit-same-path",
            "rc.requester.read-rerequests-missing-range", "rerequest-whole-read",
            "rc.requester.receive-window", "ignore-rwnd",
            "rc.requester.rnr-wait", "ignore-rnr-timer",
            "rc.requester.path-retirement", "send-on-dead-path",
            "rc.ecn.ce-counted", "ce-unreported",
            "ud.qkey-and-grh", "ignore-qkey",
            "cm.hello-and-endpoint", "hello-heartbeat-zero",
            "cm.disconnect-on-destroy", "no-disconnect",
            "cm.reject-fails-qp", "ignore-reject",
            "cm.peer-timeout", "no-peer-timeout",
            "cm.connect-timeout", "no-connect-timeout",
            "cm.peer-restart", "ignore-restart",
            "cm.connect-no-qp", "no-reject-unknown-qp",
            "cm.ping-pong", "no-pong",
            "cm.extension-ignored", "close-on-extension",
            "cm.bad-frame-closes", "skip-bad-frame");

    private static Map<String, String> orderedMap(String... kv) {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return java.util.Collections.unmodifiableMap(m);
    }

    /** Every (hook, case) pair; {@code -Dconformance.hooks=a,b} runs only those hooks (to rerun a few by hand). */
    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> hooks() {
        List<String> only = List.of(System.getProperty("conformance.hooks", "").split(","));
        return HOOKS.entrySet().stream()
                .filter(e -> only.equals(List.of("")) || only.contains(e.getValue()))
                .map(e -> org.junit.jupiter.params.provider.Arguments.of(e.getValue(), e.getKey()));
    }

    @ParameterizedTest(name = "--port {0}")
    @ValueSource(strings = {"udp", "xdp"})
    void referenceDaemonPassesEveryCase(String port) throws IOException {
        Run r = runSuite("pass-" + port, null, Map.of(), "--port", port);
        assertThat(r.exit())
                .as("suite exit; its output:\n%s\n%s", r.output(), fabric.diagnostics())
                .isZero();
        assertThat(r.cases(false))
                .as("cases in junit.xml: each has its break hook below")
                .containsExactlyInAnyOrderElementsOf(HOOKS.keySet());
        assertThat(r.cases(true)).as("failed cases").isEmpty();
        assertThat(r.daemonLog()).doesNotContain("conformance test hook ON");
        assertThat(r.output())
                .contains("mrce-conformance: " + HOOKS.size() + " passed, 0 failed of " + HOOKS.size() + " cases");
    }

    /** The reference daemon with one rule broken fails the case that checks it (run alone: {@code --only}). */
    @ParameterizedTest(name = "break {0} is caught by {1}")
    @org.junit.jupiter.params.provider.MethodSource("hooks")
    void suiteCatchesEachBrokenRule(String rule, String caseId) throws IOException {
        Run r = runSuite(
                "break-" + rule,
                caseId,
                Map.of("MRCE_NICD_JAVA_OPTS", "-Dmetaroce.conformance.break=" + rule),
                "--port",
                "udp");
        assertThat(r.daemonLog()).as("the daemon says the hook is on").contains("breaking rule '" + rule + "'");
        assertThat(r.exit())
                .as("suite exit with %s broken; output:\n%s", rule, r.output())
                .isEqualTo(1);
        assertThat(r.cases(false)).as("the case run alone").containsExactly(caseId);
        assertThat(r.cases(true))
                .as("failed cases with %s broken; output:\n%s", rule, r.output())
                .contains(caseId);
        assertThat(r.junit()).as("the failure's reason in junit.xml").contains("<failure message=\"");
        Path pcap = r.reportDir().resolve(caseId + ".pcap");
        assertThat(pcap).as("the failing case's packets").exists();
        assertThat(Files.size(pcap)).as("pcap with at least one packet").isGreaterThan(24 + 16 + 28 + 4);
    }
}
