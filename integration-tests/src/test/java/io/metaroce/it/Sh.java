package io.metaroce.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Short administrative commands (ip, tc, sysctl, ss), bounded, output captured. */
final class Sh {

    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(20);

    private Sh() {}

    static Proc.Result run(Duration timeout, List<String> command) {
        Path out;
        try {
            out = Files.createTempFile("mrce-it-", ".out");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try (Proc p = Proc.start(command.getFirst(), out, Map.of(), command)) {
            int exit = p.waitFor(timeout);
            return new Proc.Result(exit, p.output());
        } finally {
            try {
                Files.deleteIfExists(out);
            } catch (IOException ignored) {
                // a temp file left behind is harmless
            }
        }
    }

    static Proc.Result run(String... command) {
        return run(DEFAULT_TIMEOUT, List.of(command));
    }

    /** Runs the command and fails with its output unless it exits 0. */
    static String check(String... command) {
        Proc.Result r = run(command);
        if (!r.ok()) {
            throw new IllegalStateException("`" + String.join(" ", command) + "` exited " + r.exit()
                    + ": " + r.output().strip());
        }
        return r.output();
    }
}
