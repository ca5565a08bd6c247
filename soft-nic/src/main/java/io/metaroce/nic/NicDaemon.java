package io.metaroce.nic;

import io.metaroce.control.LocalControlPaths;
import io.metaroce.control.AdminServer;
import io.metaroce.control.LocalControlServer;
import io.metaroce.nic.admin.DaemonAdmin;
import io.metaroce.nic.admin.MetricsEndpoint;
import java.net.InetSocketAddress;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.engine.EngineRunner;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.UdpPort;
import io.metaroce.nic.port.xdp.AfXdpPort;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.transport.Datapath;
import io.metaroce.nic.transport.Wire;
import io.metaroce.nic.verbs.Limits;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.verbs.NetInfo;
import io.metaroce.nic.verbs.UserQuota;
import io.metaroce.nic.verbs.VerbsService;
import io.metaroce.nic.verbs.CmBridge;
import io.metaroce.control.cm.CmAuth;
import io.metaroce.control.cm.ConnectionManager;
import io.metaroce.control.cm.ServiceTable;
import io.metaroce.nic.engine.StatsWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * mrce-nicd: the soft-NIC daemon serving device mrce0 on one netdev, or one device per netdev with
 * {@code --device NAME=IF} (docs/multi-nic.md): each device has its own port, engine thread,
 * verbs service, control and admin sockets, and metrics endpoint.
 */
@Command(name = "mrce-nicd", mixinStandardHelpOptions = true,
        description = "MetaRoCE soft-NIC daemon: serves verbs device mrce0 on one network interface"
                + " (--ifname), or one device per interface (--device NAME=IF, repeated).")
public final class NicDaemon implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(NicDaemon.class);
    private static final int RX_TX_BATCH = 32;
    /** Key slots above max_mr: REREG_MR takes new keys before it frees the old ones. */
    private static final int REREG_SPARE_KEYS = 64;
    /**
     * Per-path RTO floor on the real port. Measured on two daemons sharing 2 cores (IntegrityIT,
     * EcmpPingPongIT): min RTT about 0.2 ms, smoothed RTT 1 to 2 ms with a variance of the same
     * order, and scheduling stalls of several ms; with a 0.2 ms floor healthy paths timed out by
     * the hundred per run.
     */
    static final long DEFAULT_RTO_MIN_US = 10_000;
    static final long DEFAULT_CC_SLACK_US = 1_000;

    @Option(names = "--ifname", description = "network interface to serve as device mrce0")
    String ifname;

    @Option(names = "--device", paramLabel = "NAME=IF",
            description = "serve interface IF as verbs device NAME (e.g. mrce1=eth1); repeat for each"
                    + " interface; instead of --ifname")
    List<String> deviceSpecs;

    /** One device this daemon serves: its verbs name and its interface. */
    record Device(String name, String ifname) {}

    /** What {@link #call()} made of --ifname / --device. */
    List<Device> devices = List.of();

    @Option(names = "--threading", defaultValue = "auto",
            description = "with several devices: shared (one engine thread runs them all), dedicated (a thread"
                    + " each) or auto (default: dedicated when the machine has 4 cores per device, else shared)")
    String threading;

    /** The shared engine thread (--threading shared with several devices), else null. */
    private io.metaroce.nic.engine.SharedEngineRunner sharedRunner;

    @Option(names = "--port", defaultValue = "udp",
            description = "packet I/O: udp (default), xdp (AF_XDP, SKB mode; root) or xdp-native (driver mode)")
    String portKind;

    @Option(names = "--udp-port", defaultValue = "4793", description = "data UDP port (default 4793)")
    int udpPort;

    @Option(names = "--addr", description = "IPv4 address to serve instead of the interface's")
    String addr;

    @Option(names = "--sock", description = "control socket (default /tmp/metaroce/nicd-<netns inode>.sock)")
    Path sock;

    @Option(names = "--sock-mode", defaultValue = "0666",
            description = "who may use the daemon: the control socket's mode, octal (default 0666: every local user; 0660 with --sock-group: that group)")
    String sockMode;

    @Option(names = "--sock-group", description = "the control socket's group (default: the daemon's)")
    String sockGroup;

    @Option(names = "--user-max-qp", defaultValue = "0", description = "QPs one user may hold (0: no limit)")
    long userMaxQp;

    @Option(names = "--user-max-mr", defaultValue = "0", description = "MRs one user may hold (0: no limit)")
    long userMaxMr;

    @Option(names = "--user-max-mr-bytes", defaultValue = "0",
            description = "bytes one user may register (0: no limit)")
    long userMaxMrBytes;

    @Option(names = "--user-max-cqe", defaultValue = "0",
            description = "CQ entries one user may hold (0: no limit)")
    long userMaxCqe;

    @Option(names = "--user-max-conn", defaultValue = "0",
            description = "control connections (verbs contexts) one user may hold open (0: no limit); each carries"
                    + " at most 64 outstanding rdma_cm-style connects")
    long userMaxConn;

    @Option(names = "--user-max-pd", defaultValue = "0", description = "PDs one user may hold (0: no limit)")
    long userMaxPd;

    @Option(names = "--user-max-cq", defaultValue = "0", description = "CQs one user may hold (0: no limit)")
    long userMaxCq;

    @Option(names = "--user-max-srq", defaultValue = "0", description = "SRQs one user may hold (0: no limit)")
    long userMaxSrq;

    /** --sock-mode as a permission string, checked in {@link #call()}. */
    private String socketPerms;

    @Option(names = "--transport", defaultValue = "metaroce",
            description = "metaroce (multipath, default) or baseline (one path, go-back-N: classic RoCE)")
    String transport;

    @Option(names = "--paths", defaultValue = "" + Datapath.DEFAULT_PATHS,
            description = "paths per RC QP, 1..256 (default " + Datapath.DEFAULT_PATHS + ": all links of a 4-link ECMP fabric in use with probability 0.999996, of an 8-link one 0.987)")
    int paths;

    @Option(names = "--entropy-ports", defaultValue = "64",
            description = "send sockets on the ports above --udp-port, one per entropy class (default 64; 0: send from the data port)")
    int entropyPorts;

    @Option(names = "--rto-min-us", defaultValue = "" + DEFAULT_RTO_MIN_US,
            description = "smallest per-path retransmission timeout in microseconds (default "
                    + DEFAULT_RTO_MIN_US + "; below a few ms, scheduling stalls read as dead paths)")
    long rtoMinUs;

    @Option(names = "--tlp-min-us",
            description = "smallest tail-loss probe timeout in microseconds, up to --rto-min-us (default: half"
                    + " of --rto-min-us; shorter, scheduling stalls send duplicate probes on every path)")
    Long tlpMinUs;

    @Option(names = "--cc-slack-us", defaultValue = "" + DEFAULT_CC_SLACK_US,
            description = "smallest slack of the congestion delay target above the path's min RTT, in microseconds"
                    + " (default " + DEFAULT_CC_SLACK_US + "; shorter, scheduling noise reads as queueing)")
    long ccSlackUs;

    @Option(names = "--stats", description = "write a JSON snapshot of QP and path telemetry here every second and at exit")
    Path stats;

    @Option(names = "--cm-port", defaultValue = "4792",
            description = "connection manager TCP port, the same on every daemon (default 4792; 0 turns the manager"
                    + " and connection tokens off)")
    int cmPort;

    @Option(names = "--cm-secret-file", paramLabel = "PATH",
            description = "cluster secret shared by every daemon (16..4096 bytes, owned by root, mode 0600): peer"
                    + " daemons must prove it (HMAC-SHA256) before the connection manager reads anything else, and"
                    + " tokens cross the wire masked with it; without it the manager is not authenticated")
    Path cmSecretFile;

    /** The secret read from --cm-secret-file, checked before anything starts. */
    private byte[] cmSecret;

    @Option(names = "--cm-heartbeat-ms", defaultValue = "500", description = "keepalive interval to peer daemons (default 500)")
    int cmHeartbeatMs;

    @Option(names = "--cm-peer-timeout-ms", defaultValue = "3000",
            description = "a peer daemon silent this long is lost and its QPs fail (default 3000)")
    int cmPeerTimeoutMs;

    @Option(names = "--cm-connect-timeout-ms", defaultValue = "10000",
            description = "a QP whose peer does not answer the handshake this long fails (default 10000)")
    int cmConnectTimeoutMs;

    @Option(names = "--cm-disconnect-grace-ms", defaultValue = "1000",
            description = "a QP whose peer QP was destroyed fails this long after (default 1000)")
    int cmDisconnectGraceMs;

    @Option(names = "--metrics-port",
            description = "serve Prometheus metrics on this TCP port (off by default; 0 picks a free port)")
    Integer metricsPort;

    @Option(names = "--metrics-addr", defaultValue = "127.0.0.1",
            description = "address the metrics endpoint binds (default 127.0.0.1)")
    String metricsAddr;

    /**
     * Idle strategy defaults, measured on a 2-core VM with two daemons and two polling
     * applications (docs/benchmarks.md, bench/e2e/run-e2e): spinning 100 and yielding 100 idle
     * cycles before sleeping doubled the 64-byte round trip (238-276 us against 99-142 us) and
     * halved the 1 MiB ping-pong, since spinners take the cores that the peer processes need and
     * a yield storm costs context switches; a thread woken from epoll is scheduled promptly.
     * With a core of its own, a daemon gains from spinning longer.
     */
    @Option(names = "--idle-spins", defaultValue = "20",
            description = "idle duty cycles spent spinning before sleeping (default 20; more with a dedicated core)")
    int idleSpins;

    @Option(names = "--idle-yields", defaultValue = "0",
            description = "then idle cycles yielding the CPU (sched_yield), before sleeping in epoll (default 0)")
    int idleYields;

    public static void main(String[] args) {
        System.exit(new CommandLine(new NicDaemon()).execute(args));
    }

    /** "0660" as "rw-rw----"; only the rw bits of user, group and others. */
    static String socketPermissions(String octal) {
        int mode;
        try {
            mode = Integer.parseInt(octal, 8);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--sock-mode " + octal + ": not an octal mode");
        }
        if ((mode & ~0666) != 0) {
            throw new IllegalArgumentException("--sock-mode " + octal + ": only read/write bits (e.g. 0660)");
        }
        StringBuilder sb = new StringBuilder();
        for (int shift = 6; shift >= 0; shift -= 3) {
            sb.append((mode >> shift & 4) != 0 ? 'r' : '-').append((mode >> shift & 2) != 0 ? 'w' : '-').append('-');
        }
        return sb.toString();
    }

    /**
     * --ifname IF (device mrce0) or --device NAME=IF ...: names of 1 to 15 letters, digits or '_'
     * (ibv_device's name as the provider copies it), no name or interface twice.
     */
    static List<Device> parseDevices(String ifname, List<String> specs) {
        boolean hasSpecs = specs != null && !specs.isEmpty();
        if (ifname != null && hasSpecs) {
            throw new IllegalArgumentException("give --ifname IF or --device NAME=IF, not both");
        }
        if (ifname != null) {
            return List.of(new Device(VerbsService.DEV_NAME, ifname));
        }
        if (!hasSpecs) {
            throw new IllegalArgumentException("give the interface to serve: --ifname IF or --device NAME=IF");
        }
        List<Device> out = new ArrayList<>();
        Set<String> names = new HashSet<>();
        Set<String> ifs = new HashSet<>();
        for (String spec : specs) {
            int eq = spec.indexOf('=');
            String name = eq < 0 ? "" : spec.substring(0, eq);
            String dev = eq < 0 ? "" : spec.substring(eq + 1);
            if (!name.matches("[A-Za-z0-9_]{1,15}") || dev.isEmpty() || dev.length() > 15 || dev.contains("/")) {
                throw new IllegalArgumentException("--device " + spec
                        + ": expected NAME=IF, NAME 1..15 letters, digits or '_', IF an interface name");
            }
            if (!names.add(name)) {
                throw new IllegalArgumentException("--device " + spec + ": device " + name + " named twice");
            }
            if (!ifs.add(dev)) {
                throw new IllegalArgumentException("--device " + spec + ": interface " + dev + " served twice");
            }
            out.add(new Device(name, dev));
        }
        return List.copyOf(out);
    }

    @Override
    public Integer call() throws Exception {
        try {
            devices = parseDevices(ifname, deviceSpecs);
        } catch (IllegalArgumentException e) {
            System.err.println("mrce-nicd: " + e.getMessage());
            return 2;
        }
        if (!"auto".equals(threading) && !"shared".equals(threading) && !"dedicated".equals(threading)) {
            System.err.println("mrce-nicd: unknown --threading " + threading + " (auto, shared or dedicated)");
            return 2;
        }
        if (devices.size() > 1 && (sock != null || addr != null)) {
            System.err.println("mrce-nicd: --sock and --addr name one device's socket and address;"
                    + " with several --device each takes its default");
            return 2;
        }
        if (devices.size() > 1 && metricsPort != null && metricsPort != 0
                && metricsPort + devices.size() - 1 > 65535) {
            System.err.println("mrce-nicd: --metrics-port: device i serves on --metrics-port + i; too high");
            return 2;
        }
        if (!"udp".equals(portKind) && !"xdp".equals(portKind) && !"xdp-native".equals(portKind)) {
            System.err.println("mrce-nicd: unknown --port " + portKind + " (udp, xdp or xdp-native)");
            return 2;
        }
        if (udpPort < 1 || udpPort > 65535) {
            System.err.println("mrce-nicd: --udp-port must be 1..65535");
            return 2;
        }
        if (paths < 1 || paths > 256) {
            System.err.println("mrce-nicd: --paths must be 1..256");
            return 2;
        }
        if (!"metaroce".equals(transport) && !"baseline".equals(transport)) {
            System.err.println("mrce-nicd: unknown --transport " + transport + " (metaroce or baseline)");
            return 2;
        }
        if (userMaxQp < 0 || userMaxMr < 0 || userMaxMrBytes < 0 || userMaxCqe < 0 || userMaxConn < 0 || userMaxPd < 0
                || userMaxCq < 0 || userMaxSrq < 0) {
            System.err.println("mrce-nicd: --user-max-* must be 0 (no limit) or more");
            return 2;
        }
        try {
            socketPerms = socketPermissions(sockMode);
        } catch (IllegalArgumentException e) {
            System.err.println("mrce-nicd: " + e.getMessage());
            return 2;
        }
        if (rtoMinUs < 1 || rtoMinUs > 100_000) {
            System.err.println("mrce-nicd: --rto-min-us must be 1..100000");
            return 2;
        }
        if (tlpMinUs == null) {
            tlpMinUs = Math.max(1, rtoMinUs / 2);
        }
        if (tlpMinUs < 1 || tlpMinUs > rtoMinUs) {
            System.err.println("mrce-nicd: --tlp-min-us must be 1..--rto-min-us");
            return 2;
        }
        if (ccSlackUs < 1 || ccSlackUs > 100_000) {
            System.err.println("mrce-nicd: --cc-slack-us must be 1..100000");
            return 2;
        }
        if (cmPort < 0 || cmPort > 65535 || cmHeartbeatMs < 1 || cmHeartbeatMs > 65535
                || cmPeerTimeoutMs < 2 * cmHeartbeatMs || cmConnectTimeoutMs < 1 || cmDisconnectGraceMs < 0) {
            System.err.println("mrce-nicd: --cm-port must be 0..65535, --cm-heartbeat-ms 1..65535,"
                    + " --cm-peer-timeout-ms at least two heartbeats, --cm-connect-timeout-ms at least 1");
            return 2;
        }
        if (cmSecretFile != null) {
            if (cmPort == 0) {
                System.err.println("mrce-nicd: --cm-secret-file needs the connection manager (--cm-port is 0)");
                return 2;
            }
            try {
                cmSecret = CmAuth.loadSecret(cmSecretFile);
            } catch (java.io.IOException e) {
                System.err.println("mrce-nicd: --cm-secret-file: " + e.getMessage());
                return 2;
            }
        }
                if (metricsPort != null && (metricsPort < 0 || metricsPort > 65535)) {
            System.err.println("mrce-nicd: --metrics-port must be 0..65535");
            return 2;
        }
        if (entropyPorts < 0 || entropyPorts > 1024 || udpPort + entropyPorts > 65535) {
            System.err.println("mrce-nicd: --entropy-ports must be 0..1024 and fit above --udp-port");
            return 2;
        }
        try {
            return serve();
        } catch (java.io.IOException | IllegalArgumentException e) {
            // What the operator must fix (missing interface, port in use, bad address): no trace.
            System.err.println("mrce-nicd: " + e.getMessage());
            return 1;
        }
    }

    private int serve() throws Exception {
        CountDownLatch stop = new CountDownLatch(1);
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), sig -> stop.countDown());
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> stop.countDown());
        if (devices.size() == 1) {
            return serve(devices.get(0), 0, stop);
        }
        // Several devices: one thread each, all stopped together; one that fails stops the rest.
        boolean shared = "shared".equals(threading) || ("auto".equals(threading)
                && Runtime.getRuntime().availableProcessors() < 4 * devices.size());
        if (shared) {
            sharedRunner = new io.metaroce.nic.engine.SharedEngineRunner(idleSpins, idleYields);
            sharedRunner.start();
        }
        LOG.info("{} devices, {}", devices.size(), shared ? "one shared engine thread" : "dedicated engine threads");
        try {
            return serveAll(stop);
        } finally {
            if (sharedRunner != null) {
                sharedRunner.close();
                LOG.info("{}", sharedRunner.summary());
            }
        }
    }

    private int serveAll(CountDownLatch stop) throws Exception {
        List<Thread> threads = new ArrayList<>();
        List<Exception> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < devices.size(); i++) {
            Device d = devices.get(i);
            int index = i;
            threads.add(Thread.ofPlatform().name("mrce-dev-" + d.name()).start(() -> {
                try {
                    serve(d, index, stop);
                } catch (Exception e) {
                    failures.add(new java.io.IOException(d.name() + " (" + d.ifname() + "): " + e.getMessage(), e));
                } finally {
                    stop.countDown();
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw failures.get(0);
        }
        return 0;
    }

    /** Serves one device until STOP; device INDEX (0..) offsets the metrics port. */
    private int serve(Device device, int index, CountDownLatch stop) throws Exception {
        NetInfo net = NetInfo.of(device.ifname(), addr == null ? 0 : Inet4.parse(addr));
        Path socketPath = sock != null ? sock : LocalControlPaths.socketPathFor(device.name());
        Integer devMetricsPort = metricsPort;
        if (metricsPort != null && metricsPort != 0) {
            devMetricsPort = Integer.valueOf(metricsPort + index);
        }
        Limits limits = Limits.defaults();

        try (Port port = "udp".equals(portKind)
                        ? new UdpPort(net.ipv4(), udpPort, Wire.frameBytes(net.mtu()), RX_TX_BATCH, entropyPorts)
                        : AfXdpPort.open(net.ifname(), net.ipv4(), udpPort, entropyPorts,
                                Wire.frameBytes(net.mtu()), RX_TX_BATCH,
                                "xdp".equals(portKind) ? AfXdpPort.Mode.SKB : AfXdpPort.Mode.NATIVE);
                EngineAgent engine = new EngineAgent(port, new MrTable(limits.maxMr() + REREG_SPARE_KEYS))) {
            engine.datapath().paths = paths;
            engine.datapath().entropyPorts = Math.max(1, entropyPorts);
            engine.datapath().baseline = "baseline".equals(transport);
            engine.datapath().rtoMinNs = rtoMinUs * 1000;
            engine.datapath().rtoInitialNs = Math.max(engine.datapath().rtoInitialNs, 2 * rtoMinUs * 1000);
            engine.datapath().tlpMinNs = tlpMinUs * 1000;
            engine.datapath().ccSlackMinNs = ccSlackUs * 1000;
            CmBridge cm = cmPort == 0 ? null : CmBridge.start(engine, net.ipv4(),
                    new ConnectionManager.Config(cmPort, cmHeartbeatMs, cmPeerTimeoutMs, cmConnectTimeoutMs),
                    cmDisconnectGraceMs, cmSecret);
            VerbsService verbs = new VerbsService(engine, engineMrs(engine), net, udpPort, limits);
            verbs.devName(device.name());
            verbs.userQuota(new UserQuota(userMaxQp, userMaxMr, userMaxMrBytes, userMaxCqe, userMaxConn, userMaxPd,
                    userMaxCq, userMaxSrq));
            ServiceTable services = cm == null ? null : new ServiceTable(cm.manager(), cmConnectTimeoutMs);
            if (services != null) {
                cm.manager().serviceHandler(services);
                verbs.services(services);
            }
            EngineRunner runner = sharedRunner != null ? null : new EngineRunner(engine, idleSpins, idleYields);
            if (runner != null) {
                runner.start();
            } else {
                sharedRunner.add(engine);
            }
            DaemonAdmin admin = new DaemonAdmin(engine, verbs, net, portKind, udpPort, socketPath, transport,
                    "baseline".equals(transport) ? 1 : paths);
            try (LocalControlServer server = LocalControlServer.bind(socketPath, verbs, socketPerms, sockGroup);
                    AdminServer adminServer = AdminServer.bind(LocalControlPaths.adminSocketPathFor(socketPath), admin);
                    MetricsEndpoint metrics = devMetricsPort == null ? null
                            : new MetricsEndpoint(new InetSocketAddress(metricsAddr, devMetricsPort), admin::stats)) {
                String conformanceBreak = io.metaroce.nic.transport.ConformanceBreak.describe();
                if (conformanceBreak != null) {
                    LOG.warn(conformanceBreak);
                }
                LOG.info("mrce-nicd ready: {} on {} ({}) udp port {}, control socket {}",
                        device.name(), net.ifname(), io.metaroce.abi.IpAddr.toString(net.ipv4()), udpPort,
                        socketPath);
                LOG.info("connection manager: {}", cm == null ? "off (--cm-port 0): no connection tokens"
                        : "tcp port " + cmPort + ", heartbeat " + cmHeartbeatMs + " ms, peer timeout " + cmPeerTimeoutMs
                                + " ms, " + (cmSecret == null ? "NOT authenticated (no --cm-secret-file)"
                                        : "peers authenticated with the cluster secret " + cmSecretFile));
                LOG.info("transport {}, {} paths per QP, {} entropy ports, rto min {} us, tlp min {} us,"
                        + " cc slack {} us", transport, "baseline".equals(transport) ? 1 : paths, entropyPorts,
                        rtoMinUs, tlpMinUs, ccSlackUs);
                // Several devices: each writes its own file, NAME-<file> beside --stats.
                Path statsPath = stats == null || devices.size() == 1 ? stats
                        : stats.resolveSibling(device.name() + "-" + stats.getFileName());
                StatsWriter statsWriter = statsPath == null ? null : new StatsWriter(engine, statsPath);
                try {
                    while (!stop.await(1, java.util.concurrent.TimeUnit.SECONDS)) {
                        if (statsWriter != null) {
                            statsWriter.write();
                        }
                        verbs.linkChanged(NetInfo.carrier(net.ifname()));
                    }
                    if (statsWriter != null) {
                        statsWriter.write();
                    }
                } finally {
                    if (statsWriter != null) {
                        statsWriter.close();
                    }
                }
                LOG.info("mrce-nicd stopping {}", device.name());
            } finally {
                verbs.close();
                if (runner != null) {
                    runner.close();
                } else {
                    sharedRunner.remove(engine);
                }
                if (cm != null) {
                    cm.close();
                }
                if (services != null) {
                    services.close();
                }
                LOG.info("port: {}; transport: {}", port.counters(), engine.datapath().counters);
                if (runner != null) {
                    LOG.info("engine duty cycle: {}", runner.summary());
                }
            }
        }
        return 0;
    }

    private static MrTable engineMrs(EngineAgent engine) {
        return engine.datapath().mrs;
    }
}
