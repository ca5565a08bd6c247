package io.metaroce.it.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.metaroce.it.Env;
import io.metaroce.it.Proc;
import io.metaroce.it.Sh;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The PID-reuse attack (issue 12), made certain by a PID namespace and {@code ns_last_pid}: a
 * client registers memory, hands its connection to a forked child and exits; a victim gets its
 * PID and maps the same addresses; the child then posts an RDMA WRITE of the dead registration.
 * The daemon must end the session when the client exits and never touch the victim (before the
 * fix the victim's page was overwritten: "CHANGED 4096 bytes", completion status 0).
 */
class PidReuseIT {

    @Test
    void aProcessThatGetsADeadClientsPidIsNeverReadOrWritten(@TempDir Path dir) {
        Env.assumeNamespaces();
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/unshare")), "needs util-linux unshare; skipped");
        Path probe = Env.nativeDir().resolve("mrce_pid_reuse");
        assertThat(probe).as("built by provider-c's make").isExecutable();
        Path script = Env.root().resolve("integration-tests/scripts/pid-reuse.sh");
        Proc.Result r = Sh.runOrKill(
                Duration.ofSeconds(180),
                List.of(
                        "unshare",
                        "--pid",
                        "--fork",
                        "--kill-child",
                        "--mount-proc",
                        "--net",
                        "env",
                        "PROBE=" + probe,
                        "PRELOAD=" + Env.nativeDir().resolve("libmetaroce.so"),
                        "bash",
                        script.toString(),
                        dir.toString()));
        String out = r.output();
        assertThat(out)
                .as("the attack was staged: same PID")
                .contains("victim pid ")
                .doesNotContain("FAIL:");
        String attacker = out.replaceAll("(?s).*attacker pid (\\d+) exited.*", "$1");
        assertThat(out).contains("victim pid " + attacker + "\n");
        assertThat(out)
                .as("victim's memory")
                .contains("victim " + attacker + ": untouched")
                .doesNotContain("CHANGED");
        assertThat(out).as("the child's WRITE of the dead registration").doesNotContain("completion status 0\n");
        assertThat(out)
                .as("the daemon ended the session at the client's exit")
                .contains("exited: its registrations are revoked");
        assertThat(r.exit()).as(out).isZero();
    }
}
