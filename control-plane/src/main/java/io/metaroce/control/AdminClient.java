package io.metaroce.control;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** Sends one command to a daemon's admin socket and returns its JSON answer. */
public final class AdminClient {
    /** Largest answer read (a daemon with thousands of QPs and 8 paths each stays far below). */
    static final int MAX_ANSWER = 64 << 20;

    private AdminClient() {}

    public static String query(Path adminSocket, String command) throws IOException {
        if (command.indexOf('\n') >= 0 || command.length() >= AdminServer.MAX_LINE) {
            throw new IllegalArgumentException("bad command: " + command);
        }
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(adminSocket));
            ByteBuffer out = ByteBuffer.wrap((command + "\n").getBytes(StandardCharsets.UTF_8));
            while (out.hasRemaining()) {
                ch.write(out);
            }
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            ByteBuffer in = ByteBuffer.allocate(65536);
            while (ch.read(in) >= 0) {
                in.flip();
                answer.write(in.array(), 0, in.limit());
                in.clear();
                if (answer.size() > MAX_ANSWER) {
                    throw new IOException("answer larger than " + MAX_ANSWER + " bytes");
                }
            }
            return answer.toString(StandardCharsets.UTF_8).trim();
        }
    }
}
