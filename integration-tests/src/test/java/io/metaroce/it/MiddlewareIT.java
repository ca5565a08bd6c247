package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Unmodified middleware on mrce0 across the two namespaces (each host with its own mrce-nicd),
 * under bin/mrce-run: UCX (Debian's {@code ucx-utils}) finds mrce0 ({@code ucx_info -d} lists it
 * with {@code rc_verbs} and {@code ud_verbs}) and runs {@code ucx_perftest} between the hosts
 * with {@code UCX_NET_DEVICES=mrce0:1} and {@code UCX_TLS} limited to one verbs transport (so a
 * run that could not use mrce0 fails instead of falling back to tcp), also with 1 % loss on the
 * link; Open MPI ({@code openmpi-bin}, {@code --mca pml ucx}) runs NetPIPE and an mpi4py
 * allreduce with one rank per host over UCX on mrce0; libfabric's verbs provider
 * ({@code libfabric-bin}) lists mrce0 and runs {@code fi_pingpong -c} (its data checks) over
 * datagram, MSG (rdma_cm) and RDM (ofi_rxm) endpoints. And the GID table as middleware reads it: {@code ibv_devinfo -v}
 * shows every address of the interface as a RoCE v2 GID, index 0 the daemon's, following
 * addresses added and removed at run time, and {@code ibv_asyncwatch} sees IBV_EVENT_GID_CHANGE.
 */
@Timeout(900)
class MiddlewareIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final AtomicInteger PORT = new AtomicInteger(19400);
    private static final int ITERS = 500;
    /** ucx_perftest's summary: iterations, overhead 50%/avg/overall, MB/s avg/overall, msg/s avg/overall. */
    private static final Pattern UCX_FINAL = Pattern.compile(
            "(?m)^Final:\\s+(\\d+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s*$");
    /** fi_pingpong's row: bytes #sent =#ack total time MB/sec usec/xfer Mxfers/sec. */
    private static final Pattern FI_ROW = Pattern.compile(
            "(?m)^(\\S+)\\s+(\\d+)\\s+=(\\d+)\\s+\\S+\\s+[0-9.]+s\\s+([0-9.]+)\\s+([0-9.]+)\\s+[0-9.]+\\s*$");

    private static final Pattern GID_LINE = Pattern.compile("GID\\[\\s*(\\d+)\\]:\\s+(\\S+), (RoCE v\\d)");
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("MiddlewareIT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    private static void assumeTool(String tool, String pkg) {
        assumeTrue(
                Files.isExecutable(Path.of("/usr/bin", tool)),
                tool + " is missing: install Debian's " + pkg + " (bin/lib/common.sh lists it)");
    }

    /** What both sides printed, and how they ended. */
    record Run(String name, int serverExit, int clientExit, String server, String client) {
        String context() {
            return name + "\n--- server:\n" + server + "\n--- client:\n" + client + "\n" + fabric.diagnostics();
        }

        Run assertExitedCleanly() {
            assertThat(clientExit).as("client exit of %s", context()).isZero();
            assertThat(serverExit).as("server exit of %s", context()).isZero();
            return this;
        }
    }

    /** SERVER in B, then CLIENT (with B's address appended) in A once B listens on tcp PORT. */
    private static Run run(String name, int port, List<String> server, List<String> client) {
        Proc s = fabric.startApp(fabric.b(), name + "-server", server);
        Proc c;
        try {
            fabric.awaitTcpListening(fabric.b(), port, s, Duration.ofSeconds(30));
            List<String> cmd = new ArrayList<>(client);
            cmd.add(fabric.appServerAddr());
            c = fabric.startApp(fabric.a(), name + "-client", cmd);
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
        try (s;
                c) {
            AppPair.Exits exits = AppPair.await(fabric, s, c, RUN_TIMEOUT);
            return new Run(name, exits.server(), exits.client(), s.output(), c.output());
        }
    }

    // ---- UCX

    @Test
    void ucxInfoListsMrce0WithVerbsTransports() {
        assumeTool("ucx_info", "ucx-utils");
        Proc.Result r = fabric.runApp(fabric.a(), "ucx_info", RUN_TIMEOUT, List.of("ucx_info", "-d"));
        assertThat(r.exit()).as("ucx_info -d:\n%s", r.output()).isZero();
        String out = r.output();
        int md = out.indexOf("# Memory domain: mrce0");
        assertThat(md).as("mrce0's memory domain in ucx_info -d:\n%s", out).isNotNegative();
        int next = out.indexOf("# Memory domain:", md + 1);
        String block = next < 0 ? out.substring(md) : out.substring(md, next);
        for (String tl : List.of("rc_verbs", "ud_verbs")) {
            assertThat(block)
                    .as("%s on mrce0:1 in:\n%s", tl, block)
                    .containsPattern("Transport: " + tl + "\\s+#\\s+Device: mrce0:1");
        }
    }

    private static void ucxPerftest(String tls, String test, int size) {
        int port = PORT.getAndIncrement();
        List<String> env = List.of("env", "UCX_NET_DEVICES=mrce0:1", "UCX_TLS=" + tls + ",self");
        List<String> server = new ArrayList<>(env);
        server.addAll(List.of("ucx_perftest", "-p", Integer.toString(port)));
        List<String> client = new ArrayList<>(server);
        client.addAll(List.of("-t", test, "-n", Integer.toString(ITERS), "-s", Integer.toString(size)));
        Run r = run("ucx_perftest-" + tls + "-" + test, port, server, client).assertExitedCleanly();
        Matcher m = UCX_FINAL.matcher(r.client());
        assertThat(m.find()).as("a Final: line; %s", r.context()).isTrue();
        assertThat(Integer.parseInt(m.group(1)))
                .as("iterations; %s", r.context())
                .isEqualTo(ITERS);
        assertThat(Double.parseDouble(m.group(6)))
                .as("overall MB/s; %s", r.context())
                .isPositive();
        assertThat(Double.parseDouble(m.group(8)))
                .as("overall msg/s; %s", r.context())
                .isPositive();
    }

    @Test
    void ucxPerftestOverRcVerbs() {
        assumeTool("ucx_perftest", "ucx-utils");
        for (String test : List.of("tag_bw", "tag_lat", "ucp_put_bw", "ucp_get", "stream_bw")) {
            ucxPerftest("rc_v", test, 4096);
        }
    }

    @Test
    void ucxPerftestOverUdVerbs() {
        assumeTool("ucx_perftest", "ucx-utils");
        for (String test : List.of("tag_bw", "tag_lat", "ucp_put_bw", "stream_bw")) {
            ucxPerftest("ud_v", test, 4096);
        }
    }

    /** The same runs with 1 % of MetaRoCE's packets dropped in each direction of the link. */
    @Test
    void ucxPerftestWithOnePercentLoss() {
        assumeTool("ucx_perftest", "ucx-utils");
        try {
            fabric.dropOnLink(TwoHostFabric.Loss.PCT_1);
            ucxPerftest("rc_v", "tag_bw", 65536);
            ucxPerftest("rc_v", "tag_lat", 4096);
            ucxPerftest("ud_v", "tag_bw", 4096);
        } finally {
            fabric.clearDrops();
        }
    }

    // ---- Open MPI over UCX

    /** NetPIPE's row: "N: BYTES bytes TIMES times --> MBPS Mbps in USEC usec". */
    private static final Pattern NETPIPE_ROW = Pattern.compile(
            "(?m)^\\s*\\d+:\\s+(\\d+) bytes\\s+(\\d+) times -->\\s+([0-9.]+) Mbps in\\s+([0-9.]+) usec");

    private static final String ALLREDUCE_PY = """
            from mpi4py import MPI
            import array
            comm = MPI.COMM_WORLD
            r, n = comm.Get_rank(), comm.Get_size()
            N = 1 << 16
            send = array.array('q', [(r + 1) * i for i in range(N)])
            recv = array.array('q', [0] * N)
            comm.Allreduce([send, MPI.INT64_T], [recv, MPI.INT64_T], op=MPI.SUM)
            k = n * (n + 1) // 2
            bad = sum(1 for i in range(N) if recv[i] != k * i)
            print(f"rank {r} of {n} allreduce {N} int64 bad={bad} sum={sum(recv)}", flush=True)
            """;

    /**
     * mpirun in A with one rank per host: the hostfile names the two namespaces and the rsh agent
     * enters the one it is asked for (both count as remote hosts, so both get an orted). The ranks
     * get the provider by LD_PRELOAD, {@code --mca pml ucx} and UCX limited to rc_verbs on mrce0:
     * without mrce0 the job cannot start (no tcp to fall back to).
     */
    private static Proc.Result mpirun(String name, List<String> program) throws Exception {
        Path dir = fabric.logDir();
        Path agent = dir.resolve("netns-rsh");
        // Every Open MPI process (mpirun and each host's orted) gets a session directory of its
        // own: on one file system under one host name they raced to create the same one
        // ("mkdir /tmp/ompi.<host>.0/jf.N: File exists") when another run was about.
        Path tmp = Files.createDirectories(dir.resolve("mpi-tmp-" + name));
        Files.createDirectories(tmp.resolve("mpirun"));
        Files.writeString(
                agent,
                "#!/bin/sh\n# mpirun's rsh agent: the host is a network namespace\n"
                        + "host=$1; shift\nmkdir -p \"" + tmp + "/$host\"\n"
                        + "exec ip netns exec \"$host\" env TMPDIR=\"" + tmp + "/$host\" /bin/sh -c \"$*\"\n");
        assertThat(agent.toFile().setExecutable(true)).isTrue();
        Path hosts = dir.resolve("mpi-hosts");
        Files.writeString(hosts, fabric.a().ns() + " slots=1\n" + fabric.b().ns() + " slots=1\n");
        String preload = Env.nativeDir().resolve("libmetaroce.so") + ":"
                + Env.nativeDir().resolve("libmetaroce-rdmacm.so");
        List<String> cmd = new ArrayList<>(List.of(
                "env",
                "TMPDIR=" + tmp.resolve("mpirun"),
                "mpirun",
                "--allow-run-as-root",
                "--hostfile",
                hosts.toString(),
                "-np",
                "2",
                "--map-by",
                "node",
                "--mca",
                "plm_rsh_agent",
                agent.toString(),
                "--mca",
                "routed",
                "direct",
                "--mca",
                "oob_tcp_if_include",
                "198.18.0.0/24",
                "--mca",
                "pml",
                "ucx",
                "--mca",
                "btl",
                "self",
                "--mca",
                "osc",
                "^ucx",
                "-x",
                "UCX_NET_DEVICES=mrce0:1",
                "-x",
                "UCX_TLS=rc_v,self",
                "-x",
                "LD_PRELOAD=" + preload));
        cmd.addAll(program);
        Proc p = fabric.start(fabric.a(), name, cmd);
        try (p) {
            int exit = p.waitFor(RUN_TIMEOUT);
            return new Proc.Result(exit, p.output());
        }
    }

    @Test
    void openMpiOverUcxOnMrce0() throws Exception {
        assumeTool("mpirun", "openmpi-bin");
        assumeTool("NPopenmpi", "netpipe-openmpi");
        assumeTrue(
                Files.isDirectory(Path.of("/usr/lib/python3/dist-packages/mpi4py")),
                "mpi4py is missing: install Debian's python3-mpi4py (bin/lib/common.sh lists it)");
        Proc.Result np = mpirun(
                "netpipe",
                List.of(
                        "NPopenmpi",
                        "-u",
                        "65536",
                        "-o",
                        fabric.logDir().resolve("np.out").toString()));
        String ctx = np.output() + "\n" + fabric.diagnostics();
        assertThat(np.exit()).as("mpirun NPopenmpi: %s", ctx).isZero();
        Matcher m = NETPIPE_ROW.matcher(np.output());
        long largest = 0;
        int rows = 0;
        while (m.find()) {
            rows++;
            long bytes = Long.parseLong(m.group(1));
            largest = Math.max(largest, bytes);
            assertThat(Double.parseDouble(m.group(4)))
                    .as("usec of %s bytes; %s", bytes, ctx)
                    .isPositive();
            if (bytes >= 1024) { // NetPIPE prints 0.00 Mbps for the smallest sizes
                assertThat(Double.parseDouble(m.group(3)))
                        .as("Mbps of %s bytes; %s", bytes, ctx)
                        .isPositive();
            }
        }
        assertThat(rows).as("NetPIPE rows; %s", ctx).isGreaterThan(10);
        assertThat(largest).as("largest size; %s", ctx).isGreaterThanOrEqualTo(65536);

        Path py = fabric.logDir().resolve("allreduce.py");
        Files.writeString(py, ALLREDUCE_PY);
        Proc.Result ar = mpirun("allreduce", List.of("/usr/bin/python3", py.toString()));
        assertThat(ar.exit()).as("mpirun allreduce: %s", ar.output()).isZero();
        // sum over i < 2^16 of (1 + 2) * i
        for (int rank = 0; rank < 2; rank++) {
            assertThat(ar.output())
                    .as("allreduce of rank %d", rank)
                    .contains("rank " + rank + " of 2 allreduce 65536 int64 bad=0 sum=6442352640");
        }
    }

    // ---- libfabric

    @Test
    void fiInfoListsMrce0() {
        assumeTool("fi_info", "libfabric-bin");
        Proc.Result r = fabric.runApp(fabric.a(), "fi_info", RUN_TIMEOUT, List.of("fi_info", "-p", "verbs"));
        assertThat(r.exit()).as("fi_info -p verbs:\n%s", r.output()).isZero();
        assertThat(r.output())
                .as("fi_info -p verbs")
                .containsPattern("domain: mrce0\\s+version: \\S+\\s+type: FI_EP_MSG")
                .containsPattern("domain: mrce0-dgram\\s+version: \\S+\\s+type: FI_EP_DGRAM");
    }

    private static void fiPingPong(String epType, int size, int iters, String... env) {
        int port = PORT.getAndIncrement();
        List<String> common = new ArrayList<>(List.of("env"));
        common.addAll(List.of(env));
        common.addAll(List.of(
                "fi_pingpong",
                "-p",
                "verbs",
                "-e",
                epType,
                "-c",
                "-I",
                Integer.toString(iters),
                "-S",
                Integer.toString(size)));
        List<String> cmd = new ArrayList<>(common);
        cmd.addAll(List.of("-B", Integer.toString(port)));
        List<String> client = new ArrayList<>(common);
        client.addAll(List.of("-P", Integer.toString(port)));
        Run r = run("fi_pingpong-" + epType, port, cmd, client).assertExitedCleanly();
        for (String side : List.of(r.client(), r.server())) {
            Matcher m = FI_ROW.matcher(side);
            assertThat(m.find()).as("a result row; %s", r.context()).isTrue();
            assertThat(Integer.parseInt(m.group(2))).as("sent; %s", r.context()).isEqualTo(iters);
            assertThat(Integer.parseInt(m.group(3)))
                    .as("acknowledged; %s", r.context())
                    .isEqualTo(iters);
            assertThat(Double.parseDouble(m.group(4)))
                    .as("MB/sec; %s", r.context())
                    .isPositive();
        }
    }

    @Test
    void fiPingPongDatagramWithDataChecks() {
        assumeTool("fi_pingpong", "libfabric-bin");
        fiPingPong("dgram", 1024, 200);
    }

    /** MSG endpoints: RC QPs connected through libmetaroce-rdmacm.so. */
    @Test
    void fiPingPongMsgWithDataChecks() {
        assumeTool("fi_pingpong", "libfabric-bin");
        fiPingPong("msg", 4096, 200);
    }

    /**
     * RDM endpoints: ofi_rxm over MSG. rxm sizes its CQ 1024 entries per peer of its universe
     * (default 256: 262144 entries), beyond mrce0's max_cqe (65536), so the run sets
     * FI_UNIVERSE_SIZE=16. (ofi_rxd over DGRAM is left out: its server sometimes waits forever
     * for a last datagram that UD may lose, a hang of the tool, not a result.)
     */
    @Test
    void fiPingPongRdmWithDataChecks() {
        assumeTool("fi_pingpong", "libfabric-bin");
        fiPingPong("rdm", 4096, 200, "FI_UNIVERSE_SIZE=16");
    }

    // ---- the GID table

    private static List<String[]> gids(NetnsFabric.Host h) {
        Proc.Result r = fabric.runApp(h, "ibv_devinfo", RUN_TIMEOUT, List.of("ibv_devinfo", "-v", "-d", "mrce0"));
        assertThat(r.exit()).as("ibv_devinfo -v:\n%s", r.output()).isZero();
        assertThat(r.output()).contains("gid_tbl_len:\t\t16");
        List<String[]> out = new ArrayList<>();
        Matcher m = GID_LINE.matcher(r.output());
        while (m.find()) {
            assertThat(Integer.parseInt(m.group(1)))
                    .as("GIDs packed from 0:\n%s", r.output())
                    .isEqualTo(out.size());
            out.add(new String[] {m.group(2), m.group(3)});
        }
        return out;
    }

    @Test
    void gidTableFollowsTheInterfaceAddresses() {
        NetnsFabric.Host a = fabric.a();
        List<String[]> before = gids(a);
        assertThat(before).as("GIDs of A").hasSize(1);
        assertThat(before.get(0)).containsExactly("::ffff:" + a.addr(), "RoCE v2");
        // rdma-core's ibv_asyncwatch prints each async event: GID_CHANGE for each address change.
        Proc watch = fabric.startApp(a, "ibv_asyncwatch", List.of("stdbuf", "-oL", "ibv_asyncwatch", "-d", "mrce0"));
        try (watch) {
            assertThat(Wait.until(
                            Duration.ofSeconds(20),
                            () -> watch.output().contains("async event FD") || !watch.isAlive()))
                    .as("ibv_asyncwatch opened mrce0: %s", watch.output())
                    .isTrue();
            assertThat(watch.isAlive()).as("ibv_asyncwatch: %s", watch.output()).isTrue();
            addAndRemoveAddresses(a);
            assertThat(Wait.until(Duration.ofSeconds(20), () -> countGidChanges(watch.output()) >= 2))
                    .as("GID_CHANGE events for the addresses added and removed: %s", watch.output())
                    .isTrue();
            assertThat(watch.output()).as("ibv_asyncwatch").contains("IBV_EVENT_GID_CHANGE (18), port 1");
        }
        assertThat(gids(a)).as("GIDs of A after the addresses went").hasSize(1);
    }

    private static int countGidChanges(String out) {
        return out.split("IBV_EVENT_GID_CHANGE", -1).length - 1;
    }

    private static void addAndRemoveAddresses(NetnsFabric.Host a) {
        try {
            fabric.exec(a, Sh.DEFAULT_TIMEOUT, "sysctl", "-qw", "net.ipv6.conf." + a.ifname() + ".disable_ipv6=0");
            Sh.check("ip", "-n", a.ns(), "addr", "add", "198.18.0.11/24", "dev", a.ifname());
            Sh.check("ip", "-n", a.ns(), "addr", "add", "2001:db8:16::11/64", "dev", a.ifname(), "nodad");
            List<String[]> with = gids(a);
            List<String> addrs = with.stream().map(g -> g[0]).toList();
            assertThat(with.get(0))
                    .as("index 0 stays the daemon's address: %s", addrs)
                    .containsExactly("::ffff:" + a.addr(), "RoCE v2");
            assertThat(addrs).as("GIDs of A").contains("::ffff:198.18.0.11", "2001:db8:16::11");
            assertThat(addrs.indexOf("::ffff:198.18.0.11"))
                    .as("IPv4 before IPv6: %s", addrs)
                    .isLessThan(addrs.indexOf("2001:db8:16::11"));
            assertThat(with).allSatisfy(g -> assertThat(g[1]).isEqualTo("RoCE v2"));
        } finally {
            Sh.run(Sh.DEFAULT_TIMEOUT, List.of("ip", "-n", a.ns(), "addr", "del", "198.18.0.11/24", "dev", a.ifname()));
            Sh.run(
                    Sh.DEFAULT_TIMEOUT,
                    List.of("ip", "-n", a.ns(), "addr", "del", "2001:db8:16::11/64", "dev", a.ifname()));
            fabric.exec(a, Sh.DEFAULT_TIMEOUT, "sysctl", "-qw", "net.ipv6.conf." + a.ifname() + ".disable_ipv6=1");
        }
    }
}
