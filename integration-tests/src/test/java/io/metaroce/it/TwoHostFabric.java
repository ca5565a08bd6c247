package io.metaroce.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Two hosts, each a network namespace with random name, joined by one veth link (A - B) or through a
 * router namespace (A - R - B), addressed from 198.18.0.0/15 with no route out and IPv6 off.
 * Starts mrce-nicd in each host, runs commands there with bounded timeouts, and makes a link lossy
 * with the tc-BPF drop program.
 *
 * <pre>
 *   direct:  A veth-a 198.18.0.1/24 ------------------------- 198.18.0.2/24 veth-b B
 *   router:  A veth-a 198.18.1.1/24 -- rt-a 198.18.1.254 R rt-b 198.18.2.254 -- 198.18.2.1/24 veth-b B
 * </pre>
 *
 * Everything it made goes in {@link #close()}, or in a shutdown hook if the JVM exits first. A run
 * that was SIGKILLed leaves namespaces named {@code mrceit-PID-*}; the next fabric reaps those whose
 * PID is gone.
 */
final class TwoHostFabric implements AutoCloseable {

    static final String PREFIX = "mrceit-";
    static final int MRCE_UDP_PORT = 4793;
    static final Duration DAEMON_READY_TIMEOUT = Duration.ofSeconds(40);
    private static final Path SOCK_DIR = Path.of("/tmp/metaroce");
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A host: its namespace, the interface toward the other host, and its address there. */
    record Host(String name, String ns, String ifname, String addr) {}

    /** Loss rates the drop program was built for (integration-tests/bpf/Makefile). */
    enum Loss {
        PCT_1("drop_1pct.o", 0.01),
        PCT_5("drop_5pct.o", 0.05),
        PCT_100("drop_100pct.o", 1.0);

        final String object;
        final double rate;

        Loss(String object, double rate) {
            this.object = object;
            this.rate = rate;
        }
    }

    private final String tag;
    private final Path logDir;
    private final boolean viaRouter;
    private final int mtu;
    private final Host a;
    private final Host b;
    private final String routerNs;
    private final List<String> namespaces = new ArrayList<>();
    private final List<Proc> procs = new CopyOnWriteArrayList<>();
    private final List<Daemon> daemons = new CopyOnWriteArrayList<>();
    private final Thread shutdownHook;
    private volatile boolean closed;
    private int nextLog;

    private TwoHostFabric(String testName, boolean viaRouter, int mtu) {
        this.tag = ProcessHandle.current().pid() + "-" + HexFormat.of().formatHex(randomBytes(3));
        this.logDir = Env.logDir(testName + "/" + tag);
        this.viaRouter = viaRouter;
        this.mtu = mtu;
        this.a = new Host("A", PREFIX + tag + "-a", "veth-a", viaRouter ? "198.18.1.1" : "198.18.0.1");
        this.b = new Host("B", PREFIX + tag + "-b", "veth-b", viaRouter ? "198.18.2.1" : "198.18.0.2");
        this.routerNs = viaRouter ? PREFIX + tag + "-r" : null;
        this.shutdownHook = new Thread(this::teardown, "fabric-teardown-" + tag);
    }

    /** A direct veth link between A and B with the given MTU (9000 lets -m 4096 be active). */
    static TwoHostFabric direct(String testName, int mtu) {
        return new TwoHostFabric(testName, false, mtu).create();
    }

    /** A and B each linked to a router namespace that forwards between them. */
    static TwoHostFabric routed(String testName, int mtu) {
        return new TwoHostFabric(testName, true, mtu).create();
    }

    Host a() {
        return a;
    }

    Host b() {
        return b;
    }

    Path logDir() {
        return logDir;
    }

    List<Daemon> daemons() {
        return List.copyOf(daemons);
    }

    private TwoHostFabric create() {
        reapLeftovers();
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        try {
            addNamespace(a.ns());
            addNamespace(b.ns());
            if (viaRouter) {
                addNamespace(routerNs);
                Sh.check("ip", "link", "add", a.ifname(), "netns", a.ns(), "mtu", str(mtu), "type", "veth",
                        "peer", "name", "rt-a", "netns", routerNs, "mtu", str(mtu));
                Sh.check("ip", "link", "add", b.ifname(), "netns", b.ns(), "mtu", str(mtu), "type", "veth",
                        "peer", "name", "rt-b", "netns", routerNs, "mtu", str(mtu));
                Sh.check("ip", "netns", "exec", routerNs, "sysctl", "-qw", "net.ipv4.ip_forward=1");
                Sh.check("ip", "-n", routerNs, "addr", "add", "198.18.1.254/24", "dev", "rt-a");
                Sh.check("ip", "-n", routerNs, "addr", "add", "198.18.2.254/24", "dev", "rt-b");
                Sh.check("ip", "-n", routerNs, "link", "set", "rt-a", "up");
                Sh.check("ip", "-n", routerNs, "link", "set", "rt-b", "up");
            } else {
                Sh.check("ip", "link", "add", a.ifname(), "netns", a.ns(), "mtu", str(mtu), "type", "veth",
                        "peer", "name", b.ifname(), "netns", b.ns(), "mtu", str(mtu));
            }
            for (Host h : List.of(a, b)) {
                Sh.check("ip", "-n", h.ns(), "addr", "add", h.addr() + "/24", "dev", h.ifname());
                Sh.check("ip", "-n", h.ns(), "link", "set", h.ifname(), "up");
            }
            if (viaRouter) {
                Sh.check("ip", "-n", a.ns(), "route", "add", "198.18.0.0/15", "via", "198.18.1.254");
                Sh.check("ip", "-n", b.ns(), "route", "add", "198.18.0.0/15", "via", "198.18.2.254");
            }
            return this;
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private void addNamespace(String ns) {
        Sh.check("ip", "netns", "add", ns);
        namespaces.add(ns);
        Sh.check("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1");
        Sh.check("ip", "-n", ns, "link", "set", "lo", "up");
    }

    /** Starts mrce-nicd in A and in B (JVM start-ups overlap) and waits until both serve. */
    List<Daemon> startDaemons() {
        Daemon da = startDaemon(a);
        Daemon db = startDaemon(b);
        awaitReady(da);
        awaitReady(db);
        return List.of(da, db);
    }

    /** Starts mrce-nicd on the host's interface with the default socket path; does not wait. */
    Daemon startDaemon(Host h, String... extraArgs) {
        List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", h.ns(),
                Env.bin("mrce-nicd").toString(), "--ifname", h.ifname()));
        cmd.addAll(List.of(extraArgs));
        Proc p = Proc.start("mrce-nicd@" + h.name(), logFile("nicd-" + h.name()), Map.of(), cmd);
        procs.add(p);
        Daemon d = new Daemon(h, p, defaultSocket(h));
        daemons.add(d);
        return d;
    }

    void awaitReady(Daemon d) {
        boolean ready = Wait.until(DAEMON_READY_TIMEOUT, () -> d.isReady() || !d.isAlive());
        if (!ready || !d.isReady()) {
            throw new AssertionError("mrce-nicd in host " + d.host().name() + " not serving within "
                    + DAEMON_READY_TIMEOUT + " (alive=" + d.isAlive() + ", socket " + d.socket()
                    + (Files.exists(d.socket()) ? " exists" : " missing") + "); its log:\n" + d.logText());
        }
    }

    Daemon daemon(Host h) {
        for (Daemon d : daemons) {
            if (d.host().equals(h)) {
                return d;
            }
        }
        throw new IllegalStateException("no daemon started in host " + h.name());
    }

    /** /tmp/metaroce/nicd-INODE.sock, INODE being the host's network namespace (what the provider uses). */
    Path defaultSocket(Host h) {
        try {
            Object ino = Files.getAttribute(Path.of("/run/netns", h.ns()), "unix:ino");
            return SOCK_DIR.resolve("nicd-" + ino + ".sock");
        } catch (IOException e) {
            throw new IllegalStateException("cannot stat the namespace file of " + h.ns(), e);
        }
    }

    /** Starts CMD in the host with bin/mrce-run (the provider preloaded); output to a log file. */
    Proc startApp(Host h, String name, List<String> cmd) {
        return start(h, name, withProvider(cmd));
    }

    /** Starts CMD in the host as is; output to a log file. */
    Proc start(Host h, String name, List<String> cmd) {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", h.ns()));
        full.addAll(cmd);
        Proc p = Proc.start(name + "@" + h.name(), logFile(name + "-" + h.name()), Map.of(), full);
        procs.add(p);
        return p;
    }

    /** Runs CMD in the host with the provider preloaded, to completion within timeout. */
    Proc.Result runApp(Host h, String name, Duration timeout, List<String> cmd) {
        Proc p = startApp(h, name, cmd);
        int exit = p.waitFor(timeout);
        return new Proc.Result(exit, p.output());
    }

    /** Runs an administrative command in the host (ss, tc, ...) within timeout. */
    Proc.Result exec(Host h, Duration timeout, String... cmd) {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", h.ns()));
        full.addAll(List.of(cmd));
        return Sh.run(timeout, full);
    }

    boolean tcpListening(Host h, int port) {
        Proc.Result r = exec(h, Duration.ofSeconds(5), "ss", "-Htln", "sport = :" + port);
        return r.ok() && !r.output().isBlank();
    }

    void awaitTcpListening(Host h, int port, Proc server, Duration timeout) {
        boolean up = Wait.until(timeout, () -> tcpListening(h, port) || !server.isAlive());
        if (!up || !server.isAlive()) {
            throw new AssertionError(server.name() + " is not listening on tcp port " + port + " within "
                    + timeout + " (alive=" + server.isAlive() + "); its output:\n" + server.output()
                    + "\n" + diagnostics());
        }
    }

    /**
     * Makes the link lossy: attaches the drop program to the egress of both hosts' interfaces, so
     * MetaRoCE's UDP packets (port 4793) are dropped at {@code loss.rate} in each direction.
     */
    void dropOnLink(Loss loss) {
        dropOnEgress(a, loss);
        dropOnEgress(b, loss);
    }

    void dropOnEgress(Host h, Loss loss) {
        Path obj = Env.bpfDir().resolve(loss.object);
        if (!Files.isRegularFile(obj)) {
            throw new IllegalStateException(obj + " is missing: the integration-tests build makes it");
        }
        Sh.check("ip", "netns", "exec", h.ns(), "tc", "qdisc", "replace", "dev", h.ifname(), "clsact");
        Sh.check("ip", "netns", "exec", h.ns(), "tc", "filter", "replace", "dev", h.ifname(), "egress",
                "pref", "1", "handle", "1", "bpf", "da", "obj", obj.toString(), "sec", "tc");
    }

    void clearDrops() {
        for (Host h : List.of(a, b)) {
            Sh.run("ip", "netns", "exec", h.ns(), "tc", "qdisc", "del", "dev", h.ifname(), "clsact");
        }
    }

    /**
     * Sends {@code count} UDP datagrams from one host to {@code port} on the other (with udp_probe)
     * and returns how many arrived. Used to prove a drop program drops before a test relies on it.
     */
    long udpProbe(Host from, Host to, int port, int sourcePort, int count) {
        String probe = Env.bpfDir().resolve("udp_probe").toString();
        Proc rx = start(to, "udp-probe-rx", List.of(probe, "recv", str(port), str(count), "1000"));
        try {
            if (!Wait.until(Duration.ofSeconds(10), () -> rx.output().contains("listening") || !rx.isAlive())) {
                throw new AssertionError("udp_probe receiver did not start: " + rx.output());
            }
            Proc.Result tx = exec(from, Duration.ofSeconds(60), probe, "send", to.addr(), str(port), str(count),
                    str(sourcePort));
            if (!tx.ok() || !tx.output().contains("sent " + count)) {
                throw new AssertionError("udp_probe send failed: " + tx.output());
            }
            int exit = rx.waitFor(Duration.ofSeconds(60));
            var m = java.util.regex.Pattern.compile("received (\\d+)").matcher(rx.output());
            if (exit != 0 || !m.find()) {
                throw new AssertionError("udp_probe receive failed: " + rx.output());
            }
            return Long.parseLong(m.group(1));
        } finally {
            rx.close();
        }
    }

    /** The last lines of each daemon's log, for failure messages. */
    String diagnostics() {
        StringBuilder sb = new StringBuilder();
        for (Daemon d : daemons) {
            sb.append("--- mrce-nicd in host ").append(d.host().name()).append(" (alive=").append(d.isAlive())
                    .append(", log ").append(d.log()).append("):\n").append(d.logTail(30)).append('\n');
        }
        return sb.toString();
    }

    private List<String> withProvider(List<String> cmd) {
        List<String> full = new ArrayList<>();
        full.add(Env.bin("mrce-run").toString());
        full.addAll(cmd);
        return full;
    }

    private synchronized Path logFile(String name) {
        return logDir.resolve(String.format("%02d-%s.log", nextLog++, name));
    }

    @Override
    public void close() {
        teardown();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException | IllegalArgumentException ignored) {
            // the JVM is already shutting down, or the hook is not registered
        }
    }

    /** Kills what this fabric started, then deletes its namespaces (which removes the veths). */
    private synchronized void teardown() {
        if (closed) {
            return;
        }
        closed = true;
        for (Proc p : procs) {
            if (!daemonProc(p)) {
                p.close();
            }
        }
        for (Daemon d : daemons) {
            d.stop(Duration.ofSeconds(10));
        }
        for (String ns : namespaces) {
            deleteNamespace(ns);
        }
    }

    private boolean daemonProc(Proc p) {
        for (Daemon d : daemons) {
            if (d.proc() == p) {
                return true;
            }
        }
        return false;
    }

    /**
     * Deletes a namespace of ours. Processes still inside are ours too (only this fabric starts
     * anything in it): they are killed by PID first so the namespace really goes.
     */
    private static void deleteNamespace(String ns) {
        Proc.Result pids = Sh.run("ip", "netns", "pids", ns);
        if (pids.ok()) {
            for (String line : pids.output().lines().toList()) {
                try {
                    ProcessHandle.of(Long.parseLong(line.strip())).ifPresent(ProcessHandle::destroyForcibly);
                } catch (NumberFormatException ignored) {
                    // not a pid line
                }
            }
        }
        Sh.run("ip", "netns", "del", ns);
    }

    /** Deletes namespaces left by earlier runs of these tests whose JVM is gone. */
    static void reapLeftovers() {
        Proc.Result list = Sh.run("ip", "netns", "list");
        if (!list.ok()) {
            return;
        }
        for (String line : list.output().lines().toList()) {
            String ns = line.strip().split("\\s+")[0];
            if (!ns.startsWith(PREFIX)) {
                continue;
            }
            String[] parts = ns.substring(PREFIX.length()).split("-");
            try {
                long owner = Long.parseLong(parts[0]);
                if (ProcessHandle.of(owner).isPresent()) {
                    continue; // a live run's namespace
                }
            } catch (NumberFormatException ignored) {
                // not one of ours after all; a leftover anyway
            }
            deleteNamespace(ns);
        }
    }

    private static byte[] randomBytes(int n) {
        byte[] bytes = new byte[n];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    private static String str(int value) {
        return Integer.toString(value);
    }
}
