package io.metaroce.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A process this test started, with stdout and stderr together in a log file (never a pipe, so a
 * chatty process cannot block). Commands are exec'd all the way down ({@code ip netns exec},
 * {@code bin/mrce-run}, {@code bin/mrce-nicd} all exec), so {@link #pid()} is the real program's.
 */
final class Proc implements AutoCloseable {

    private final String name;
    private final List<String> command;
    private final Process process;
    private final Path log;

    private Proc(String name, List<String> command, Process process, Path log) {
        this.name = name;
        this.command = command;
        this.process = process;
        this.log = log;
    }

    static Proc start(String name, Path log, Map<String, String> env, List<String> command) {
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        pb.environment().putAll(env);
        try {
            return new Proc(name, List.copyOf(command), pb.start(), log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + String.join(" ", command), e);
        }
    }

    String name() {
        return name;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    Path log() {
        return log;
    }

    String output() {
        try {
            return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "<cannot read " + log + ": " + e + ">";
        }
    }

    /** The exit status, or throws AssertionError (after killing it) when it runs past timeout. */
    int waitFor(Duration timeout) {
        try {
            if (process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                return process.exitValue();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        kill();
        throw new AssertionError(name + " did not finish within " + timeout + ": "
                + String.join(" ", command) + "\n--- its output:\n" + output());
    }

    /** SIGKILL, then reap. */
    void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGTERM, wait up to grace, then SIGKILL. Returns the exit status, or -1 if it had to be killed. */
    int stop(Duration grace) {
        if (!process.isAlive()) {
            return process.exitValue();
        }
        process.destroy();
        try {
            if (process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                return process.exitValue();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        kill();
        return -1;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        }
    }

    /** Runs a command to completion (bounded) and returns its status and output. */
    static Result run(Path log, Duration timeout, List<String> command) {
        try (Proc p = start(log.getFileName().toString(), log, Map.of(), command)) {
            int exit = p.waitFor(timeout);
            return new Result(exit, p.output());
        }
    }

    record Result(int exit, String output) {
        boolean ok() {
            return exit == 0;
        }
    }
}
