package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * mrce-nicd's outer contract: in a namespace it serves the socket the provider finds by namespace
 * inode, says so in one ready line, and on SIGTERM exits 0 and removes its socket.
 */
@Timeout(120)
class DaemonLifecycleIT {

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    @Test
    void readyLineSocketAndCleanExit() {
        try (TwoHostFabric f = TwoHostFabric.direct("DaemonLifecycleIT", 1500)) {
            Daemon d = f.startDaemon(f.a());
            f.awaitReady(d);
            assertThat(d.readyLine())
                    .get()
                    .asString()
                    .contains("mrce-nicd ready: mrce0 on veth-a (198.18.0.1) udp port 4793, control socket "
                            + d.socket());
            assertThat(Files.exists(d.socket())).isTrue();
            assertThat(d.stop(Duration.ofSeconds(15)))
                    .as("exit status on SIGTERM; log:%n%s", d.logText())
                    .isZero();
            assertThat(Files.exists(d.socket())).as("socket removed on exit").isFalse();
        }
    }
}
