package io.metaroce.it.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.metaroce.it.Env;
import io.metaroce.it.Proc;
import io.metaroce.it.Sh;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Socket-path squatting (issue 12): a user who binds the daemon's socket path first must not be
 * taken for the daemon. Here {@code nobody} listens on the path; an application (root) loading the
 * provider must refuse it with a clear error, before sending it a single byte and before making it
 * its ptracer.
 */
class SocketSquatIT {
    private static final String SQUATTER = String.join(
            "\n",
            "import os, socket, sys",
            "s = socket.socket(socket.AF_UNIX)",
            "s.bind(sys.argv[1])",
            "os.chmod(sys.argv[1], 0o666)",
            "s.listen()",
            "c, _ = s.accept()",
            "got = b''",
            "while True:",
            "    d = c.recv(4096)",
            "    if not d: break",
            "    got += d",
            "open(sys.argv[2], 'w').write(str(len(got)))");

    @Test
    void theProviderRefusesASocketBoundByAnotherUser(@TempDir Path dir) throws Exception {
        assumeTrue(Env.isRoot(), "needs root to run the squatter as nobody; skipped");
        assumeTrue(
                Files.isExecutable(Path.of("/usr/bin/python3")) && Files.isExecutable(Path.of("/usr/bin/setpriv")),
                "needs /usr/bin/python3 and setpriv; skipped");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path sock = dir.resolve("nicd-squat.sock");
        Path received = dir.resolve("received");
        try (Proc squatter = Proc.start(
                "squatter",
                dir.resolve("squatter.log"),
                Map.of(),
                List.of(
                        "setpriv",
                        "--reuid=65534",
                        "--regid=65534",
                        "--clear-groups",
                        "/usr/bin/python3",
                        "-c",
                        SQUATTER,
                        sock.toString(),
                        received.toString()))) {
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!Files.exists(sock) && squatter.isAlive() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(sock).as(squatter.output()).exists();
            assertThat(Files.getOwner(sock).getName()).isEqualTo("nobody");

            Proc.Result app = Sh.run(
                    Duration.ofSeconds(30),
                    List.of(
                            "env",
                            "METAROCE_SOCK=" + sock,
                            "LD_PRELOAD=" + Env.nativeDir().resolve("libmetaroce.so"),
                            "ibv_devices"));
            assertThat(app.output())
                    .as("a clear error")
                    .contains("metaroce: refusing " + sock + ": its server runs as uid 65534")
                    .doesNotContain("mrce0");
            assertThat(squatter.waitFor(Duration.ofSeconds(20)))
                    .as(squatter.output())
                    .isZero();
            assertThat(Files.readString(received)).as("bytes the squatter got").isEqualTo("0");
        }
    }
}
