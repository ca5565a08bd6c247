package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Who may own the socket directory: issue 12's path squatting, on the daemon's side. */
class SocketDirectoryTest {

    @Test
    void aDirectoryOfAnotherUserIsRefused(@TempDir Path tmp) throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("sockets"));
        Files.setAttribute(dir, "unix:uid", 65534);
        assertThatThrownBy(() -> DomainSocketServer.checkDirectory(dir, 0))
                .hasMessageContaining("owned by uid 65534, not root");
        assertThatCode(() -> DomainSocketServer.checkDirectory(dir, 65534))
                .as("the daemon's own user")
                .doesNotThrowAnyException();
    }

    @Test
    void writableByOthersNeedsTheStickyBit(@TempDir Path tmp) throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("sockets"));
        int uid = DomainSocketServer.ownUid();
        Posix.chmod(dir.toString(), 0777);
        assertThatThrownBy(() -> DomainSocketServer.checkDirectory(dir, uid)).hasMessageContaining("sticky");
        Posix.chmod(dir.toString(), 01777);
        assertThatCode(() -> DomainSocketServer.checkDirectory(dir, uid)).doesNotThrowAnyException();
        Posix.chmod(dir.toString(), 0755);
        assertThatCode(() -> DomainSocketServer.checkDirectory(dir, uid)).doesNotThrowAnyException();
    }

    @Test
    void aSymbolicLinkIsRefused(@TempDir Path tmp) throws IOException {
        Path real = Files.createDirectory(tmp.resolve("real"));
        Path link = Files.createSymbolicLink(tmp.resolve("link"), real);
        assertThatThrownBy(() -> DomainSocketServer.checkDirectory(link, DomainSocketServer.ownUid()))
                .hasMessageContaining("not a directory");
    }
}
