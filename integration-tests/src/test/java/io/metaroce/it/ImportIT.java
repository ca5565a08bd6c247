package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A PD and an MR shared between two processes on one host (provider-c/build/mrce_import): the
 * exporter passes its context's cmd_fd by SCM_RIGHTS to a process it starts; that process imports
 * the device, the PD and the MR (ibv_import_device, ibv_import_pd, ibv_import_mr), makes its own
 * QP on the imported PD and RDMA WRITEs into the exporter's buffer with the imported MR's address
 * and rkey; the exporter finds the pattern byte for byte where it was written and its fill
 * everywhere else. The imported lkey as the importer's own source fails with a local protection
 * error (a process's QPs reach only its memory). Also refused: a pipe and a forged context memfd
 * as cmd_fd, unknown and stale handles, destroying imported objects (EPERM). A second importer
 * killed while it holds another PD: the exporter's ibv_dealloc_pd is EBUSY before and succeeds
 * after (the daemon drops the dead process's reference only). ibv_alloc_td and parent domains
 * answer EOPNOTSUPP.
 */
@Timeout(180)
class ImportIT {

    static final List<String> CHECKS = List.of(
            "cmd_fd_is_a_memfd",
            "import_pipe_refused",
            "import_forged_refused",
            "import_device",
            "cmd_fd_is_the_given_fd",
            "import_pd_unknown_handle",
            "import_pd",
            "import_mr_unknown_handle",
            "import_mr",
            "alloc_td_eopnotsupp",
            "parent_domain_eopnotsupp",
            "rdma_write_into_exporters_mr",
            "imported_lkey_not_local",
            "dereg_imported_mr_eperm",
            "dealloc_imported_pd_eperm",
            "import_mr_stale_handle",
            "reimport_after_unimport",
            "reimport_mr_after_unimport",
            "close_device_closed_cmd_fd",
            "importer_exited_0",
            "write_landed",
            "dealloc_pd_while_imported_ebusy",
            "dealloc_pd_after_holder_killed",
            "dealloc_pd_after_importer");

    private static final Pattern CHECK = Pattern.compile("(?m)^CHECK (\\S+): (PASS|FAIL) ?(.*)$");
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(60);

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    static Path binary() {
        return Env.nativeDir().resolve("mrce_import");
    }

    @Test
    void anImportingProcessWritesIntoTheExportersMr() {
        assertThat(Files.isExecutable(binary()))
                .as("%s built by provider-c's make", binary())
                .isTrue();
        try (TwoHostFabric f = TwoHostFabric.direct("ImportIT", 1500)) {
            Daemon d = f.startDaemon(f.a());
            f.awaitReady(d);
            Proc app = f.startApp(
                    f.a(),
                    "import",
                    List.of(
                            binary().toString(),
                            "-d",
                            "mrce0",
                            "-g",
                            "0",
                            "-t",
                            Long.toString(RUN_TIMEOUT.toSeconds())));
            int exit = app.waitFor(RUN_TIMEOUT.plusSeconds(30));
            String context = "\n--- mrce_import:\n" + app.output() + "\n" + f.diagnostics();
            Map<String, String> checks = checks(app.output());
            assertThat(checks.keySet()).as("checks" + context).containsExactlyElementsOf(CHECKS);
            checks.forEach(
                    (name, result) -> assertThat(result).as(name + context).startsWith("PASS"));
            assertThat(app.output())
                    .as(context)
                    .contains("write_landed: PASS 0 of 131072 bytes wrong")
                    .contains("import_forged_refused: PASS errno 22")
                    .contains("mrce_import: importer OK")
                    .contains("mrce_import: exporter OK");
            assertThat(exit).as("exit" + context).isZero();
            assertThat(d.proc().isAlive()).as("the daemon still runs" + context).isTrue();
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
