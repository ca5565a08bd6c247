package io.metaroce.it;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Where the build put things, and whether this machine can run the namespace tests. */
public final class Env {

    private Env() {}

    /** The repository root (Maven passes it as {@code metaroce.root}). */
    public static Path root() {
        String root = System.getProperty("metaroce.root");
        if (root != null && !root.isBlank()) {
            return Path.of(root).toAbsolutePath().normalize();
        }
        // Run from an IDE: walk up from the module to the folder with bin/mrce-nicd.
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("bin/mrce-nicd"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("cannot find the repository root; set -Dmetaroce.root");
        }
        return dir;
    }

    /** provider-c/build: libmetaroce.so and the provider's C test programs. */
    public static Path nativeDir() {
        String dir = System.getProperty("metaroce.native.dir");
        return dir != null && !dir.isBlank() ? Path.of(dir) : root().resolve("provider-c/build");
    }

    public static Path bin(String script) {
        return root().resolve("bin").resolve(script);
    }

    /** integration-tests/target/bpf: the drop programs and udp_probe (built by its Makefile). */
    public static Path bpfDir() {
        return root().resolve("integration-tests/target/bpf");
    }

    /** Per-test logs: integration-tests/target/it-logs/NAME. */
    public static Path logDir(String name) {
        Path dir = root().resolve("integration-tests/target/it-logs").resolve(name);
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new IllegalStateException("cannot create " + dir, e);
        }
        return dir;
    }

    public static boolean isRoot() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return line.split("\\s+")[2].equals("0"); // effective uid
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }

    /** Skips the calling test (class) with the reason when namespaces cannot be made here. */
    public static void assumeNamespaces() {
        assumeTrue(
                isRoot(),
                "needs root to create network namespaces, veths and tc filters" + " (CI runs as root); skipped");
        assumeTrue(
                Files.isExecutable(Path.of("/usr/sbin/ip"))
                        || Files.isExecutable(Path.of("/sbin/ip"))
                        || Files.isExecutable(Path.of("/usr/bin/ip")),
                "needs iproute2 (ip); skipped");
    }
}
