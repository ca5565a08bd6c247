package io.metaroce.nic.engine;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the engine's telemetry (per QP and per path, {@link EngineAgent#statsJson}) to a file as
 * one JSON document, atomically (a temporary file, then a rename). Control thread: the snapshot
 * itself is taken on the engine thread through a command.
 */
public final class StatsWriter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StatsWriter.class);
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
        CompletableFuture<String> json = new CompletableFuture<>();
        if (!engine.submit(() -> json.complete(engine.statsJson(System.nanoTime())))) {
            return;
        }
        try {
            String s = json.get(1, TimeUnit.SECONDS);
            Files.writeString(tmp, s, StandardCharsets.UTF_8);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | java.util.concurrent.ExecutionException
                | java.util.concurrent.TimeoutException e) {
            LOG.warn("stats: {}", e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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
