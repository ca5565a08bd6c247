package io.metaroce.nic.engine;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the engine's telemetry (counters, per QP and per path: {@link Telemetry}) to a file as
 * one JSON document, atomically (a temporary file, then a rename). Control thread: the engine
 * only copies its QPs' numbers in a command; the counters are read and the JSON made here.
 */
public final class StatsWriter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StatsWriter.class);
    private static final long SNAPSHOT_TIMEOUT_MS = 1000;
    private final EngineAgent engine;
    private final Path target;
    private final Path tmp;

    public StatsWriter(EngineAgent engine, Path target) {
        this.engine = engine;
        this.target = target.toAbsolutePath();
        this.tmp = this.target.resolveSibling(this.target.getFileName() + ".tmp");
    }

    /** Takes a snapshot (waits at most a second for the engine) and writes it. */
    public void write() {
        try {
            String s = Telemetry.take(engine, SNAPSHOT_TIMEOUT_MS).toJson() + "\n";
            Files.writeString(tmp, s, StandardCharsets.UTF_8);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | IllegalStateException e) {
            LOG.warn("stats: {}", e.toString());
        }
    }

    @Override
    public void close() {
        try {
            Files.deleteIfExists(tmp);
        } catch (IOException ignored) {
            // nothing to clean
        }
    }
}
