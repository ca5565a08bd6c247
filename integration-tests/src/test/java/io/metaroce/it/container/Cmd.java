package io.metaroce.it.container;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Short host commands (ip, tc, nsenter, docker/build-image): bounded, output captured. */
final class Cmd {

    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(20);

    private Cmd() {}

    record Result(int exit, String output) {
        boolean ok() {
            return exit == 0;
        }
    }

    /** Runs the command to completion within timeout (killed and reported as exit -1 past it). */
    static Result run(Duration timeout, List<String> command) {
        Path out;
        try {
            out = Files.createTempFile("mrce-ct-", ".out");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
            boolean done = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!done) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
            String text = Files.readString(out, StandardCharsets.UTF_8);
            return new Result(done ? p.exitValue() : -1, done ? text : text + "\n<timed out after " + timeout + ">");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + String.join(" ", command), e);
        } finally {
            try {
                Files.deleteIfExists(out);
            } catch (IOException ignored) {
                // a temp file left behind is harmless
            }
        }
    }

    static Result run(String... command) {
        return run(DEFAULT_TIMEOUT, List.of(command));
    }

    /** Runs the command and fails with its output unless it exits 0. */
    static String check(String... command) {
        Result r = run(command);
        if (!r.ok()) {
            throw new IllegalStateException("`" + String.join(" ", command) + "` exited " + r.exit() + ": "
                    + r.output().strip());
        }
        return r.output();
    }

    /** True as soon as {@code condition} holds, false once {@code timeout} passed without it. */
    static boolean await(Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (condition.getAsBoolean()) {
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
        }
    }
}
