package io.metaroce.it.jverbs;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Two hosts for the java-verbs tests: namespaces {@code jvit-<jvm pid>-<random>-a/b} joined by a
 * veth link (198.18.0.1/24 - 198.18.0.2/24, no route out), an mrce-nicd in each, and the
 * processes the test starts there (C programs through {@code bin/mrce-run}, Java ones through
 * {@code bin/jverbs} or the provider-preloaded JVM of {@link #javaApp}). Everything is removed in
 * {@link #close()} or by a shutdown hook; namespaces of dead earlier runs are reaped.
 */
final class JverbsFabric implements AutoCloseable {

    static final String PREFIX = "jvit-";
    private static final SecureRandom RANDOM = new SecureRandom();

    record Host(String name, String ns, String ifname, String addr) {}

    /** A process started in a host, output in a log file. */
    static final class Proc implements AutoCloseable {
        final String name;
        final Process process;
        final Path log;

        Proc(String name, Process process, Path log) {
            this.name = name;
            this.process = process;
            this.log = log;
        }

        String output() {
            try {
                return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
            } catch (IOException e) {
                return "<cannot read " + log + ">";
            }
        }

        boolean isAlive() {
            return process.isAlive();
        }

        /** The exit status; throws AssertionError with the output (after killing it) past the timeout. */
        int waitFor(Duration timeout) {
            try {
                if (process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                    return process.exitValue();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            close();
            throw new AssertionError(name + " did not finish within " + timeout + "; output:\n" + output());
        }

        void stop(Duration grace) {
            if (!process.isAlive()) {
                return;
            }
            process.destroy();
            try {
                if (process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            close();
        }

        @Override
        public void close() {
            if (process.isAlive()) {
                process.destroyForcibly();
                try {
                    process.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    final Host a;
    final Host b;
    private final String tag;
    private final Path logDir;
    private final List<Proc> procs = new CopyOnWriteArrayList<>();
    private final List<Proc> daemons = new CopyOnWriteArrayList<>();
    private final List<String> namespaces = new ArrayList<>();
    private final Thread hook;
    private int nextLog;
    private boolean closed;

    static void assumeRoot() {
        boolean root = false;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    root = line.split("\\s+")[2].equals("0");
                }
            }
        } catch (IOException e) {
            root = false;
        }
        assumeTrue(root, "needs root to create network namespaces (CI runs as root); skipped");
    }

    static Path root() {
        String r = System.getProperty("metaroce.root");
        if (r != null && !r.isBlank()) {
            return Path.of(r).toAbsolutePath().normalize();
        }
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("bin/jverbs"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("cannot find the repository root; set -Dmetaroce.root");
        }
        return dir;
    }

    /** Builds the two namespaces and the link (MTU {@code mtu}); does not start daemons. */
    JverbsFabric(String testName, int mtu) {
        reapLeftovers();
        byte[] r = new byte[3];
        RANDOM.nextBytes(r);
        this.tag = ProcessHandle.current().pid() + "-" + HexFormat.of().formatHex(r);
        this.logDir = root().resolve("integration-tests/target/it-logs").resolve(testName).resolve(tag);
        try {
            Files.createDirectories(logDir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.a = new Host("A", PREFIX + tag + "-a", "veth-a", "198.18.0.1");
        this.b = new Host("B", PREFIX + tag + "-b", "veth-b", "198.18.0.2");
        this.hook = new Thread(this::teardown, "jverbs-fabric-teardown-" + tag);
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            for (Host h : List.of(a, b)) {
                sh("ip", "netns", "add", h.ns());
                namespaces.add(h.ns());
                sh("ip", "netns", "exec", h.ns(), "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1");
                sh("ip", "-n", h.ns(), "link", "set", "lo", "up");
            }
            sh("ip", "link", "add", a.ifname(), "netns", a.ns(), "mtu", Integer.toString(mtu), "type", "veth", "peer",
                    "name", b.ifname(), "netns", b.ns(), "mtu", Integer.toString(mtu));
            for (Host h : List.of(a, b)) {
                sh("ip", "-n", h.ns(), "addr", "add", h.addr() + "/24", "dev", h.ifname());
                sh("ip", "-n", h.ns(), "link", "set", h.ifname(), "up");
            }
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /** Starts mrce-nicd in both hosts and waits until both are ready. */
    JverbsFabric startDaemons() {
        List<Proc> started = new ArrayList<>();
        for (Host h : List.of(a, b)) {
            Proc d = start(h, "mrce-nicd", List.of(root().resolve("bin/mrce-nicd").toString(), "--ifname", h.ifname()));
            daemons.add(d);
            started.add(d);
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        for (Proc d : started) {
            while (!d.output().contains("mrce-nicd ready:")) {
                if (!d.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError(d.name + " not ready (alive=" + d.isAlive() + "):\n" + d.output());
                }
                sleep(100);
            }
        }
        return this;
    }

    /** Starts {@code cmd} in host {@code h} (ip netns exec), output to a log file. */
    Proc start(Host h, String name, List<String> cmd) {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", h.ns()));
        full.addAll(cmd);
        Path log;
        synchronized (this) {
            log = logDir.resolve(String.format("%02d-%s-%s.log", nextLog++, name, h.name()));
        }
        try {
            Process p = new ProcessBuilder(full).redirectErrorStream(true).redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
            Proc proc = new Proc(name + "@" + h.name(), p, log);
            procs.add(proc);
            return proc;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + full, e);
        }
    }

    /** {@code bin/jverbs ARGS}: a java-verbs example with the provider preloaded. */
    static List<String> jverbs(String... args) {
        List<String> cmd = new ArrayList<>(List.of(root().resolve("bin/jverbs").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** {@code bin/mrce-run ARGS}: an unmodified C program with the provider preloaded. */
    static List<String> cProgram(String... args) {
        List<String> cmd = new ArrayList<>(List.of(root().resolve("bin/mrce-run").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /**
     * A test program of this folder (a class with a main) in a JVM with the provider preloaded,
     * on java-verbs' classes and these tests' classes.
     */
    static List<String> javaApp(Class<?> main, String... args) {
        Path r = root();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = r.resolve("java-verbs/target/classes") + ":" + r.resolve("integration-tests/target/test-classes");
        List<String> cmd = new ArrayList<>(List.of(r.resolve("bin/mrce-run").toString(), java,
                "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-cp", cp, main.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Waits until something listens on TCP {@code port} in {@code h}, failing with the server's output. */
    void awaitListening(Host h, int port, Proc server) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline && server.isAlive()) {
            String ss = shOut("ip", "netns", "exec", h.ns(), "ss", "-Htln", "sport = :" + port);
            if (!ss.isBlank()) {
                return;
            }
            sleep(100);
        }
        throw new AssertionError(server.name + " is not listening on tcp port " + port + " (alive=" + server.isAlive()
                + "); output:\n" + server.output() + "\n" + diagnostics());
    }

    /** Exit statuses and outputs of a server/client pair. */
    record Outcome(int serverExit, String serverOutput, int clientExit, String clientOutput) {
        String both() {
            return "--- server (exit " + serverExit + "):\n" + serverOutput + "\n--- client (exit " + clientExit + "):\n"
                    + clientOutput;
        }
    }

    /**
     * Starts {@code serverCmd} in B, waits until it listens on TCP {@code port}, runs
     * {@code clientCmd} in A to completion, then waits for the server (a server left behind by a
     * failed client is killed after 10 s and reported with exit -1).
     */
    Outcome runPair(int port, List<String> serverCmd, List<String> clientCmd, Duration timeout) {
        try (Proc server = start(b, "server", serverCmd)) {
            awaitListening(b, port, server);
            try (Proc client = start(a, "client", clientCmd)) {
                int ce = client.waitFor(timeout);
                int se;
                try {
                    se = server.waitFor(ce == 0 ? Duration.ofSeconds(60) : Duration.ofSeconds(10));
                } catch (AssertionError e) {
                    se = -1;
                }
                return new Outcome(se, server.output(), ce, client.output());
            }
        }
    }

    String diagnostics() {
        StringBuilder sb = new StringBuilder();
        for (Proc d : daemons) {
            List<String> lines = d.output().lines().toList();
            sb.append("--- ").append(d.name).append(" (alive=").append(d.isAlive()).append("):\n")
                    .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()))).append('\n');
        }
        return sb.toString();
    }

    @Override
    public void close() {
        teardown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException | IllegalArgumentException ignored) {
            // shutting down, or not registered
        }
    }

    private synchronized void teardown() {
        if (closed) {
            return;
        }
        closed = true;
        for (Proc p : procs) {
            if (!daemons.contains(p)) {
                p.close();
            }
        }
        for (Proc d : daemons) {
            d.stop(Duration.ofSeconds(10));
        }
        for (String ns : namespaces) {
            deleteNamespace(ns);
        }
    }

    private static void deleteNamespace(String ns) {
        for (String line : shOut("ip", "netns", "pids", ns).lines().toList()) {
            try {
                ProcessHandle.of(Long.parseLong(line.strip())).ifPresent(ProcessHandle::destroyForcibly);
            } catch (NumberFormatException ignored) {
                // not a pid
            }
        }
        shOut("ip", "netns", "del", ns);
    }

    /** Deletes jvit-PID-* namespaces whose JVM is gone (a killed earlier run). */
    private static void reapLeftovers() {
        for (String line : shOut("ip", "netns", "list").lines().toList()) {
            String ns = line.strip().split("\\s+")[0];
            if (!ns.startsWith(PREFIX)) {
                continue;
            }
            try {
                long owner = Long.parseLong(ns.substring(PREFIX.length()).split("-")[0]);
                if (ProcessHandle.of(owner).isPresent()) {
                    continue;
                }
            } catch (NumberFormatException ignored) {
                // a leftover anyway
            }
            deleteNamespace(ns);
        }
    }

    private static void sh(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("`" + String.join(" ", cmd) + "` failed: " + out.strip());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String shOut(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(20, TimeUnit.SECONDS);
            return p.exitValue() == 0 ? out : "";
        } catch (IOException | IllegalThreadStateException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
