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
 * Public for the tests of the subpackages; a process that is not the program itself (nsenter's,
 * say) overrides {@link #terminate()} and {@link #kill()} to reach the program.
 */
public class Proc implements AutoCloseable {

    private final String name;
    private final List<String> command;
    private final Process process;
    private final Path log;

    /** {@code command} is what failure messages show (the program, without any wrapper). */
    protected Proc(String name, List<String> command, Process process, Path log) {
        this.name = name;
        this.command = List.copyOf(command);
        this.process = process;
        this.log = log;
    }

    public static Proc start(String name, Path log, Map<String, String> env, List<String> command) {
        return new Proc(name, command, launch(log, env, command), log);
    }

    /** Starts {@code command} with stdin from /dev/null and stdout and stderr to {@code log}. */
    protected static Process launch(Path log, Map<String, String> env, List<String> command) {
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        pb.environment().putAll(env);
        try {
            return pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + String.join(" ", command), e);
        }
    }

    /** The process this object started (for a subclass, possibly a wrapper of the program). */
    protected final Process process() {
        return process;
    }

    public String name() {
        return name;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public Path log() {
        return log;
    }

    public String output() {
        try {
            return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "<cannot read " + log + ": " + e + ">";
        }
    }

    /** The exit status, or throws AssertionError (after killing it) when it runs past timeout. */
    public int waitFor(Duration timeout) {
        Integer exit = tryWait(timeout);
        if (exit != null) {
            return exit;
        }
        kill();
        throw new AssertionError(name + " did not finish within " + timeout + ": " + String.join(" ", command)
                + "\n--- its output:\n" + output());
    }

    /** The exit status, or null if it is still running after timeout. */
    public Integer tryWait(Duration timeout) {
        try {
            if (process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                return process.exitValue();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return null;
    }

    /** SIGTERM to the program. */
    protected void terminate() {
        process.destroy();
    }

    /** SIGKILL, then reap. */
    public void kill() {
        process.destroyForcibly();
        reap();
    }

    /** Waits (10 s at most) for the started process to be gone after a kill. */
    protected final void reap() {
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGTERM, wait up to grace, then SIGKILL. Returns the exit status, or -1 if it had to be killed. */
    public int stop(Duration grace) {
        if (!process.isAlive()) {
            return process.exitValue();
        }
        terminate();
        Integer exit = tryWait(grace);
        if (exit != null) {
            return exit;
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
    public static Result run(Path log, Duration timeout, List<String> command) {
        try (Proc p = start(log.getFileName().toString(), log, Map.of(), command)) {
            int exit = p.waitFor(timeout);
            return new Result(exit, p.output());
        }
    }

    public record Result(int exit, String output) {
        public boolean ok() {
            return exit == 0;
        }
    }
}
