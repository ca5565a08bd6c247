package io.metaroce.it.container;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A program running in a node's container, started from the host with {@code nsenter} into all of
 * the container's namespaces (so it sees the container's filesystem, network and processes,
 * and the daemon there can reach it by its pid). Output goes to a log file on the host.
 *
 * <p>nsenter forks the program into the container's pid namespace and waits; it does not pass
 * signals on, so {@link #signal}, {@link #kill} and {@link #close} act on the program (and its
 * children) by their host pids. Nothing here can outlive the test: removing the container kills
 * whatever is left in it.
 */
final class NodeProc implements AutoCloseable {

    private final String name;
    private final List<String> command;
    private final Process nsenter;
    private final Path log;

    private NodeProc(String name, List<String> command, Process nsenter, Path log) {
        this.name = name;
        this.command = command;
        this.nsenter = nsenter;
        this.log = log;
    }

    static NodeProc start(String name, Path log, List<String> fullCommand, List<String> shownCommand) {
        ProcessBuilder pb = new ProcessBuilder(fullCommand).redirectErrorStream(true).redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        try {
            return new NodeProc(name, List.copyOf(shownCommand), pb.start(), log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + String.join(" ", fullCommand), e);
        }
    }

    String name() {
        return name;
    }

    boolean isAlive() {
        return nsenter.isAlive();
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

    /** The program itself (nsenter's child), once it has been forked. */
    Optional<ProcessHandle> program() {
        return nsenter.toHandle().children().findFirst();
    }

    /** The exit status, or AssertionError (after killing it) when it runs past timeout. */
    int waitFor(Duration timeout) {
        Integer exit = tryWait(timeout);
        if (exit != null) {
            return exit;
        }
        kill();
        throw new AssertionError(name + " did not finish within " + timeout + ": " + String.join(" ", command)
                + "\n--- its output:\n" + output());
    }

    /** The exit status, or null if it is still running after timeout. */
    Integer tryWait(Duration timeout) {
        try {
            if (nsenter.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                return nsenter.exitValue();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return null;
    }

    /** SIGTERM to the program (as a crash or an operator would send it). */
    void signalTerm() {
        program().ifPresent(ProcessHandle::destroy);
    }

    /** SIGKILL to the program and everything it started, then reap. */
    void kill() {
        List<ProcessHandle> tree = nsenter.toHandle().descendants()
                .sorted(Comparator.comparingLong(ProcessHandle::pid).reversed()).toList();
        for (ProcessHandle p : tree) {
            p.destroyForcibly();
        }
        nsenter.destroyForcibly();
        try {
            nsenter.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGTERM, up to grace, then SIGKILL. The exit status, or -1 when it had to be killed. */
    int stop(Duration grace) {
        if (!isAlive()) {
            return nsenter.exitValue();
        }
        signalTerm();
        Integer exit = tryWait(grace);
        if (exit != null) {
            return exit;
        }
        kill();
        return -1;
    }

    @Override
    public void close() {
        if (isAlive()) {
            kill();
        }
    }
}
