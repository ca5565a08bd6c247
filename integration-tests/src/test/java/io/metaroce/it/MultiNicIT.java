package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
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
 * Hosts with two NICs (issue 20, docs/multi-nic.md): on a {@link TwoPlaneFabric} each host runs one
 * mrce-nicd with {@code --device mrce0=p1-x --device mrce1=p2-x}. Unmodified {@code ibv_devices} and
 * {@code ibv_devinfo} list both devices, each with its own GUID, port and GID table (its own
 * interface's address); {@code mrce-ctl devices} shows both; {@code ib_write_bw -d mrce1} and
 * {@code ibv_rc_pingpong -c -d mrce0} run at the same time, the pingpong checking every received
 * buffer, while the kernel's byte counters of the two planes prove the write traffic left by plane 2
 * only; mrce_integrity checks data on both devices at once; perftest passes with {@code -d} on each
 * device. A's daemon runs an engine thread per device, B's one engine thread shared by both.
 */
@Timeout(900)
class MultiNicIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(180);
    private static final AtomicInteger PORT = new AtomicInteger(19300);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A perftest bandwidth row: #bytes #iterations BW peak BW average MsgRate. */
    private static final Pattern BW_ROW =
            Pattern.compile("(?m)^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)\\s*$");
    /** An ibv_devices row: the device name and its 16-hex-digit node GUID. */
    private static final Pattern DEVICE_ROW = Pattern.compile("(?m)^\\s+(mrce\\d+)\\s+([0-9a-f]{16})\\s*$");

    private static TwoPlaneFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoPlaneFabric.create("MultiNicIT", 1500);
        fabric.startTwoDeviceDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void everyToolListsBothDevicesWithTheirOwnPortAndGids() {
        for (NetnsFabric.Host[] host : List.of(
                new NetnsFabric.Host[] {fabric.a(), fabric.a2()}, new NetnsFabric.Host[] {fabric.b(), fabric.b2()})) {
            NetnsFabric.Host plane1 = host[0];
            NetnsFabric.Host plane2 = host[1];
            Proc.Result devices = fabric.runApp(plane1, "ibv_devices", Duration.ofSeconds(60), List.of("ibv_devices"));
            assertThat(devices.exit())
                    .as("ibv_devices in %s: %s", plane1.name(), devices.output())
                    .isZero();
            List<String> names = new ArrayList<>();
            List<String> guids = new ArrayList<>();
            Matcher m = DEVICE_ROW.matcher(devices.output());
            while (m.find()) {
                names.add(m.group(1));
                guids.add(m.group(2));
            }
            assertThat(names)
                    .as("ibv_devices in %s: %s", plane1.name(), devices.output())
                    .containsExactly("mrce0", "mrce1");
            assertThat(guids.get(0)).as("each device its own node GUID").isNotEqualTo(guids.get(1));
            assertThat(fabric.daemon(plane1).logText())
                    .as("threading mode of the daemon in %s", plane1.name())
                    .contains(
                            plane1 == fabric.a()
                                    ? "2 devices, dedicated engine threads"
                                    : "2 devices, one shared engine thread");

            for (NetnsFabric.Host plane : List.of(plane1, plane2)) {
                String dev = plane == plane1 ? "mrce0" : "mrce1";
                NetnsFabric.Host other = plane == plane1 ? plane2 : plane1;
                Proc.Result info = fabric.runApp(
                        plane, "ibv_devinfo-" + dev, Duration.ofSeconds(60), List.of("ibv_devinfo", "-v", "-d", dev));
                assertThat(info.exit())
                        .as("ibv_devinfo -d %s in %s: %s", dev, plane.name(), info.output())
                        .isZero();
                assertThat(info.output())
                        .as("ibv_devinfo -v -d %s in %s", dev, plane.name())
                        .contains("hca_id:\t" + dev)
                        .contains("PORT_ACTIVE")
                        .contains("Ethernet")
                        .contains("::ffff:" + plane.addr())
                        .doesNotContain("::ffff:" + other.addr());
            }
            Proc.Result all = fabric.runApp(plane1, "ibv_devinfo", Duration.ofSeconds(60), List.of("ibv_devinfo"));
            assertThat(all.output())
                    .as("ibv_devinfo in %s (one process opens both devices)", plane1.name())
                    .contains("hca_id:\tmrce0")
                    .contains("hca_id:\tmrce1");

            String ctl = Ctl.run(fabric, plane1, "devices");
            assertThat(ctl)
                    .as("mrce-ctl devices in %s", plane1.name())
                    .containsPattern("(?m)^mrce0\\s+" + plane1.ifname() + "\\s+" + Pattern.quote(plane1.addr()) + "\\s")
                    .containsPattern(
                            "(?m)^mrce1\\s+" + plane2.ifname() + "\\s+" + Pattern.quote(plane2.addr()) + "\\s");
        }
    }

    @Test
    void writeBwOnMrce1AndPingPongOnMrce0AtTheSameTime() {
        int size = 65536;
        int writes = 1000;
        int pingSize = 4096;
        int pings = 300;
        int bwPort = PORT.getAndIncrement();
        int ppPort = PORT.getAndIncrement();
        List<String> bw = List.of(
                "ib_write_bw", "-d", "mrce1", "-x", "0", "-F", "-s", str(size), "-n", str(writes), "-p", str(bwPort));
        List<String> pp = List.of(
                "ibv_rc_pingpong",
                "-d",
                "mrce0",
                "-g",
                "0",
                "-c",
                "-s",
                str(pingSize),
                "-n",
                str(pings),
                "-p",
                str(ppPort));
        long plane1Before = fabric.txBytes(fabric.a());
        long plane2Before = fabric.txBytes(fabric.a2());
        long mrce1DataBefore = dataTx("mrce1");
        long mrce0DataBefore = dataTx("mrce0");
        Proc bwServer = fabric.startApp(fabric.b2(), "ib_write_bw-server", bw);
        Proc ppServer = fabric.startApp(fabric.b(), "ibv_rc_pingpong-server", pp);
        try (bwServer;
                ppServer) {
            fabric.awaitTcpListening(fabric.b(), bwPort, bwServer, Duration.ofSeconds(20));
            fabric.awaitTcpListening(fabric.b(), ppPort, ppServer, Duration.ofSeconds(20));
            List<String> bwClient = new ArrayList<>(bw);
            bwClient.add(fabric.b2().addr());
            List<String> ppClient = new ArrayList<>(pp);
            ppClient.add(fabric.b().addr());
            Proc bwc = fabric.startApp(fabric.a2(), "ib_write_bw-client", bwClient);
            Proc ppc = fabric.startApp(fabric.a(), "ibv_rc_pingpong-client", ppClient);
            try (bwc;
                    ppc) {
                // Both clients are running before either is awaited: the two devices carry traffic at once.
                AppPair.Exits ppExits = AppPair.await(fabric, ppServer, ppc, RUN_TIMEOUT);
                AppPair.Exits bwExits = AppPair.await(fabric, bwServer, bwc, RUN_TIMEOUT);
                String context = "\n--- write_bw client:\n" + bwc.output() + "\n--- pingpong client:\n" + ppc.output()
                        + "\n" + fabric.diagnostics();
                RcPingPong.parse("server", ppExits.server(), ppServer.output())
                        .assertCompleted(pingSize, pings, context);
                RcPingPong.parse("client", ppExits.client(), ppc.output()).assertCompleted(pingSize, pings, context);
                assertThat(bwExits.client())
                        .as("ib_write_bw client exit%s", context)
                        .isZero();
                assertThat(bwExits.server())
                        .as("ib_write_bw server exit%s", context)
                        .isZero();
                Matcher row = BW_ROW.matcher(bwc.output());
                assertThat(row.find()).as("ib_write_bw result row%s", context).isTrue();
                assertThat(Long.parseLong(row.group(1))).isEqualTo(size);
                assertThat(Long.parseLong(row.group(2))).isEqualTo(writes);
                double average = Double.parseDouble(row.group(4));
                if (!PerftestClock.unmeasured(average, bwc.output())) {
                    assertThat(average).as("average BW%s", context).isPositive();
                }
            }
        }
        // What landed where: the writes' bytes left A by plane 2's interface; plane 1 carried only
        // the pingpong (300 x 4 KiB each way plus acks) and each device counted its own data.
        long written = (long) size * writes;
        long plane2 = fabric.txBytes(fabric.a2()) - plane2Before;
        long plane1 = fabric.txBytes(fabric.a()) - plane1Before;
        assertThat(plane2)
                .as("bytes out of A's plane-2 interface (%d written by mrce1)", written)
                .isGreaterThanOrEqualTo(written);
        assertThat(plane1)
                .as("bytes out of A's plane-1 interface (pingpong only)")
                .isLessThan(written / 4);
        long mrce1Data = dataTx("mrce1") - mrce1DataBefore;
        long mrce0Data = dataTx("mrce0") - mrce0DataBefore;
        assertThat(mrce1Data).as("mrce1's data packets").isGreaterThanOrEqualTo(written / 4096);
        assertThat(mrce0Data).as("mrce0's data packets").isPositive().isLessThan(mrce1Data);
    }

    @Test
    void integrityOnBothDevicesAtOnce() {
        List<Proc> servers = new ArrayList<>();
        List<Proc> clients = new ArrayList<>();
        int messages = 300;
        try {
            for (String dev : List.of("mrce0", "mrce1")) {
                NetnsFabric.Host server = dev.equals("mrce0") ? fabric.b() : fabric.b2();
                NetnsFabric.Host client = dev.equals("mrce0") ? fabric.a() : fabric.a2();
                int port = PORT.getAndIncrement();
                List<String> cmd = List.of(
                        Integrity.binary().toString(),
                        "-d",
                        dev,
                        "-g",
                        "0",
                        "-p",
                        str(port),
                        "-n",
                        str(messages),
                        "-S",
                        dev.equals("mrce0") ? "20" : "21",
                        "-t",
                        "150");
                Proc s = fabric.startApp(server, "mrce_integrity-server-" + dev, cmd);
                servers.add(s);
                fabric.awaitTcpListening(server, port, s, Duration.ofSeconds(20));
                List<String> clientCmd = new ArrayList<>(cmd);
                clientCmd.add(server.addr());
                clients.add(fabric.startApp(client, "mrce_integrity-client-" + dev, clientCmd));
            }
            String checksum0 = null;
            for (int i = 0; i < 2; i++) {
                AppPair.Exits exits = AppPair.await(fabric, servers.get(i), clients.get(i), RUN_TIMEOUT);
                Integrity.Side s =
                        Integrity.parse("server", exits.server(), servers.get(i).output());
                Integrity.Side c =
                        Integrity.parse("client", exits.client(), clients.get(i).output());
                String context = "device mrce" + i + "\n--- server:\n" + s.output() + "\n--- client:\n" + c.output()
                        + "\n" + fabric.diagnostics();
                assertThat(s.ok() && c.ok()).as("both sides OK; %s", context).isTrue();
                assertThat(s.exit()).as(context).isZero();
                assertThat(c.exit()).as(context).isZero();
                assertThat(c.messages()).as(context).isEqualTo(messages);
                assertThat(s.checksum())
                        .as("server and client agree; %s", context)
                        .isEqualTo(c.checksum());
                if (i == 0) {
                    checksum0 = c.checksum();
                } else {
                    assertThat(c.checksum())
                            .as("different seeds, different data")
                            .isNotEqualTo(checksum0);
                }
            }
        } finally {
            clients.forEach(Proc::close);
            servers.forEach(Proc::close);
        }
    }

    @Test
    void perftestOnEachDevice() {
        for (String dev : List.of("mrce0", "mrce1")) {
            NetnsFabric.Host server = dev.equals("mrce0") ? fabric.b() : fabric.b2();
            NetnsFabric.Host client = dev.equals("mrce0") ? fabric.a() : fabric.a2();
            for (String tool : List.of("ib_send_bw", "ib_read_bw", "ib_write_bw")) {
                int port = PORT.getAndIncrement();
                int iters = 200;
                List<String> cmd =
                        List.of(tool, "-d", dev, "-x", "0", "-F", "-s", "65536", "-n", str(iters), "-p", str(port));
                Proc s = fabric.startApp(server, tool + "-server-" + dev, cmd);
                try (s) {
                    fabric.awaitTcpListening(server, port, s, Duration.ofSeconds(20));
                    List<String> clientCmd = new ArrayList<>(cmd);
                    clientCmd.add(server.addr());
                    Proc c = fabric.startApp(client, tool + "-client-" + dev, clientCmd);
                    try (c) {
                        AppPair.Exits exits = AppPair.await(fabric, s, c, RUN_TIMEOUT);
                        String context = tool + " -d " + dev + "\n--- server:\n" + s.output() + "\n--- client:\n"
                                + c.output() + "\n" + fabric.diagnostics();
                        assertThat(exits.client()).as(context).isZero();
                        assertThat(exits.server()).as(context).isZero();
                        Matcher row = BW_ROW.matcher(c.output());
                        assertThat(row.find()).as("result row; %s", context).isTrue();
                        assertThat(Long.parseLong(row.group(1))).as(context).isEqualTo(65536);
                        assertThat(Long.parseLong(row.group(2))).as(context).isEqualTo(iters);
                        assertThat(Double.parseDouble(row.group(4)))
                                .as("average BW; %s", context)
                                .isPositive();
                    }
                }
            }
        }
    }

    /** Data packets device DEV of host A has sent ({@code mrce-ctl -d DEV counters}). */
    private static long dataTx(String dev) {
        String out = Ctl.run(fabric, fabric.a(), "counters", "--json", "-d", dev);
        try {
            JsonNode v = JSON.readTree(out).path("counters").path("dataTx");
            assertThat(v.isNumber()).as("dataTx of %s in %s", dev, out).isTrue();
            return v.asLong();
        } catch (IOException e) {
            throw new AssertionError("mrce-ctl counters --json -d " + dev + " is not JSON: " + out, e);
        }
    }

    private static String str(int v) {
        return Integer.toString(v);
    }
}
