package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where each device of a namespace listens, and which sockets the devices view finds (docs/multi-nic.md). */
class LocalControlPathsTest {

    @Test
    void mrce0KeepsTheSingleInterfacePathAndOthersGetTheirName() {
        assertThat(LocalControlPaths.socketPathFor(4026531840L, "mrce0"))
                .isEqualTo(Path.of("/tmp/metaroce/nicd-4026531840.sock"));
        assertThat(LocalControlPaths.socketPathFor(4026531840L, "mrce1"))
                .isEqualTo(Path.of("/tmp/metaroce/nicd-4026531840-mrce1.sock"));
        assertThat(LocalControlPaths.adminSocketPathFor(LocalControlPaths.socketPathFor(7, "mrce1")))
                .isEqualTo(Path.of("/tmp/metaroce/nicd-7-mrce1.admin.sock"));
    }

    @Test
    void listsTheNamespacesDeviceSocketsMrce0First(@TempDir Path dir) throws IOException {
        for (String f : new String[] {
            "nicd-7-mrce2.sock",
            "nicd-7-mrce2.admin.sock",
            "nicd-7.sock",
            "nicd-7.admin.sock",
            "nicd-7-mrce1.sock",
            "nicd-77-mrce1.sock",
            "nicd-8.sock",
            "nicd-7-.sock"
        }) {
            Files.createFile(dir.resolve(f));
        }
        assertThat(LocalControlPaths.deviceSocketPaths(dir, 7))
                .containsExactly(
                        dir.resolve("nicd-7.sock"), dir.resolve("nicd-7-mrce1.sock"), dir.resolve("nicd-7-mrce2.sock"));
        assertThat(LocalControlPaths.deviceSocketPaths(dir, 9)).isEmpty();
        assertThat(LocalControlPaths.deviceSocketPaths(dir.resolve("absent"), 7))
                .isEmpty();
    }
}
