package io.metaroce.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/** One mrce-nicd started by a {@link NetnsFabric} in a host's namespace. */
public final class Daemon {

    static final String READY = "mrce-nicd ready:";

    private final NetnsFabric.Host host;
    private final Proc proc;
    private final Path socket;

    Daemon(NetnsFabric.Host host, Proc proc, Path socket) {
        this.host = host;
        this.proc = proc;
        this.socket = socket;
    }

    NetnsFabric.Host host() {
        return host;
    }

    Proc proc() {
        return proc;
    }

    long pid() {
        return proc.pid();
    }

    /** The control socket the provider finds by its namespace: /tmp/metaroce/nicd-INODE.sock. */
    Path socket() {
        return socket;
    }

    Path log() {
        return proc.log();
    }

    boolean isAlive() {
        return proc.isAlive();
    }

    /** True once the daemon logged its ready line and its socket exists. */
    boolean isReady() {
        return readyLine().isPresent() && Files.exists(socket);
    }

    Optional<String> readyLine() {
        return logText().lines().filter(l -> l.contains(READY)).findFirst();
    }

    String logText() {
        return proc.output();
    }

    long logSize() {
        try {
            return Files.size(log());
        } catch (IOException e) {
            return 0;
        }
    }

    /** The log written after byte offset {@code from}. */
    String logSince(long from) {
        try {
            byte[] all = Files.readAllBytes(log());
            int start = (int) Math.min(from, all.length);
            return new String(all, start, all.length - start, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    String logTail(int lines) {
        var all = logText().lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }

    /** SIGTERM and wait; the exit status, or -1 when it had to be killed. */
    int stop(Duration grace) {
        return proc.stop(grace);
    }
}
