package io.metaroce.nic;

import io.metaroce.control.AdminServer;
import io.metaroce.control.LocalControlPaths;
import io.metaroce.control.LocalControlServer;
import io.metaroce.control.cm.CmAuth;
import io.metaroce.control.cm.ServiceTable;
import io.metaroce.nic.admin.DaemonAdmin;
import io.metaroce.nic.admin.MetricsEndpoint;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.engine.EngineRunner;
import io.metaroce.nic.engine.StatsWriter;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.port.PlanePort;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.UdpPort;
import io.metaroce.nic.port.xdp.AfXdpPort;
import io.metaroce.nic.transport.RcRequester;
import io.metaroce.nic.transport.TransportSettings;
import io.metaroce.nic.transport.Wire;
import io.metaroce.nic.verbs.CmBridge;
import io.metaroce.nic.verbs.Limits;
import io.metaroce.nic.verbs.NetInfo;
import io.metaroce.nic.verbs.UserQuota;
import io.metaroce.nic.verbs.VerbsService;
import java.net.InetSocketAddress;
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
@Command(
        name = "mrce-nicd",
        mixinStandardHelpOptions = true,
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

    @Option(
            names = "--device",
            paramLabel = "NAME=IF",
            description = "serve interface IF as verbs device NAME (e.g. mrce1=eth1); repeat for each"
                    + " interface; instead of --ifname. NAME=IF0+IF1.. serves one multi-plane device whose"
                    + " QPs spray over every IF (docs/multi-nic.md)")
    List<String> deviceSpecs;

    /**
     * One device this daemon serves: its verbs name and its interface; {@code planes} are the
     * interfaces its QPs send over, {@code ifname} first (more than one: a multi-plane device).
     */
    record Device(String name, String ifname, List<String> planes) {
        Device(String name, String ifname) {
            this(name, ifname, List.of(ifname));
        }
    }

    @Option(
            names = "--threading",
            defaultValue = "auto",
            description = "with several devices: shared (one engine thread runs them all), dedicated (a thread"
                    + " each) or auto (default: dedicated when the machine has 4 cores per device, else shared)")
    DaemonConfig.Threading threading;

    @Option(
            names = "--port",
            defaultValue = "udp",
            description = "packet I/O: udp (default), xdp (AF_XDP, SKB mode; root) or xdp-native (driver mode)")
    DaemonConfig.PortKind portKind;

    @Range(min = 1, max = 65535)
    @Option(names = "--udp-port", defaultValue = "4793", description = "data UDP port (default 4793)")
    int udpPort;

    @Option(
            names = "--udp-offload",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "the udp port hands the kernel each path's run of packets as one GSO buffer and reads"
                    + " coalesced datagrams (UDP_GRO); --no-udp-offload: one datagram per system call (default on)")
    boolean udpOffload;

    @Option(names = "--addr", description = "IPv4 or IPv6 address to serve instead of the interface's")
    String addr;

    @Option(names = "--sock", description = "control socket (default /tmp/metaroce/nicd-<netns inode>.sock)")
    Path sock;

    @Option(
            names = "--sock-mode",
            defaultValue = "0666",
            description =
                    "who may use the daemon: the control socket's mode, octal (default 0666: every local user; 0660 with --sock-group: that group)")
    String sockMode;

    @Option(names = "--sock-group", description = "the control socket's group (default: the daemon's)")
    String sockGroup;

    @Range(min = 0)
    @Option(names = "--user-max-qp", defaultValue = "0", description = "QPs one user may hold (0: no limit)")
    long userMaxQp;

    @Range(min = 0)
    @Option(names = "--user-max-mr", defaultValue = "0", description = "MRs one user may hold (0: no limit)")
    long userMaxMr;

    @Range(min = 0)
    @Option(
            names = "--user-max-mr-bytes",
            defaultValue = "0",
            description = "bytes one user may register (0: no limit)")
    long userMaxMrBytes;

    @Range(min = 0)
    @Option(names = "--user-max-cqe", defaultValue = "0", description = "CQ entries one user may hold (0: no limit)")
    long userMaxCqe;

    @Range(min = 0)
    @Option(
            names = "--user-max-conn",
            defaultValue = "0",
            description = "control connections (verbs contexts) one user may hold open (0: no limit); each carries"
                    + " at most 64 outstanding rdma_cm-style connects")
    long userMaxConn;

    @Range(min = 0)
    @Option(names = "--user-max-pd", defaultValue = "0", description = "PDs one user may hold (0: no limit)")
    long userMaxPd;

    @Range(min = 0)
    @Option(names = "--user-max-cq", defaultValue = "0", description = "CQs one user may hold (0: no limit)")
    long userMaxCq;

    @Range(min = 0)
    @Option(names = "--user-max-srq", defaultValue = "0", description = "SRQs one user may hold (0: no limit)")
    long userMaxSrq;

    @Option(
            names = "--transport",
            defaultValue = "metaroce",
            description = "metaroce (multipath, default) or baseline (one path, go-back-N: classic RoCE)")
    DaemonConfig.TransportKind transport;

    @Range(min = 1, max = RcRequester.MAX_PATHS)
    @Option(
            names = "--paths",
            defaultValue = "" + TransportSettings.DEFAULT_PATHS,
            description =
                    "paths per RC QP, 1.." + RcRequester.MAX_PATHS + " (default " + TransportSettings.DEFAULT_PATHS
                            + ": all links of a 4-link ECMP fabric in use with probability 0.999996, of an 8-link one 0.987)")
    int paths;

    @Range(min = 0, max = 1024)
    @Option(
            names = "--entropy-ports",
            defaultValue = "64",
            description =
                    "send sockets on the ports above --udp-port, one per entropy class (default 64; 0: send from the data port)")
    int entropyPorts;

    @Range(min = 1, max = 100_000)
    @Option(
            names = "--rto-min-us",
            defaultValue = "" + DEFAULT_RTO_MIN_US,
            description = "smallest per-path retransmission timeout in microseconds (default " + DEFAULT_RTO_MIN_US
                    + "; below a few ms, scheduling stalls read as dead paths)")
    long rtoMinUs;

    @Range(min = 1, max = 100_000)
    @Option(
            names = "--tlp-min-us",
            description = "smallest tail-loss probe timeout in microseconds, up to --rto-min-us (default: half"
                    + " of --rto-min-us; shorter, scheduling stalls send duplicate probes on every path)")
    Long tlpMinUs;

    @Range(min = 1, max = 100_000)
    @Option(
            names = "--cc-slack-us",
            defaultValue = "" + DEFAULT_CC_SLACK_US,
            description = "smallest slack of the congestion delay target above the path's min RTT, in microseconds"
                    + " (default " + DEFAULT_CC_SLACK_US + "; shorter, scheduling noise reads as queueing)")
    long ccSlackUs;

    @Range(min = 1, max = TransportSettings.QP_WINDOW_GAIN_MAX)
    @Option(
            names = "--qp-window-gain",
            defaultValue = "" + TransportSettings.QP_WINDOW_GAIN,
            description = "a QP's window in bandwidth-delay products of its paths (default "
                    + TransportSettings.QP_WINDOW_GAIN
                    + "; 4 keeps a QP sending through random loss on a deep-buffered fabric, with twice the"
                    + " packets in flight: docs/spec/transport.md 10a)")
    int qpWindowGain;

    @Option(
            names = "--stats",
            description = "write a JSON snapshot of QP and path telemetry here every second and at exit")
    Path stats;

    @Range(min = 0, max = 65535)
    @Option(
            names = "--cm-port",
            defaultValue = "4792",
            description = "connection manager TCP port, the same on every daemon (default 4792; 0 turns the manager"
                    + " and connection tokens off)")
    int cmPort;

    @Option(
            names = "--cm-secret-file",
            paramLabel = "PATH",
            description = "cluster secret shared by every daemon (16..4096 bytes, owned by root, mode 0600): peer"
                    + " daemons must prove it (HMAC-SHA256) before the connection manager reads anything else, and"
                    + " tokens cross the wire masked with it; without it the manager is not authenticated")
    Path cmSecretFile;

    @Range(min = 1, max = 65535)
    @Option(
            names = "--cm-heartbeat-ms",
            defaultValue = "500",
            description = "keepalive interval to peer daemons (default 500)")
    int cmHeartbeatMs;

    @Range(min = 2)
    @Option(
            names = "--cm-peer-timeout-ms",
            defaultValue = "3000",
            description = "a peer daemon silent this long is lost and its QPs fail (default 3000)")
    int cmPeerTimeoutMs;

    @Range(min = 1)
    @Option(
            names = "--cm-connect-timeout-ms",
            defaultValue = "10000",
            description = "a QP whose peer does not answer the handshake this long fails (default 10000)")
    int cmConnectTimeoutMs;

    @Range(min = 0)
    @Option(
            names = "--cm-disconnect-grace-ms",
            defaultValue = "1000",
            description = "a QP whose peer QP was destroyed fails this long after (default 1000)")
    int cmDisconnectGraceMs;

    @Range(min = 0, max = 65535)
    @Option(
            names = "--metrics-port",
            description = "serve Prometheus metrics on this TCP port (off by default; 0 picks a free port)")
    Integer metricsPort;

    @Option(
            names = "--metrics-addr",
            defaultValue = "127.0.0.1",
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
    @Option(
            names = "--idle-strategy",
            defaultValue = "backoff",
            description = "what an idle engine thread does: backoff (default: --idle-spins, then --idle-yields, then"
                    + " sleep in epoll until a doorbell, a frame or a timer), busy-spin (never sleeps: a core of its own)"
                    + " or yield (never sleeps, yields the CPU)")
    DaemonConfig.IdleKind idleStrategy;

    @Range(min = 0)
    @Option(
            names = "--idle-spins",
            defaultValue = "20",
            description = "idle duty cycles spent spinning before sleeping (default 20; more with a dedicated core)")
    int idleSpins;

    @Range(min = 0)
    @Option(
            names = "--idle-yields",
            defaultValue = "0",
            description = "then idle cycles yielding the CPU (sched_yield), before sleeping in epoll (default 0)")
    int idleYields;

    @Option(
            names = "--warmup",
            description = "before reporting ready, warm the data path (an in-memory exchange through the engine"
                    + " that lets the JIT compile it; 3 to 7 s more start-up on a busy 2-core machine, bounded at"
                    + " 10 s; off by default: on a quiet machine it gained nothing, docs/architecture.md)")
    boolean warmup;

    @Option(
            names = "--exit-when-ready",
            description = "stop right after reporting ready (the AOT cache's training run, bin/mrce-nicd-aot)")
    boolean exitWhenReady;

    public static void main(String[] args) {
        System.exit(
                DaemonConfig.withNamedValues(new CommandLine(new NicDaemon())).execute(args));
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
            sb.append((mode >> shift & 4) != 0 ? 'r' : '-')
                    .append((mode >> shift & 2) != 0 ? 'w' : '-')
                    .append('-');
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
            List<String> planes = List.of((eq < 0 ? "" : spec.substring(eq + 1)).split("\\+", -1));
            if (!name.matches("[A-Za-z0-9_]{1,15}")
                    || planes.size() > MAX_PLANES
                    || planes.stream().anyMatch(dev -> dev.isEmpty() || dev.length() > 15 || dev.contains("/"))) {
                throw new IllegalArgumentException("--device " + spec
                        + ": expected NAME=IF or NAME=IF0+IF1.. (at most " + MAX_PLANES
                        + " planes), NAME 1..15 letters, digits or '_', IF an interface name");
            }
            if (!names.add(name)) {
                throw new IllegalArgumentException("--device " + spec + ": device " + name + " named twice");
            }
            for (String dev : planes) {
                if (!ifs.add(dev)) {
                    throw new IllegalArgumentException("--device " + spec + ": interface " + dev + " served twice");
                }
            }
            out.add(new Device(name, planes.get(0), planes));
        }
        return List.copyOf(out);
    }

    @Override
    public Integer call() throws Exception {
        DaemonConfig config;
        try {
            config = config();
        } catch (IllegalArgumentException e) {
            System.err.println("mrce-nicd: " + e.getMessage());
            return 2;
        }
        try {
            return serve(config);
        } catch (java.io.IOException | IllegalArgumentException e) {
            // What the operator must fix (missing interface, port in use, bad address): no trace.
            System.err.println("mrce-nicd: " + e.getMessage());
            return 1;
        }
    }

    /**
     * The options as one checked, immutable configuration: the ranges declared on the options
     * ({@link Range}), then what relates options to each other; reads --cm-secret-file.
     */
    DaemonConfig config() {
        List<Device> devices = parseDevices(ifname, deviceSpecs);
        Range.Checker.check(this);
        if (devices.size() > 1 && (sock != null || addr != null)) {
            throw new IllegalArgumentException("--sock and --addr name one device's socket and address;"
                    + " with several --device each takes its default");
        }
        if (addr != null) {
            parseAddr(addr);
        }
        if (devices.size() > 1 && metricsPort != null && metricsPort != 0 && metricsPort + devices.size() - 1 > 65535) {
            throw new IllegalArgumentException("--metrics-port: device i serves on --metrics-port + i; too high");
        }
        String socketPerms = socketPermissions(sockMode);
        long tlpUs = tlpMinUs != null ? tlpMinUs : Math.max(1, rtoMinUs / 2);
        if (tlpUs > rtoMinUs) {
            throw new IllegalArgumentException("--tlp-min-us must be 1..--rto-min-us");
        }
        if (cmPeerTimeoutMs < 2 * cmHeartbeatMs) {
            throw new IllegalArgumentException(
                    "--cm-peer-timeout-ms must be at least two heartbeats (--cm-heartbeat-ms)");
        }
        if (udpPort + entropyPorts > 65535) {
            throw new IllegalArgumentException("--entropy-ports must be 0..1024 and fit above --udp-port");
        }
        byte[] cmSecret = null;
        if (cmSecretFile != null) {
            if (cmPort == 0) {
                throw new IllegalArgumentException("--cm-secret-file needs the connection manager (--cm-port is 0)");
            }
            try {
                cmSecret = CmAuth.loadSecret(cmSecretFile);
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("--cm-secret-file: " + e.getMessage());
            }
        }
        TransportSettings transportSettings = TransportSettings.forRealPort(
                        paths,
                        entropyPorts,
                        transport == DaemonConfig.TransportKind.BASELINE,
                        rtoMinUs * 1000,
                        tlpUs * 1000,
                        ccSlackUs * 1000)
                .withQpWindowGain(qpWindowGain);
        return new DaemonConfig(
                devices,
                threading,
                portKind,
                udpPort,
                entropyPorts,
                udpOffload,
                addr,
                sock,
                socketPerms,
                sockGroup,
                new UserQuota(
                        userMaxQp,
                        userMaxMr,
                        userMaxMrBytes,
                        userMaxCqe,
                        userMaxConn,
                        userMaxPd,
                        userMaxCq,
                        userMaxSrq),
                transportSettings,
                new DaemonConfig.Cm(
                        cmPort,
                        cmHeartbeatMs,
                        cmPeerTimeoutMs,
                        cmConnectTimeoutMs,
                        cmDisconnectGraceMs,
                        cmSecretFile,
                        cmSecret),
                new DaemonConfig.Idle(idleStrategy, idleSpins, idleYields),
                metricsPort,
                metricsAddr,
                stats);
    }

    private int serve(DaemonConfig config) throws Exception {
        CountDownLatch stop = new CountDownLatch(1);
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), sig -> stop.countDown());
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> stop.countDown());
        io.metaroce.nic.warmup.StableClasses.load();
        if (!warmup) {
            io.metaroce.nic.warmup.Warmup.skip();
        }
        String aot = io.metaroce.nic.warmup.AotCache.current().describe();
        if (aot != null) {
            LOG.info(aot);
        }
        Runnable onReady = exitWhenReady ? stop::countDown : () -> {};
        List<Device> devices = config.devices();
        if (devices.size() == 1) {
            return serve(config, devices.get(0), 0, null, stop, onReady);
        }
        // Several devices: one thread each, all stopped together; one that fails stops the rest.
        boolean shared = config.sharedEngineThread();
        LOG.info("{} devices, {}", devices.size(), shared ? "one shared engine thread" : "dedicated engine threads");
        if (!shared) {
            return serveAll(config, null, stop, onReady);
        }
        EngineRunner sharedRunner =
                new EngineRunner("mrce-engine-shared", config.idle().newStrategy());
        sharedRunner.start();
        try {
            return serveAll(config, sharedRunner, stop, onReady);
        } finally {
            sharedRunner.close();
            LOG.info("engine duty cycle: {}", sharedRunner.summary());
        }
    }

    private int serveAll(DaemonConfig config, EngineRunner sharedRunner, CountDownLatch stop, Runnable onReady)
            throws Exception {
        List<Device> devices = config.devices();
        List<Thread> threads = new ArrayList<>();
        List<Exception> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < devices.size(); i++) {
            Device d = devices.get(i);
            int index = i;
            threads.add(Thread.ofPlatform().name("mrce-dev-" + d.name()).start(() -> {
                try {
                    serve(config, d, index, sharedRunner, stop, onReady);
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

    /**
     * The address of {@code --addr}: an IPv4 or IPv6 literal (no name lookup), a unicast address
     * the daemon can serve as GID index 0.
     */
    static int parseAddr(String text) {
        int a;
        try {
            a = io.metaroce.abi.IpAddr.parse(text.strip());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--addr: " + e.getMessage());
        }
        java.net.InetAddress in = io.metaroce.abi.IpAddr.toInet(a);
        if (in.isMulticastAddress()
                || in.isAnyLocalAddress()
                || in instanceof java.net.Inet6Address && in.isLinkLocalAddress()) {
            throw new IllegalArgumentException("--addr: " + text
                    + " is not a unicast address the daemon can serve (multicast, unspecified or link-local)");
        }
        return a;
    }

    /** Planes of one multi-plane device at most. */
    static final int MAX_PLANES = 8;

    /**
     * The packet I/O of {@code device}: its interface's port ({@code net}), or with several planes a
     * {@link PlanePort} over one port per plane interface, {@code net} the first.
     */
    private static Port openPort(DaemonConfig config, NetInfo net, Device device) throws Exception {
        if (device.planes().size() == 1) {
            return openPort(config, net);
        }
        List<Port> ports = new ArrayList<>();
        try {
            ports.add(openPort(config, net));
            for (String ifname : device.planes().subList(1, device.planes().size())) {
                NetInfo plane = NetInfo.of(ifname, 0);
                if (plane.mtu() != net.mtu()) {
                    throw new IllegalArgumentException("plane " + ifname + " has MTU " + plane.mtu() + ", "
                            + net.ifname() + " " + net.mtu() + ": the planes of a device need one MTU");
                }
                ports.add(openPort(config, plane));
            }
            PlanePort port = new PlanePort(ports.toArray(Port[]::new));
            StringBuilder sb = new StringBuilder();
            for (int k = 0; k < port.planes(); k++) {
                sb.append(k == 0 ? "" : ", ")
                        .append(device.planes().get(k))
                        .append(' ')
                        .append(io.metaroce.abi.IpAddr.toString(port.plane(k).localIp()));
            }
            LOG.info("{}: {} planes ({})", device.name(), port.planes(), sb);
            return port;
        } catch (Exception | Error e) {
            for (Port p : ports) {
                p.close();
            }
            throw e;
        }
    }

    /** The packet I/O of {@code config} on {@code net}. */
    private static Port openPort(DaemonConfig config, NetInfo net) throws Exception {
        int frameBytes = Wire.frameBytes(net.mtu());
        return switch (config.port()) {
            case UDP -> {
                UdpPort udp = new UdpPort(
                        net.ipv4(),
                        config.udpPort(),
                        frameBytes,
                        RX_TX_BATCH,
                        config.entropyPorts(),
                        config.udpOffload());
                LOG.info(
                        "udp port on {}: GSO {} ({} packets of a path a buffer), GRO {}",
                        net.ifname(),
                        udp.gsoOn() ? "on" : "off",
                        udp.sendBurst(),
                        udp.groOn() ? "on" : "off");
                yield udp;
            }
            case XDP, XDP_NATIVE ->
                AfXdpPort.open(
                        net.ifname(),
                        net.ipv4(),
                        config.udpPort(),
                        config.entropyPorts(),
                        frameBytes,
                        RX_TX_BATCH,
                        config.port() == DaemonConfig.PortKind.XDP ? AfXdpPort.Mode.SKB : AfXdpPort.Mode.NATIVE);
        };
    }

    /**
     * Serves one device until STOP; device INDEX (0..) offsets the metrics port. Its engine runs on
     * {@code sharedRunner}, or on a thread of its own when that is null. {@code onReady} runs once
     * it reported ready.
     */
    private static int serve(
            DaemonConfig config,
            Device device,
            int index,
            EngineRunner sharedRunner,
            CountDownLatch stop,
            Runnable onReady)
            throws Exception {
        NetInfo net = NetInfo.of(device.ifname(), config.addr() == null ? 0 : parseAddr(config.addr()));
        if (config.port() != DaemonConfig.PortKind.UDP
                && io.metaroce.abi.IpAddr.isV6(net.ipv4())
                && Wire.frameBytes(net.mtu()) > AfXdpPort.MAX_FRAME_V6) {
            // Two UMEM chunks hold a frame: over IPv6 (20 bytes more header) the AF_XDP port's largest
            // frame is 8130, so the daemon counts, and announces, the MTU that gives it.
            net = new NetInfo(
                    net.ifname(),
                    net.ipv4(),
                    AfXdpPort.MAX_FRAME_V6 + Wire.IP_UDP_OVERHEAD,
                    net.linkUp(),
                    net.speedMbps());
        }
        Path socketPath = config.sock() != null ? config.sock() : LocalControlPaths.socketPathFor(device.name());
        Integer devMetricsPort = config.metricsPortOf(index);
        Limits limits = Limits.defaults();
        DaemonConfig.Cm cmConfig = config.cm();
        TransportSettings transport = config.transport();

        try (Port port = openPort(config, net, device);
                EngineAgent engine = new EngineAgent(port, new MrTable(limits.maxMr() + REREG_SPARE_KEYS), transport)) {
            io.metaroce.nic.warmup.Warmup.Result warm = io.metaroce.nic.warmup.Warmup.once(transport);
            if (warm != null) {
                LOG.info("data path warmed: {}", warm);
            }
            CmBridge cm = !cmConfig.on()
                    ? null
                    : CmBridge.start(
                            engine,
                            net.ipv4(),
                            cmConfig.managerConfig(),
                            cmConfig.disconnectGraceMs(),
                            cmConfig.secret());
            VerbsService verbs = new VerbsService(engine, engine.datapath().mrs, net, config.udpPort(), limits);
            verbs.devName(device.name());
            verbs.userQuota(config.quota());
            ServiceTable services = cm == null ? null : new ServiceTable(cm.manager(), cmConfig.connectTimeoutMs());
            if (services != null) {
                cm.manager().serviceHandler(services);
                verbs.services(services);
            }
            EngineRunner runner = sharedRunner;
            if (runner == null) {
                runner = EngineRunner.dedicated(engine, config.idle().newStrategy());
                runner.start();
            } else {
                runner.add(engine);
            }
            DaemonAdmin admin =
                    new DaemonAdmin(engine, verbs, net, config.port().cliName(), config.udpPort(), socketPath);
            try (LocalControlServer server =
                            LocalControlServer.bind(socketPath, verbs, config.socketPerms(), config.sockGroup());
                    AdminServer adminServer =
                            AdminServer.bind(LocalControlPaths.adminSocketPathFor(socketPath), admin);
                    MetricsEndpoint metrics = devMetricsPort == null
                            ? null
                            : new MetricsEndpoint(
                                    new InetSocketAddress(config.metricsAddr(), devMetricsPort), admin::telemetry)) {
                String conformanceBreak = io.metaroce.nic.transport.ConformanceBreak.describe();
                if (conformanceBreak != null) {
                    LOG.warn(conformanceBreak);
                }
                LOG.info(
                        "mrce-nicd ready: {} on {} ({}) udp port {}, control socket {}",
                        device.name(),
                        net.ifname(),
                        io.metaroce.abi.IpAddr.toString(net.ipv4()),
                        config.udpPort(),
                        socketPath);
                LOG.info(
                        "connection manager: {}",
                        cm == null
                                ? "off (--cm-port 0): no connection tokens"
                                : "tcp port " + cmConfig.port() + ", heartbeat " + cmConfig.heartbeatMs()
                                        + " ms, peer timeout "
                                        + cmConfig.peerTimeoutMs() + " ms, "
                                        + (cmConfig.secret() == null
                                                ? "NOT authenticated (no --cm-secret-file)"
                                                : "peers authenticated with the cluster secret "
                                                        + cmConfig.secretFile()));
                LOG.info(
                        "transport {}, {} paths per QP, {} entropy ports, rto min {} us, tlp min {} us,"
                                + " cc slack {} us, QP window gain {}",
                        transport.transportName(),
                        transport.pathsPerQp(),
                        config.entropyPorts(),
                        transport.rtoMinNs() / 1000,
                        transport.tlpMinNs() / 1000,
                        transport.ccSlackMinNs() / 1000,
                        transport.qpWindowGain());
                // Several devices: each writes its own file, NAME-<file> beside --stats.
                Path stats = config.stats();
                Path statsPath = stats == null || config.devices().size() == 1
                        ? stats
                        : stats.resolveSibling(device.name() + "-" + stats.getFileName());
                StatsWriter statsWriter = statsPath == null ? null : new StatsWriter(engine, statsPath);
                onReady.run();
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
                if (runner != sharedRunner) {
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
                LOG.info(
                        "dma: from applications {}; to applications {}",
                        engine.datapath().gather.summary(),
                        engine.datapath().scatter.summary());
                if (runner != sharedRunner) {
                    LOG.info("engine duty cycle: {}", runner.summary());
                }
            }
        }
        return 0;
    }
}
