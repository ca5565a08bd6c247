package io.metaroce.it.container;

import com.github.dockerjava.api.model.Capability;
import io.metaroce.it.Proc;
import io.metaroce.it.Sh;
import io.metaroce.it.Wait;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * One host of a {@link ContainerFabric}: a container of the node image (network mode none, so its
 * network namespace holds only what the fabric plumbs in: {@code fab0} to its leaf and
 * {@code mgmt0} to the management bridge). Runs any command in the container, bounded
 * ({@link #exec}) or in the background ({@link #start}, {@link #startApp} with the provider
 * preloaded), and the daemon ({@link #startDaemon}) with its JSON stats.
 */
final class Node {

    static final String FABRIC_IF = "fab0";
    /** The second plane's interface, with {@code ContainerFabric.Builder.planes(2)}. */
    static final String FABRIC_IF2 = "fab1";

    static final String MGMT_IF = "mgmt0";
    /** Where the daemon writes its stats in the container (readable from the host, see {@link #file}). */
    static final String STATS_FILE = "/tmp/nicd-stats.json";

    private static final String READY = "mrce-nicd ready:";
    private static final Pattern SEGS_OUT = Pattern.compile("segs_out:(\\d+)");
    private static final Duration DAEMON_READY_TIMEOUT = Duration.ofSeconds(60);

    private final String name;
    private final String addr;
    private final String mgmtAddr;
    private final Path logDir;
    private final GenericContainer<?> container;
    private final List<NodeProc> procs = new CopyOnWriteArrayList<>();
    private long pid;
    private List<String> env;
    private NodeProc daemon;
    private int nextLog;

    /** A container, not yet started. */
    @SuppressWarnings("resource") // closed by stop()
    Node(String name, String addr, String mgmtAddr, String image, String fabricId, Path logDir) {
        this.name = name;
        this.addr = addr;
        this.mgmtAddr = mgmtAddr;
        this.logDir = logDir;
        this.container = new GenericContainer<>(DockerImageName.parse(image))
                .withImagePullPolicy(img -> false) // built locally; no registry is reachable
                .withNetworkMode("none")
                .withLabel(
                        ContainerEnv.OWNER_LABEL,
                        Long.toString(ProcessHandle.current().pid()))
                .withLabel("io.metaroce.it.fabric", fabricId)
                .withCommand("sleep", "infinity")
                .withCreateContainerCmdModifier(cmd -> {
                    cmd.withName(fabricId + "-" + name.toLowerCase()).withHostName(name.toLowerCase());
                    // --privileged fails here (CAP_SYS_RESOURCE is not in the bounding set): everything else.
                    cmd.getHostConfig()
                            .withCapAdd(Capability.ALL)
                            .withCapDrop(Capability.SYS_RESOURCE)
                            .withSecurityOpts(List.of("seccomp=unconfined", "apparmor=unconfined"));
                });
    }

    void startContainer() {
        container.start();
        pid = container.getContainerInfo().getState().getPidLong();
        env = Arrays.asList(container.getContainerInfo().getConfig().getEnv());
    }

    String name() {
        return name;
    }

    /** The address on the fabric ({@code fab0}): the daemon's, and GID 0 of mrce0. */
    String addr() {
        return addr;
    }

    /** The address on the management bridge: where applications' TCP exchanges go. */
    String mgmtAddr() {
        return mgmtAddr;
    }

    /** The container's init process, as the host sees it (its namespaces are the container's). */
    long pid() {
        return pid;
    }

    String containerId() {
        return container.getContainerId();
    }

    /** A path inside the container, reached from the host through /proc/PID/root. */
    Path file(String pathInContainer) {
        return Path.of("/proc/" + pid + "/root" + pathInContainer);
    }

    /** {@code nsenter ... -n}: run a host binary (ip, tc, sysctl) in the container's network namespace. */
    List<String> inNetns(String... cmd) {
        List<String> full = new ArrayList<>(List.of("nsenter", "-t", Long.toString(pid), "-n", "--"));
        full.addAll(List.of(cmd));
        return full;
    }

    /** The container's own binary and environment, in all its namespaces. */
    private List<String> inContainer(List<String> cmd) {
        List<String> full =
                new ArrayList<>(List.of("nsenter", "-t", Long.toString(pid), "-a", "-r", "-w", "--", "env", "-i"));
        full.addAll(env);
        full.addAll(cmd);
        return full;
    }

    /**
     * TCP segments the daemon here has sent on its connection-manager connections (port 4792) so
     * far: they cross the spine too, and no data-path fault drops them.
     */
    long cmSegmentsOut() {
        Proc.Result r =
                Sh.runOrKill(Duration.ofSeconds(10), inNetns("ss", "-tinH", "( sport = :4792 or dport = :4792 )"));
        long n = 0;
        Matcher m = SEGS_OUT.matcher(r.output());
        while (m.find()) {
            n += Long.parseLong(m.group(1));
        }
        return n;
    }

    /** Runs CMD in the container to completion within timeout; exit -1 if it had to be killed. */
    Proc.Result exec(Duration timeout, String... cmd) {
        return Sh.runOrKill(timeout, inContainer(List.of(cmd)));
    }

    /** Runs CMD in the container and fails with its output unless it exits 0. */
    String check(String... cmd) {
        Proc.Result r = exec(Sh.DEFAULT_TIMEOUT, cmd);
        if (!r.ok()) {
            throw new IllegalStateException("in " + name + ": `" + String.join(" ", cmd) + "` exited " + r.exit() + ": "
                    + r.output().strip());
        }
        return r.output();
    }

    /** Starts CMD in the container as is, output to a log file. */
    NodeProc start(String what, List<String> cmd) {
        NodeProc p = NodeProc.start(what + "@" + name, logFile(what), inContainer(cmd), cmd);
        procs.add(p);
        return p;
    }

    /** Starts CMD in the container with the provider preloaded (mrce-run), so it sees mrce0. */
    NodeProc startApp(String what, List<String> cmd) {
        List<String> full = new ArrayList<>(List.of("mrce-run"));
        full.addAll(cmd);
        return start(what, full);
    }

    // --- the daemon ---

    /** Starts mrce-nicd on fab0 with per-path stats in {@link #STATS_FILE}, and waits until it serves. */
    NodeProc startDaemon(String... extraArgs) {
        return startDaemonOn(List.of("--ifname", FABRIC_IF), extraArgs);
    }

    /** {@link #startDaemon} serving one device mrce0 over both planes ({@code --device mrce0=fab0+fab1}). */
    NodeProc startMultiPlaneDaemon(String... extraArgs) {
        return startDaemonOn(List.of("--device", "mrce0=" + FABRIC_IF + "+" + FABRIC_IF2), extraArgs);
    }

    private NodeProc startDaemonOn(List<String> device, String... extraArgs) {
        if (daemon != null && daemon.isAlive()) {
            throw new IllegalStateException("a daemon already runs in " + name);
        }
        List<String> cmd = new ArrayList<>(List.of("mrce-nicd"));
        cmd.addAll(device);
        cmd.addAll(List.of("--stats", STATS_FILE));
        cmd.addAll(List.of(extraArgs));
        daemon = start("nicd", cmd);
        return daemon;
    }

    void awaitDaemonReady() {
        NodeProc d = daemon;
        boolean ready = Wait.until(DAEMON_READY_TIMEOUT, () -> daemonReady() || !d.isAlive());
        if (!ready || !daemonReady()) {
            throw new AssertionError("mrce-nicd in " + name + " not serving within " + DAEMON_READY_TIMEOUT + " (alive="
                    + d.isAlive() + "); its log:\n" + d.output());
        }
    }

    private boolean daemonReady() {
        if (!daemon.output().contains(READY)) {
            return false;
        }
        try (var socks = Files.list(file("/tmp/metaroce"))) {
            return socks.anyMatch(p -> p.getFileName().toString().endsWith(".sock"));
        } catch (IOException e) {
            return false;
        }
    }

    NodeProc daemon() {
        if (daemon == null) {
            throw new IllegalStateException("no daemon started in " + name);
        }
        return daemon;
    }

    /** SIGKILL to the daemon: a crash. Its applications must see errors, not hang. */
    void killDaemon() {
        daemon().kill();
    }

    /** The daemon's latest stats snapshot (written every second and at exit). */
    DaemonStats stats() {
        try {
            return DaemonStats.parse(Files.readString(file(STATS_FILE)));
        } catch (IOException e) {
            throw new IllegalStateException("no stats from the daemon in " + name + " (" + STATS_FILE + "): " + e);
        }
    }

    /** Waits for a snapshot taken after now (the daemon writes one a second) and returns it. */
    DaemonStats freshStats() {
        long before;
        try {
            before = stats().timeNs();
        } catch (IllegalStateException | IllegalArgumentException e) {
            before = Long.MIN_VALUE; // a daemon just started writes its first snapshot after a second
        }
        long since = before;
        DaemonStats[] s = new DaemonStats[1];
        boolean fresh = Wait.until(Duration.ofSeconds(10), () -> {
            try {
                s[0] = stats();
            } catch (IllegalStateException | IllegalArgumentException e) {
                return false; // between the write and the rename
            }
            return s[0].timeNs() > since;
        });
        if (!fresh) {
            throw new AssertionError("the daemon in " + name + " wrote no new stats within 10 s");
        }
        return s[0];
    }

    boolean tcpListening(int port) {
        Proc.Result r = Sh.runOrKill(inNetns("ss", "-Htln", "sport = :" + port).toArray(String[]::new));
        return r.ok() && !r.output().isBlank();
    }

    String daemonLogTail(int lines) {
        if (daemon == null) {
            return "(no daemon)";
        }
        List<String> all = daemon.output().lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }

    private synchronized Path logFile(String what) {
        return logDir.resolve(String.format("%s-%02d-%s.log", name, nextLog++, what));
    }

    /** Kills what runs in it (the daemon with SIGTERM first), then removes the container and its veths. */
    void stop() {
        for (NodeProc p : procs) {
            if (p != daemon) {
                p.close();
            }
        }
        if (daemon != null) {
            daemon.stop(Duration.ofSeconds(10));
        }
        container.stop();
    }
}
