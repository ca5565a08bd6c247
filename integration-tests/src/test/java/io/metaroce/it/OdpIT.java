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
 * On-demand paging across the two namespaces (provider-c/build/mrce_odp): host B's process
 * registers an implicit ODP MR (the whole address space), maps a buffer after that, and host A's
 * RDMA WRITEs land in it byte for byte; a WRITE to a page B unmapped completes with
 * IBV_WC_REM_ACCESS_ERR on A while the daemons and B's other QP go on (a later WRITE on it lands),
 * and a WRITE from a page A unmapped inside its explicit ODP MR completes with IBV_WC_LOC_PROT_ERR
 * (nothing lands on B).
 * Also the ODP caps of ibv_query_device_ex and ibv_advise_mr's answers.
 */
@Timeout(300)
class OdpIT {

    static final List<String> SERVER_CHECKS = List.of(
            "odp_caps",
            "implicit_odp_reg",
            "advise_mr_prefetch",
            "advise_mr_bad_advice",
            "advise_mr_bad_flags",
            "advise_mr_no_sge",
            "hole_stayed_unmapped",
            "write_landed");
    static final List<String> CLIENT_CHECKS = List.of(
            "odp_caps",
            "explicit_odp_reg",
            "write_to_memory_mapped_after_reg",
            "write_to_unmapped_page",
            "other_qp_goes_on",
            "local_sge_unmapped");

    private static final Pattern CHECK = Pattern.compile("(?m)^CHECK (\\S+): (PASS|FAIL) ?(.*)$");
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(60);
    private static final int PORT = 18670;

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    static Path binary() {
        return Env.nativeDir().resolve("mrce_odp");
    }

    @Test
    void implicitOdpMrReceivesWritesToMemoryMappedAfterRegistration() {
        assertThat(Files.isExecutable(binary()))
                .as("%s built by provider-c's make", binary())
                .isTrue();
        try (TwoHostFabric f = TwoHostFabric.direct("OdpIT", 1500)) {
            List<Daemon> daemons = f.startDaemons();
            List<String> cmd = List.of(
                    binary().toString(),
                    "-d",
                    "mrce0",
                    "-g",
                    "0",
                    "-p",
                    Integer.toString(PORT),
                    "-t",
                    Long.toString(RUN_TIMEOUT.toSeconds()));
            Proc server = f.startApp(f.b(), "odp-server", cmd);
            Proc client;
            try {
                f.awaitTcpListening(f.b(), PORT, server, Duration.ofSeconds(20));
                List<String> clientCmd = new ArrayList<>(cmd);
                clientCmd.add(f.appServerAddr());
                client = f.startApp(f.a(), "odp-client", clientCmd);
            } catch (RuntimeException | Error e) {
                server.close();
                throw e;
            }
            AppPair.Exits exits = AppPair.await(f, server, client, RUN_TIMEOUT.plusSeconds(30));
            String context =
                    "\n--- client:\n" + client.output() + "\n--- server:\n" + server.output() + "\n" + f.diagnostics();
            Map<String, String> serverChecks = checks(server.output());
            assertThat(serverChecks.keySet()).as("server checks" + context).containsExactlyElementsOf(SERVER_CHECKS);
            serverChecks.forEach(
                    (name, result) -> assertThat(result).as(name + context).startsWith("PASS"));
            Map<String, String> clientChecks = checks(client.output());
            assertThat(clientChecks.keySet()).as("client checks" + context).containsExactlyElementsOf(CLIENT_CHECKS);
            clientChecks.forEach(
                    (name, result) -> assertThat(result).as(name + context).startsWith("PASS"));
            assertThat(client.output()).contains("write_to_unmapped_page: PASS status remote access error");
            assertThat(server.output()).contains("write_landed: PASS 0 of 262144 bytes wrong");
            assertThat(exits.client()).as("client exit" + context).isZero();
            assertThat(exits.server()).as("server exit" + context).isZero();
            assertThat(client.output()).contains("mrce_odp: client OK");
            assertThat(server.output()).contains("mrce_odp: server OK");
            for (Daemon d : daemons) {
                assertThat(d.proc().isAlive())
                        .as("daemon of %s still runs" + context, d.host().name())
                        .isTrue();
            }
        }
    }

    private static Map<String, String> checks(String out) {
        Map<String, String> results = new LinkedHashMap<>();
        Matcher m = CHECK.matcher(out);
        while (m.find()) {
            results.put(m.group(1), m.group(2) + " " + m.group(3));
        }
        return results;
    }
}
