package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The verbs conformance program (provider-c/build/mrce_verbs_conformance) across the two
 * namespaces, on a clean link and with 1 % of MetaRoCE's UDP packets dropped in each direction:
 * every RC opcode with SGE lists, inline data, fences and unsignaled WRs, the ibv_wr_* API with
 * cq_ex polling, an SRQ with its limit event, UD with the GRH, and the error paths (remote access
 * errors with flushes and async events, RNR retry exhaustion). The program checks data with
 * checksums and canaries; this test requires every case it lists to pass and the client's final
 * {@code PASS n/n} line.
 */
@Timeout(600)
class VerbsConformanceIT {

    /** The cases the program runs, in its order. */
    static final List<String> CASES = List.of(
            "send_sge_inline_imm_zero",
            "write_sge_inline_unsignaled",
            "write_imm_incl_zero_length",
            "read_scatter",
            "atomic_cmp_swp",
            "atomic_fetch_add_exactly_once",
            "fence_read_before_write",
            "wr_api_cq_ex",
            "srq_limit_event",
            "ud_send_recv_grh",
            "err_bad_rkey",
            "err_out_of_bounds",
            "err_no_remote_write",
            "err_rnr_retry_exceeded");

    private static final Pattern CASE = Pattern.compile("(?m)^CASE (\\S+): (PASS|FAIL) ?(.*)$");
    private static final Pattern SUMMARY = Pattern.compile("(?m)^PASS (\\d+)/(\\d+)\\s*$");
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(240);
    private static final int PROBE_PACKETS = 5000;

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    @Test
    void noLoss() {
        run("VerbsConformanceIT-0pct", null, 18660);
    }

    @Test
    void onePercentLoss() {
        run("VerbsConformanceIT-1pct", TwoHostFabric.Loss.PCT_1, 18661);
    }

    static Path binary() {
        return Env.nativeDir().resolve("mrce_verbs_conformance");
    }

    private static void run(String name, TwoHostFabric.Loss loss, int port) {
        assertThat(Files.isExecutable(binary()))
                .as("%s built by provider-c's make", binary())
                .isTrue();
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
            List<String> cmd = new ArrayList<>(List.of(
                    binary().toString(),
                    "-d",
                    "mrce0",
                    "-g",
                    "0",
                    "-p",
                    Integer.toString(port),
                    "-t",
                    Long.toString(RUN_TIMEOUT.toSeconds()),
                    "-w",
                    "30",
                    "-n",
                    "1000"));
            Proc server = f.startApp(f.b(), "conformance-server", cmd);
            Proc client;
            try {
                f.awaitTcpListening(f.b(), port, server, Duration.ofSeconds(20));
                List<String> clientCmd = new ArrayList<>(cmd);
                clientCmd.add(f.appServerAddr());
                client = f.startApp(f.a(), "conformance-client", clientCmd);
            } catch (RuntimeException | Error e) {
                server.close();
                throw e;
            }
            AppPair.Exits exits = AppPair.await(f, server, client, RUN_TIMEOUT.plusSeconds(30));
            String out = client.output();
            String context = "\n--- client:\n" + out + "\n--- server:\n" + server.output() + "\n" + f.diagnostics();

            Map<String, String> results = new LinkedHashMap<>();
            Matcher m = CASE.matcher(out);
            while (m.find()) {
                results.put(m.group(1), m.group(2) + " " + m.group(3));
            }
            assertThat(results.keySet()).as("cases reported" + context).containsExactlyElementsOf(CASES);
            List<String> failed = results.entrySet().stream()
                    .filter(e -> !e.getValue().startsWith("PASS"))
                    .map(e -> e.getKey() + ": " + e.getValue())
                    .toList();
            assertThat(failed).as("failed cases" + context).isEmpty();
            Matcher s = SUMMARY.matcher(out);
            assertThat(s.find()).as("final PASS n/n line" + context).isTrue();
            assertThat(Integer.parseInt(s.group(1))).as("cases passed").isEqualTo(CASES.size());
            assertThat(Integer.parseInt(s.group(2))).as("cases run").isEqualTo(CASES.size());
            assertThat(exits.client()).as("client exit" + context).isZero();
            assertThat(exits.server()).as("server exit" + context).isZero();
            assertThat(server.output()).as("server finished" + context).contains("mrce_verbs_conformance: server done");
        }
    }
}
