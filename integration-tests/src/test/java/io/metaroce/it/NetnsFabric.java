package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

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
 * What every namespace fabric of these tests shares, whatever its shape: two hosts A and B, each a
 * network namespace with a random name {@code mrceit-<jvm pid>-<random>-*} and IPv6 off (on, without
 * autoconfiguration or DAD, in the IPv6 fabrics: {@link #enableIpv6}); mrce-nicd
 * started in them; applications run there with bounded timeouts; the tc-BPF drop program on an
 * interface; and teardown of everything made in {@link #close()}, or in a shutdown hook if the JVM
 * exits first. A run that was SIGKILLed leaves namespaces named {@code mrceit-PID-*}; the next
 * fabric reaps those whose PID is gone. Subclasses ({@link TwoHostFabric}, {@link EcmpFabric}) build
 * the links between the hosts; so does {@code jverbs.JverbsFabric}, which is why what tests call is
 * public.
 */
public abstract class NetnsFabric implements AutoCloseable {

    static final String PREFIX = "mrceit-";
    static final int MRCE_UDP_PORT = 4793;
    /**
     * A bound, not a wait (readiness is polled): on the 2-core CI machine under a load of 30 a
     * daemon had not printed its first line after 40 s.
     */
    static final Duration DAEMON_READY_TIMEOUT = Duration.ofSeconds(120);

    private static final Path SOCK_DIR = Path.of("/tmp/metaroce");
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A host: its namespace, the interface toward the other host, and its address there. */
    public record Host(String name, String ns, String ifname, String addr) {}

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

    protected final String tag;
    private final Path logDir;
    private final List<String> namespaces = new ArrayList<>();
    private final List<Proc> procs = new CopyOnWriteArrayList<>();
    private final List<Daemon> daemons = new CopyOnWriteArrayList<>();
    private final Thread shutdownHook;
    private volatile boolean closed;
    private int nextLog;

    protected NetnsFabric(String testName) {
        this.tag = newTag();
        this.logDir = Env.logDir(testName + "/" + tag);
        this.shutdownHook = new Thread(this::teardown, "fabric-teardown-" + tag);
    }

    /** Host A (set by the subclass's constructor, from names this fabric's tag makes). */
    protected Host a;
    /** Host B (set by the subclass's constructor). */
    protected Host b;

    public final Host a() {
        return a;
    }

    public final Host b() {
        return b;
    }

    /**
     * Where a client in A reaches its server in B for the applications' own TCP exchange (QP
     * numbers, GIDs, credits). The peer's GID, and so the RDMA traffic, is always B's {@code addr}.
     */
    String appServerAddr() {
        return b().addr();
    }

    /** Makes the namespaces and links; called once by {@link #create()}. */
    protected abstract void build();

    /** Reaps leftovers, registers the shutdown hook, builds; undoes everything if building fails. */
    protected final void create() {
        reapLeftovers();
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        try {
            build();
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /** The namespace name for a part of this fabric, e.g. {@code ns("a")}. */
    protected final String ns(String suffix) {
        return PREFIX + tag + "-" + suffix;
    }

    Path logDir() {
        return logDir;
    }

    List<Daemon> daemons() {
        return List.copyOf(daemons);
    }

    protected final void addNamespace(String ns) {
        addNamespace(ns, namespaces);
    }

    /**
     * Makes namespace {@code ns} a router that spreads flows over equal-cost next hops by their
     * 5-tuple (the UDP source port is a path's entropy) and leaves out next hops whose link is down.
     */
    public static void ecmpRouter(String ns) {
        sysctl(
                ns,
                "net.ipv4.ip_forward=1",
                "net.ipv4.fib_multipath_hash_policy=1",
                "net.ipv4.conf.all.ignore_routes_with_linkdown=1",
                "net.ipv4.conf.default.ignore_routes_with_linkdown=1");
    }

    /** Sets {@code settings} ({@code key=value}) in namespace {@code ns}. */
    static void sysctl(String ns, String... settings) {
        List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", ns, "sysctl", "-qw"));
        cmd.addAll(List.of(settings));
        Sh.check(cmd.toArray(String[]::new));
    }

    /**
     * Makes namespace {@code ns}, adds it to {@code made} at once (so a teardown deletes it even if
     * what follows fails), turns IPv6 off and brings lo up.
     */
    public static void addNamespace(String ns, List<String> made) {
        Sh.check("ip", "netns", "add", ns);
        made.add(ns);
        sysctl(ns, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1");
        Sh.check("ip", "-n", ns, "link", "set", "lo", "up");
    }

    /**
     * Turns IPv6 back on in a namespace {@link #addNamespace} made (for the IPv6-only fabrics),
     * without router advertisements or autoconfigured addresses: a host has only the addresses
     * its fabric gives it, plus the link-local one every IPv6 interface has.
     */
    protected static void enableIpv6(String ns) {
        Sh.check(
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=0",
                "net.ipv6.conf.default.disable_ipv6=0",
                "net.ipv6.conf.default.accept_ra=0",
                "net.ipv6.conf.default.autoconf=0",
                "net.ipv6.conf.default.accept_dad=0",
                "net.ipv6.conf.all.accept_dad=0");
    }

    /** Gives the host its address ({@code addr/prefixLength}) on its interface and brings that up. */
    protected static void addressUp(Host h, int prefixLength) {
        Sh.check("ip", "-n", h.ns(), "addr", "add", h.addr() + "/" + prefixLength, "dev", h.ifname());
        Sh.check("ip", "-n", h.ns(), "link", "set", h.ifname(), "up");
    }

    /**
     * Starts mrce-nicd in A and in B (JVM start-ups overlap), each with {@code extraArgs}, and
     * waits until both serve.
     */
    public List<Daemon> startDaemons(String... extraArgs) {
        Daemon da = startDaemon(a(), extraArgs);
        Daemon db = startDaemon(b(), extraArgs);
        awaitReady(da);
        awaitReady(db);
        return List.of(da, db);
    }

    /** Starts mrce-nicd on the host's interface with the default socket path; does not wait. */
    Daemon startDaemon(Host h, String... extraArgs) {
        return startDaemon(h, Map.of(), extraArgs);
    }

    /** {@link #startDaemon(Host, String...)} with environment variables (e.g. MRCE_NICD_JAVA_OPTS). */
    Daemon startDaemon(Host h, Map<String, String> env, String... extraArgs) {
        List<String> args = new ArrayList<>(List.of("--ifname", h.ifname()));
        args.addAll(List.of(extraArgs));
        return startDaemonWith(h, env, args);
    }

    /**
     * Starts mrce-nicd in the host with exactly {@code args} (e.g. {@code --device NAME=IF} for each
     * interface); its {@link Daemon#socket()} is mrce0's. Does not wait.
     */
    Daemon startDaemonWith(Host h, Map<String, String> env, List<String> args) {
        List<String> cmd = new ArrayList<>(
                List.of("ip", "netns", "exec", h.ns(), Env.bin("mrce-nicd").toString()));
        cmd.addAll(args);
        Proc p = Proc.start("mrce-nicd@" + h.name(), logFile("nicd-" + h.name()), env, cmd);
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
    public Proc start(Host h, String name, List<String> cmd) {
        return startIn(h.ns(), name + "@" + h.name(), name + "-" + h.name(), cmd);
    }

    /** Starts CMD in namespace NS as is; output to a log file. */
    protected final Proc startIn(String ns, String name, String logName, List<String> cmd) {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        full.addAll(cmd);
        Proc p = Proc.start(name, logFile(logName), Map.of(), full);
        procs.add(p);
        return p;
    }

    /**
     * Until the provider finds mrce0 in host {@code h}: a daemon just started on a busy machine
     * can take longer than the provider's 2 s probe to answer its first HELLO.
     */
    void awaitAnswering(Host h) {
        boolean up = Wait.until(
                Duration.ofSeconds(60),
                () -> runApp(h, "ibv_devices", Duration.ofSeconds(20), List.of("ibv_devices"))
                        .output()
                        .contains("mrce0"));
        assertThat(up)
                .as("the provider finds mrce0 in %s%n%s", h.name(), diagnostics())
                .isTrue();
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

    /**
     * TCP segments the host's daemons sent on their connection-manager connections (port 4792),
     * from {@code ss -ti}: what the manager adds to a link's packet count.
     */
    long cmSegmentsOut(Host h) {
        Proc.Result r = exec(h, Duration.ofSeconds(10), "ss", "-tinH", "( sport = :4792 or dport = :4792 )");
        long n = 0;
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("segs_out:(\\d+)").matcher(r.output());
        while (m.find()) {
            n += Long.parseLong(m.group(1));
        }
        return n;
    }

    boolean tcpListening(Host h, int port) {
        Proc.Result r = exec(h, Duration.ofSeconds(5), "ss", "-Htln", "sport = :" + port);
        return r.ok() && !r.output().isBlank();
    }

    protected void awaitTcpListening(Host h, int port, Proc server, Duration timeout) {
        boolean up = Wait.until(timeout, () -> tcpListening(h, port) || !server.isAlive());
        if (!up || !server.isAlive()) {
            throw new AssertionError(server.name() + " is not listening on tcp port " + port + " within "
                    + timeout + " (alive=" + server.isAlive() + "); its output:\n" + server.output()
                    + "\n" + diagnostics());
        }
    }

    /**
     * Attaches the drop program for {@code loss} to the egress of interface {@code ifname} in
     * namespace {@code ns} (replacing any drop program there): MetaRoCE's UDP packets (port 4793)
     * leaving by it are dropped at {@code loss.rate}.
     */
    protected static void dropOnEgress(String ns, String ifname, Loss loss) {
        Path obj = Env.bpfDir().resolve(loss.object);
        if (!Files.isRegularFile(obj)) {
            throw new IllegalStateException(obj + " is missing: the integration-tests build makes it");
        }
        Sh.check("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", ifname, "clsact");
        Sh.check(
                "ip",
                "netns",
                "exec",
                ns,
                "tc",
                "filter",
                "replace",
                "dev",
                ifname,
                "egress",
                "pref",
                "1",
                "handle",
                "1",
                "bpf",
                "da",
                "obj",
                obj.toString(),
                "sec",
                "tc");
    }

    /** Removes the drop program (the clsact qdisc) from an interface, if any. */
    protected static void clearEgress(String ns, String ifname) {
        Sh.run("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", ifname, "clsact");
    }

    /**
     * Sends {@code count} UDP datagrams from one host to {@code port} on the other (with udp_probe)
     * and returns how many arrived. Used to prove a drop program drops before a test relies on it.
     */
    long udpProbe(Host from, Host to, int port, int sourcePort, int count) {
        String probe = Env.bpfDir().resolve("udp_probe").toString();
        List<String> recv = new ArrayList<>(List.of(probe, "recv", str(port), str(count), "1000"));
        if (to.addr().contains(":")) {
            recv.add("6"); // an IPv6 host: listen on IPv6
        }
        Proc rx = start(to, "udp-probe-rx", recv);
        try {
            if (!Wait.until(Duration.ofSeconds(10), () -> rx.output().contains("listening") || !rx.isAlive())) {
                throw new AssertionError("udp_probe receiver did not start: " + rx.output());
            }
            Proc.Result tx = exec(
                    from, Duration.ofSeconds(60), probe, "send", to.addr(), str(port), str(count), str(sourcePort));
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
    public String diagnostics() {
        StringBuilder sb = new StringBuilder();
        for (Daemon d : daemons) {
            sb.append("--- mrce-nicd in host ")
                    .append(d.host().name())
                    .append(" (alive=")
                    .append(d.isAlive())
                    .append(", log ")
                    .append(d.log())
                    .append("):\n")
                    .append(d.logTail(30))
                    .append('\n');
        }
        return sb.toString();
    }

    /**
     * {@link #diagnostics()} plus what each live daemon's transport thinks now (mrce-ctl qps and
     * paths): for an application that is stuck, taken while it still runs. A few seconds each
     * (a JVM per view): call it on a failure, never to build an assertion's description.
     */
    public String transportDiagnostics() {
        StringBuilder sb = new StringBuilder(diagnostics());
        for (Daemon d : daemons) {
            if (!d.isAlive()) {
                continue;
            }
            for (String view : List.of("qps", "paths", "counters")) {
                Proc.Result r = exec(
                        d.host(), Duration.ofSeconds(10), Env.bin("mrce-ctl").toString(), view);
                sb.append("--- mrce-ctl ")
                        .append(view)
                        .append(" in host ")
                        .append(d.host().name())
                        .append(":\n")
                        .append(r.output().strip())
                        .append('\n');
            }
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

    /** {@code <jvm pid>-<6 random hex digits>}: names what one fabric makes, and who owns it. */
    public static String newTag() {
        byte[] bytes = new byte[3];
        RANDOM.nextBytes(bytes);
        return ProcessHandle.current().pid() + "-" + HexFormat.of().formatHex(bytes);
    }

    protected static String str(int value) {
        return Integer.toString(value);
    }
}
