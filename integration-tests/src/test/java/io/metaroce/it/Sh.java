package io.metaroce.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Short administrative commands (ip, tc, sysctl, ss), bounded, output captured. */
public final class Sh {

    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(20);

    private Sh() {}

    /** Runs the command to completion; AssertionError (after killing it) when it runs past timeout. */
    public static Proc.Result run(Duration timeout, List<String> command) {
        return run(timeout, command, false);
    }

    /**
     * Runs the command to completion; one still running at timeout is killed and reported as exit
     * -1, with a note after its output.
     */
    public static Proc.Result runOrKill(Duration timeout, List<String> command) {
        return run(timeout, command, true);
    }

    private static Proc.Result run(Duration timeout, List<String> command, boolean killed) {
        Path out;
        try {
            out = Files.createTempFile("mrce-it-", ".out");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try (Proc p = Proc.start(command.getFirst(), out, Map.of(), command)) {
            if (!killed) {
                int exit = p.waitFor(timeout);
                return new Proc.Result(exit, p.output());
            }
            Integer exit = p.tryWait(timeout);
            if (exit == null) {
                p.kill();
                return new Proc.Result(-1, p.output() + "\n<timed out after " + timeout + ">");
            }
            return new Proc.Result(exit, p.output());
        } finally {
            try {
                Files.deleteIfExists(out);
            } catch (IOException ignored) {
                // a temp file left behind is harmless
            }
        }
    }

    public static Proc.Result run(String... command) {
        return run(DEFAULT_TIMEOUT, List.of(command));
    }

    /** {@link #runOrKill(Duration, List)} within {@link #DEFAULT_TIMEOUT}. */
    public static Proc.Result runOrKill(String... command) {
        return runOrKill(DEFAULT_TIMEOUT, List.of(command));
    }

    /** Runs the command and fails with its output unless it exits 0. */
    public static String check(String... command) {
        Proc.Result r = run(command);
        if (!r.ok()) {
            throw new IllegalStateException("`" + String.join(" ", command) + "` exited " + r.exit() + ": "
                    + r.output().strip());
        }
        return r.output();
    }
}
