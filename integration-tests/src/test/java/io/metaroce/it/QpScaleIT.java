package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many RC QPs between the two namespaces (provider-c/build/mrce_qp_scale; issue 17's 10^4 QPs at a
 * CI-friendly count): host B's server and host A's client each create {@link #QPS} RC QPs, swap
 * the QP numbers over TCP and move every one to RTS, which makes the daemons' connection managers
 * shake hands for each. With every QP up, both daemons hold exactly {@link #QPS} QPs, one CQ, one
 * MR and one PD for the session. Then the client RDMA WRITEs 64 bytes on every QP, QP i into slot
 * i of B's buffer, and B checks every slot's CRC-32; then 1 and {@link #ACTIVE} QPs at once keep
 * 4 KiB WRITEs outstanding (16 on the one QP, 2 on each of the 100: at most 256 in all) into
 * regions of their own, which B checks by CRC-32. After the teardown both daemons hold nothing:
 * no session, QP, CQ, MR or PD, and no more open fds or mappings than before the run (beyond a
 * small allowance for the daemon's own).
 * bench/scale/run-qp-scale runs the same tool at 10^4 QPs and reports the rates.
 */
@Timeout(600)
class QpScaleIT {

    static final int QPS = 1500;
    static final int ACTIVE = 100;
    private static final Pattern CHECK = Pattern.compile("(?m)^CHECK (\\S+): (PASS|FAIL) ?(.*)$");
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(400);
    private static final int PORT = 18680;
    /** The daemon's own fds and mappings that may come and go (logs, timers, JIT). */
    private static final int FD_ALLOWANCE = 8;

    private static final int MAPPING_ALLOWANCE = 48;

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    static Path binary() {
        return Env.nativeDir().resolve("mrce_qp_scale");
    }

    @Test
    void fifteenHundredQpsComeUpCarryCheckedWritesAndLeaveNothing() throws IOException {
        assertThat(Files.isExecutable(binary()))
                .as("%s built by provider-c's make", binary())
                .isTrue();
        try (TwoHostFabric f = TwoHostFabric.direct("QpScaleIT", 1500)) {
            List<Daemon> daemons = f.startDaemons();
            List<NetnsFabric.Host> hosts = List.of(f.a(), f.b());
            long[] fdsBefore = new long[2];
            long[] mapsBefore = new long[2];
            for (int k = 0; k < 2; k++) {
                JsonNode d = Ctl.json(f, hosts.get(k), "objects").path("daemon");
                fdsBefore[k] = d.path("openFds").asLong();
                mapsBefore[k] = d.path("mappings").asLong();
            }
            Path hold = Files.createTempFile("qpscale-hold", "");
            Files.delete(hold);
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
            Proc server = f.startApp(f.b(), "qpscale-server", cmd);
            Proc client;
            try {
                f.awaitTcpListening(f.b(), PORT, server, Duration.ofSeconds(20));
                List<String> clientCmd = new ArrayList<>(cmd);
                clientCmd.addAll(List.of(
                        "-n",
                        Integer.toString(QPS),
                        "-a",
                        "1," + ACTIVE,
                        "-s",
                        "4096",
                        "-D",
                        "300",
                        "-H",
                        hold.toString(),
                        f.appServerAddr()));
                client = f.startApp(f.a(), "qpscale-client", clientCmd);
            } catch (RuntimeException | Error e) {
                server.close();
                throw e;
            }
            try {
                boolean held = Wait.until(
                        RUN_TIMEOUT, () -> client.output().contains("mrce_qp_scale: holding") || !client.isAlive());
                assertThat(held && client.isAlive())
                        .as(
                                "every QP set up: client:\n%s\n--- server:\n%s\n%s",
                                client.output(), server.output(), f.diagnostics())
                        .isTrue();
                for (NetnsFabric.Host h : hosts) {
                    JsonNode t = Ctl.json(f, h, "objects").path("totals");
                    assertThat(t.path("qps").asInt())
                            .as(h.name() + " QPs with every QP up")
                            .isEqualTo(QPS);
                    assertThat(t.path("cqs").asInt()).as(h.name() + " CQs").isEqualTo(1);
                    assertThat(t.path("mrs").asInt()).as(h.name() + " MRs").isEqualTo(1);
                    assertThat(t.path("pds").asInt()).as(h.name() + " PDs").isEqualTo(1);
                }
            } finally {
                Files.write(hold, new byte[0]);
            }
            AppPair.Exits exits = AppPair.await(f, server, client, RUN_TIMEOUT.plusSeconds(30));
            Files.deleteIfExists(hold);
            String context =
                    "\n--- client:\n" + client.output() + "\n--- server:\n" + server.output() + "\n" + f.diagnostics();
            assertThat(checks(server.output()))
                    .as("server checks" + context)
                    .containsExactly("first_write_every_qp", "data_active_qps", "data_active_qps");
            assertThat(checks(client.output()))
                    .as("client checks" + context)
                    .containsExactly("first_write_every_qp", "data_active_qps", "data_active_qps");
            assertThat(server.output())
                    .as(context)
                    .contains("first_write_every_qp: PASS 0 of " + QPS + " QPs' slots wrong")
                    .contains("data_active_qps: PASS 1 active: 0 of 1 regions of 4096 bytes wrong")
                    .contains("data_active_qps: PASS " + ACTIVE + " active: 0 of " + ACTIVE
                            + " regions of 4096 bytes wrong");
            assertThat(client.output())
                    .as(context)
                    .containsPattern("(?m)^RESULT setup qps=" + QPS + " ")
                    .containsPattern("(?m)^RESULT active=" + ACTIVE + " depth=2 writes=[1-9]")
                    .containsPattern("(?m)^RESULT teardown qps=" + QPS + " ");
            assertThat(exits.client()).as("client exit" + context).isZero();
            assertThat(exits.server()).as("server exit" + context).isZero();
            assertThat(client.output()).contains("mrce_qp_scale: client OK");
            assertThat(server.output()).contains("mrce_qp_scale: server OK");
            System.out.println("QpScaleIT: "
                    + client.output()
                            .lines()
                            .filter(l -> l.startsWith("RESULT"))
                            .reduce((x, y) -> x + "\n  " + y)
                            .orElse(""));

            for (int k = 0; k < 2; k++) {
                NetnsFabric.Host h = hosts.get(k);
                boolean none = Wait.until(
                        Duration.ofSeconds(30),
                        () -> Ctl.json(f, h, "objects").path("sessions").asInt() == 0);
                JsonNode o = Ctl.json(f, h, "objects");
                assertThat(none)
                        .as("daemon of %s reclaimed every session: %s", h.name(), o)
                        .isTrue();
                for (String n : List.of("qps", "cqs", "mrs", "pds")) {
                    assertThat(o.path("totals").path(n).asInt(-1))
                            .as(h.name() + " " + n + " left")
                            .isZero();
                }
                JsonNode d = o.path("daemon");
                assertThat(d.path("openFds").asLong())
                        .as(h.name() + " daemon fds (before: " + fdsBefore[k] + ")")
                        .isLessThanOrEqualTo(fdsBefore[k] + FD_ALLOWANCE);
                assertThat(d.path("mappings").asLong())
                        .as(h.name() + " daemon mappings (before: " + mapsBefore[k] + ")")
                        .isLessThanOrEqualTo(mapsBefore[k] + MAPPING_ALLOWANCE);
            }
            for (Daemon d : daemons) {
                assertThat(d.proc().isAlive())
                        .as("daemon of %s still runs", d.host().name())
                        .isTrue();
            }
        }
    }

    /** The CHECK names in order, each one PASS (a FAIL fails here with its line). */
    private static List<String> checks(String out) {
        List<String> names = new ArrayList<>();
        Matcher m = CHECK.matcher(out);
        while (m.find()) {
            assertThat(m.group(2)).as(m.group()).isEqualTo("PASS");
            names.add(m.group(1));
        }
        return names;
    }
}
