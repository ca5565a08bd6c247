package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
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
 * rdma_cm over IPv6: the unmodified rdmacm-utils tools between two IPv6-only namespaces
 * ({@link TwoHostFabric#directIpv6}: A 2001:db8::1, B 2001:db8::2, no IPv4 address on the
 * fabric link, each daemon serving its IPv6 address), with libmetaroce-rdmacm.so preloaded:
 * {@code rping -v} (every ping's data checked), {@code ucmatose}, {@code udaddy} (UD, the address
 * handle from the peer's IPv6 GID), {@code rstream -T v} over the library's rsockets
 * ({@code rsocket(AF_INET6)}, data verified by the receiver), {@code rdma_server}/{@code rdma_client},
 * {@code cmtime} (20 connections, every step's row), the events' IPv6 addresses
 * ({@code mrce_rdmacm_check}'s ADDRS lines: {@code rdma_get_local_addr}/{@code rdma_get_peer_addr}
 * at ADDR_RESOLVED, CONNECT_REQUEST and ESTABLISHED, on a listener bound to {@code [::]}), an IPv4
 * wildcard listener taking an IPv6 client's request (a reject with private data), and no route to
 * an IPv6 address (ADDR_ERROR). A server counts as listening once the library reports the
 * daemon's answer to its CM_LISTEN (MRCE_RDMACM_DEBUG), as in {@link RdmaCmIT}.
 */
@Timeout(600)
class RdmaCmIpv6IT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final AtomicInteger PORT = new AtomicInteger(7900);
    private static final Pattern LISTEN_OK = Pattern.compile("listen on service 0x[0-9a-f]+: Success");
    private static final String A = "2001:db8::1";
    private static final String B = "2001:db8::2";
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.directIpv6("RdmaCmIpv6IT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

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

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts SERVER in B (its library's debug lines to a file) and waits until it listens (or died). */
    private static Proc startServer(String name, List<String> server) {
        Path dbg = fabric.logDir().resolve(name + "-" + PORT.get() + "-rdmacm-debug.log");
        List<String> cmd = new ArrayList<>(List.of("env", "MRCE_RDMACM_DEBUG=" + dbg));
        cmd.addAll(server);
        Proc p = fabric.startApp(fabric.b(), name + "-server", cmd);
        boolean up = Wait.until(
                Duration.ofSeconds(30), () -> LISTEN_OK.matcher(read(dbg)).find() || !p.isAlive());
        if (!up || !p.isAlive()) {
            String out = p.output();
            p.close();
            throw new AssertionError(name + " server not listening (alive=" + p.isAlive() + "):\n" + out + "\n"
                    + read(dbg) + "\n" + fabric.diagnostics());
        }
        return p;
    }

    /** Runs SERVER in B, then CLIENT in A once the server listens; both to completion. */
    private static Run run(String name, List<String> server, List<String> client) {
        Proc s = startServer(name, server);
        Proc c;
        try {
            c = fabric.startApp(fabric.a(), name + "-client", client);
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

    private static String port() {
        return Integer.toString(PORT.getAndIncrement());
    }

    private static List<String> check(String... args) {
        List<String> cmd = new ArrayList<>(
                List.of(Env.nativeDir().resolve("mrce_rdmacm_check").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @Test
    void fabricIsIpv6Only() {
        assertThat(fabric.a().addr()).isEqualTo(A);
        assertThat(fabric.b().addr()).isEqualTo(B);
        for (NetnsFabric.Host h : List.of(fabric.a(), fabric.b())) {
            Proc.Result r = fabric.exec(h, Duration.ofSeconds(10), "ip", "-4", "-o", "addr", "show", "dev", h.ifname());
            assertThat(r.output().strip()).as("IPv4 addresses of %s", h.name()).isEmpty();
        }
    }

    @Test
    void rpingVerifiesPings() {
        String port = port();
        int count = 200;
        Run r = run(
                        "rping6",
                        List.of(
                                "stdbuf",
                                "-oL",
                                "rping",
                                "-s",
                                "-a",
                                B,
                                "-p",
                                port,
                                "-v",
                                "-C",
                                Integer.toString(count)),
                        List.of(
                                "stdbuf",
                                "-oL",
                                "rping",
                                "-c",
                                "-a",
                                B,
                                "-p",
                                port,
                                "-v",
                                "-C",
                                Integer.toString(count)))
                .assertExitedCleanly();
        List<String> client =
                r.client().lines().filter(l -> l.startsWith("ping data: ")).toList();
        List<String> server = r.server()
                .lines()
                .filter(l -> l.startsWith("server ping data: "))
                .toList();
        assertThat(client).as("client pings of %s", r.context()).hasSize(count);
        assertThat(server).as("server pings of %s", r.context()).hasSize(count);
        for (int i = 0; i < count; i++) {
            assertThat(client.get(i)).as("client ping %d", i).isEqualTo("ping data: " + RdmaCmIT.rpingData(i));
            assertThat(server.get(i)).as("server ping %d", i).isEqualTo("server ping data: " + RdmaCmIT.rpingData(i));
        }
    }

    @Test
    void ucmatoseTwoConnections() {
        String port = port();
        Run r = run(
                        "ucmatose6",
                        List.of("ucmatose", "-c", "2", "-p", port),
                        List.of("ucmatose", "-c", "2", "-p", port, "-s", B))
                .assertExitedCleanly();
        for (String out : List.of(r.server(), r.client())) {
            assertThat(out).as(r.context()).contains("data transfers complete", "test complete", "return status 0");
        }
        assertThat(r.server()).as(r.context()).contains("disconnected");
    }

    @Test
    void udaddy() {
        // udaddy always uses port 7174; UD sends to the address handle made from the peer's IPv6 GID
        Run r = run("udaddy6", List.of("udaddy"), List.of("udaddy", "-s", B)).assertExitedCleanly();
        for (String out : List.of(r.server(), r.client())) {
            assertThat(out).as(r.context()).contains("data transfers complete", "return status 0");
        }
    }

    @Test
    void rdmaServerAndClient() {
        // rdma_server binds with rdma_getaddrinfo's passive wildcard, rdma_client resolves B's address
        String port = port();
        Run r = run("rdma_server6", List.of("rdma_server", "-p", port), List.of("rdma_client", "-s", B, "-p", port))
                .assertExitedCleanly();
        assertThat(r.server()).as(r.context()).contains("rdma_server: end 0");
        assertThat(r.client()).as(r.context()).contains("rdma_client: end 0");
    }

    @Test
    void cmtime() {
        String port = port();
        Proc server = startServer("cmtime6", List.of("cmtime", "-c", "20", "-p", port));
        try (server) {
            Proc.Result c = fabric.runApp(
                    fabric.a(), "cmtime6-client", RUN_TIMEOUT, List.of("cmtime", "-s", B, "-c", "20", "-p", port));
            String context = c.output() + "\n--- server:\n" + server.output() + "\n" + fabric.diagnostics();
            assertThat(c.exit()).as(context).isZero();
            for (String step : List.of(
                    "create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy")) {
                assertThat(c.output())
                        .as(context)
                        .containsPattern("(?m)^" + step
                                + "\\s*:\\s+\\d+\\.\\d+\\s+\\d+\\.\\d+\\s+\\d+\\.\\d+\\s+\\d+\\.\\d+\\s*$");
            }
            assertThat(server.isAlive()).as(context).isTrue();
        }
    }

    /** One row of rstream's table: name, bytes, xfers, iters, total, time, Gb/sec, usec/xfer. */
    private static final Pattern XFER_ROW = Pattern.compile(
            "(?m)^(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(\\d+\\.\\d+)s\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)\\s*$");

    @Test
    void rstreamVerified() {
        String port = port();
        List<String> opts = List.of("-T", "b", "-T", "v", "-S", "65536", "-C", "200");
        List<String> server = new ArrayList<>(List.of("stdbuf", "-oL", "rstream", "-p", port));
        server.addAll(opts);
        List<String> client = new ArrayList<>(List.of("rstream", "-s", B, "-p", port));
        client.addAll(opts);
        Run r = run("rstream6", server, client).assertExitedCleanly();
        for (String out : List.of(r.client(), r.server())) {
            assertThat(out).as(r.context()).doesNotContain("verification failed", "rsend:", "rrecv:");
            Matcher m = XFER_ROW.matcher(out);
            List<String> rows = new ArrayList<>();
            while (m.find()) {
                if (!m.group(1).equals("name")) {
                    rows.add(m.group(1) + " " + m.group(3));
                }
            }
            assertThat(rows).as(r.context()).containsExactly("custom 200");
        }
    }

    @Test
    void eventsCarryIpv6Addresses() {
        String port = port();
        Run r = run("check-accept6", check("-6", "server", port, "accept"), check("client", B, port))
                .assertExitedCleanly();
        assertThat(r.server())
                .as(r.context())
                .containsSubsequence(
                        "EVENT RDMA_CM_EVENT_CONNECT_REQUEST status 0 pdata hello",
                        "ADDRS src 6 " + B + " " + port + " dst 6 " + A + " ",
                        "EVENT RDMA_CM_EVENT_ESTABLISHED",
                        "ADDRS src 6 " + B + " " + port + " dst 6 " + A + " ",
                        "EVENT RDMA_CM_EVENT_DISCONNECTED status 0",
                        "DONE");
        assertThat(r.client())
                .as(r.context())
                .containsSubsequence(
                        "EVENT RDMA_CM_EVENT_ADDR_RESOLVED",
                        "ADDRS src 6 " + A + " ",
                        "EVENT RDMA_CM_EVENT_ROUTE_RESOLVED",
                        "EVENT RDMA_CM_EVENT_ESTABLISHED status 0 pdata welcome",
                        "ADDRS src 6 " + A + " ",
                        " dst 6 " + B + " " + port,
                        "EVENT RDMA_CM_EVENT_DISCONNECTED status 0",
                        "DONE");
        // the requester's source port is the one the acceptor sees
        Matcher c = Pattern.compile("ADDRS src 6 " + Pattern.quote(A) + " (\\d+) dst")
                .matcher(r.client());
        Matcher s = Pattern.compile("dst 6 " + Pattern.quote(A) + " (\\d+)").matcher(r.server());
        assertThat(c.find() && s.find()).as(r.context()).isTrue();
        assertThat(s.group(1)).as(r.context()).isEqualTo(c.group(1));
    }

    @Test
    void ipv4WildcardListenerTakesAnIpv6RequestAndRejectsWithPrivateData() {
        String port = port();
        Run r = run("check-reject6", check("server", port, "reject"), check("client", B, port))
                .assertExitedCleanly();
        assertThat(r.server())
                .as(r.context())
                .contains(
                        "EVENT RDMA_CM_EVENT_CONNECT_REQUEST status 0 pdata hello",
                        "dst 6 " + A + " ",
                        "REJECTED-SENT");
        assertThat(r.client()).as(r.context()).contains("EVENT RDMA_CM_EVENT_REJECTED status 28 pdata go-away");
    }

    @Test
    void noRouteToAnIpv6AddressIsAddrError() {
        // 2001:db8:ffff::/48 is on no link of A and A has no default route
        Proc.Result c =
                fabric.runApp(fabric.a(), "check-noroute6", RUN_TIMEOUT, check("client", "2001:db8:ffff::9", port()));
        assertThat(c.exit()).as(c.output()).isZero();
        assertThat(c.output()).contains("EVENT RDMA_CM_EVENT_ADDR_ERROR status -101 ", "no route to 2001:db8:ffff::9");
    }

    /**
     * The Java binding's daemon connection service between the IPv6-only hosts: CmServiceApp
     * connects to B's IPv6 address, private data both ways, the server sees the requester's IPv6
     * address, and 100 messages arrive with the sender's CRC.
     */
    @Test
    void javaBindingDaemonServiceOverIpv6() {
        String port = port();
        Path root = Env.root();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp =
                root.resolve("java-verbs/target/classes") + ":" + root.resolve("integration-tests/target/test-classes");
        List<String> app = List.of(
                Env.bin("mrce-run").toString(),
                java,
                "--enable-native-access=ALL-UNNAMED",
                "-XX:+UseSerialGC",
                "-cp",
                cp,
                "io.metaroce.it.jverbs.apps.CmServiceApp");
        List<String> server = new ArrayList<>(app);
        server.addAll(List.of("server", port, "100"));
        List<String> client = new ArrayList<>(app);
        client.addAll(List.of("client", B, port, "100"));
        try (Proc s = fabric.start(fabric.b(), "jverbs-cm-server", server)) {
            boolean listening =
                    Wait.until(Duration.ofSeconds(60), () -> s.output().contains("LISTENING") || !s.isAlive());
            assertThat(listening && s.isAlive()).as("server: %s", s.output()).isTrue();
            try (Proc c = fabric.start(fabric.a(), "jverbs-cm-client", client)) {
                int ce = c.waitFor(RUN_TIMEOUT);
                int se = s.waitFor(RUN_TIMEOUT);
                String ctx =
                        "--- server:\n" + s.output() + "\n--- client:\n" + c.output() + "\n" + fabric.diagnostics();
                assertThat(ce).as(ctx).isZero();
                assertThat(se).as(ctx).isZero();
                assertThat(s.output())
                        .as(ctx)
                        .contains("REQUEST private=hello from the client")
                        .contains("peer=2001:db8:0:0:0:0:0:1");
                assertThat(c.output()).as(ctx).contains("ACCEPTED private=welcome from the server");
                Matcher sent = Pattern.compile("OK messages=100 bytes=\\d+ crc=0x[0-9a-f]{8}")
                        .matcher(c.output());
                assertThat(sent.find()).as(ctx).isTrue();
                assertThat(s.output())
                        .as("what arrived is what was sent; %s", ctx)
                        .contains(sent.group());
            }
        }
    }
}
