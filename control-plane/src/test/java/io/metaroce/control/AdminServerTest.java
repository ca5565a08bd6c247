package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AdminServerTest {
    @TempDir
    Path dir;

    private AdminServer server;

    @BeforeEach
    void start() throws IOException {
        server = AdminServer.bind(dir.resolve("nicd-1.admin.sock"), command -> switch (command) {
            case "device" -> "{\"device\":\"mrce0\"}";
            case "boom" -> throw new IllegalStateException("broken");
            default -> throw new IllegalArgumentException("unknown command '" + command + "'");
        });
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @Test
    void answersOneCommandWithJson() throws IOException {
        assertThat(AdminClient.query(server.socketPath(), "device")).isEqualTo("{\"device\":\"mrce0\"}");
        assertThat(AdminClient.query(server.socketPath(), "  device  ")).isEqualTo("{\"device\":\"mrce0\"}");
    }

    @Test
    void socketIsOwnerOnly() throws IOException {
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(server.socketPath())))
                .isEqualTo("rw-------");
    }

    @Test
    void unknownAndFailingCommandsGetAnErrorDocument() throws IOException {
        assertThat(AdminClient.query(server.socketPath(), "nope")).isEqualTo("{\"error\":\"unknown command 'nope'\"}");
        assertThat(AdminClient.query(server.socketPath(), "boom"))
                .startsWith("{\"error\":\"internal error: java.lang.IllegalStateException: broken");
    }

    @Test
    void garbageAndOverlongLinesCloseOnlyThatConnection() throws IOException {
        Random r = new Random(7);
        for (int i = 0; i < 50; i++) {
            byte[] junk = new byte[1 + r.nextInt(2000)];
            r.nextBytes(junk);
            String answer = raw(junk);
            // Either an error document (a short line) or a closed connection (too long / no newline).
            assertThat(answer.isEmpty() || answer.startsWith("{\"error\""))
                    .as(answer)
                    .isTrue();
        }
        assertThat(AdminClient.query(server.socketPath(), "device")).isEqualTo("{\"device\":\"mrce0\"}");
    }

    @Test
    void jsonStringEscapes() {
        assertThat(AdminServer.jsonString("a\"b\\c\n\u0001")).isEqualTo("\"a\\\"b\\\\c\\n\\u0001\"");
    }

    private String raw(byte[] bytes) throws IOException {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(server.socketPath()));
            ch.write(ByteBuffer.wrap(bytes));
            ch.shutdownOutput();
            ByteBuffer in = ByteBuffer.allocate(1 << 16);
            try {
                while (ch.read(in) >= 0) {
                    // until the server closes
                }
            } catch (IOException reset) {
                // the server may reset a connection it cut off
            }
            in.flip();
            return StandardCharsets.UTF_8.decode(in).toString().trim();
        }
    }
}
