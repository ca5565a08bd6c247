package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Wireshark dissector (tools/wireshark/metaroce.lua) against real traffic: a tcpdump capture in
 * host A of {@code ib_write_bw}, {@code ib_read_lat}, {@code ib_atomic_bw} and an
 * {@code mrce_integrity} run with 5 % loss on the link, decoded by {@code tshark -X lua_script:...}.
 * No packet may be malformed or carry an expert error (a bad CRC is one); each tool's opcodes must
 * be there; the QPNs and start PSNs the tools print, the QPs {@code mrce-ctl qps} lists during the
 * integrity run, and the receive tokens the connection manager's endpoints announce must be what
 * the data packets carry. First, tools/wireshark/check-golden decodes the spec's golden packets.
 */
@Timeout(900)
class WiresharkDissectorIT {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(180);
    /** perftest's "local address: LID 0000 QPN 0x0102 PSN 0x1fa9b2 ..." and the remote one. */
    private static final Pattern ADDRESS =
            Pattern.compile("(local|remote) address: LID \\S+ QPN (0x[0-9a-fA-F]+) PSN (0x[0-9a-fA-F]+)");

    private static final int OP_SEND = 1, OP_SEND_IMM = 2, OP_WRITE = 3, OP_WRITE_IMM = 4, OP_READ_REQ = 5;
    private static final int OP_READ_RESP = 6, OP_ATOMIC_CS = 7, OP_ATOMIC_FA = 8, OP_ATOMIC_RESP = 9;
    private static final int OP_ACK = 16, OP_PROBE = 18;

    private static Path lua;

    @BeforeAll
    static void tools() {
        Env.assumeNamespaces();
        for (String tool : List.of("tshark", "tcpdump", "text2pcap")) {
            assumeTrue(
                    Sh.run("sh", "-c", "command -v " + tool).ok(),
                    tool + " is not installed (Debian: apt-get install tshark tcpdump; bin/mrce-test installs them)");
        }
        lua = Env.root().resolve("tools/wireshark/metaroce.lua");
    }

    @Test
    void goldenPacketsAndConnectionManagerFramesDecode() {
        Proc.Result r = Sh.run(
                Duration.ofSeconds(120),
                List.of(Env.root().resolve("tools/wireshark/check-golden").toString()));
        assertThat(r.ok()).as("tools/wireshark/check-golden:\n%s", r.output()).isTrue();
        assertThat(r.output()).doesNotContain("FAIL").contains("ok   CRC good on the golden packets");
    }

    /** A perftest run: exit codes, and the QPN and PSN each side printed for itself and its peer. */
    record Perftest(String tool, int localQpn, int localPsn, int remoteQpn, String output) {}

    @Test
    void capturesOfPerftestAndLossyIntegrityDecodeCleanly() throws Exception {
        try (TwoHostFabric f = TwoHostFabric.direct("WiresharkDissectorIT", 1500)) {
            f.startDaemons();
            // The daemons send a path's run of packets as one GSO buffer, which veth carries whole
            // and tcpdump would see as one oversized datagram: with GSO limited to one segment on
            // both ends the kernel cuts the buffers into the datagrams a wire carries, before the
            // capture (tools/wireshark/README.md), and the daemons still send GSO buffers.
            for (NetnsFabric.Host h : List.of(f.a(), f.b())) {
                Sh.check("ip", "-n", h.ns(), "link", "set", "dev", h.ifname(), "gso_max_segs", "1");
            }
            Path pcap = f.logDir().resolve("capture.pcap");
            // Full packets (1500-byte link: at most 1514 bytes a frame), written as they come.
            Proc tcpdump = f.start(
                    f.a(),
                    "tcpdump",
                    List.of(
                            "tcpdump",
                            "-i",
                            f.a().ifname(),
                            "-s",
                            "2048",
                            "-U",
                            "-n",
                            "-w",
                            pcap.toString(),
                            "udp port 4793 or tcp port 4792"));
            assertThat(Wait.until(
                            Duration.ofSeconds(20),
                            () -> tcpdump.output().contains("listening on") || !tcpdump.isAlive()))
                    .isTrue();
            assertThat(tcpdump.isAlive()).as("tcpdump: %s", tcpdump.output()).isTrue();

            List<Perftest> runs = new ArrayList<>();
            runs.add(perftest(f, "ib_write_bw", 19300, "-s", "4096", "-n", "200"));
            runs.add(perftest(f, "ib_read_lat", 19301, "-s", "64", "-n", "100"));
            runs.add(perftest(f, "ib_atomic_bw", 19302, "-n", "100"));

            // mrce_integrity, paused after 20 messages: its QPs as the daemons list them, then 5 % loss.
            Map<Integer, Integer> integrityQps = new HashMap<>(); // qpn -> destQpn, both hosts
            Integrity.Result result;
            try (Integrity.Running run = Integrity.startPaused(f, 19303, 60, 20, 0x5eed0018L, RUN_TIMEOUT)) {
                run.awaitPaused(Duration.ofSeconds(60));
                for (NetnsFabric.Host h : List.of(f.a(), f.b())) {
                    for (JsonNode qp : Ctl.json(f, h, "qps").path("qps")) {
                        integrityQps.put(
                                qp.path("qpn").asInt(), qp.path("destQpn").asInt());
                    }
                }
                f.dropOnLink(TwoHostFabric.Loss.PCT_5);
                try {
                    run.resume();
                    result = run.finish();
                } finally {
                    f.clearDrops();
                }
            }
            String context = "\n--- integrity server:\n" + result.server().output() + "\n--- client:\n"
                    + result.client().output();
            assertThat(result.client().ok())
                    .as("mrce_integrity client OK" + context)
                    .isTrue();
            assertThat(result.server().ok())
                    .as("mrce_integrity server OK" + context)
                    .isTrue();
            assertThat(result.client().checksum())
                    .as("checksums" + context)
                    .isEqualTo(result.server().checksum());
            assertThat(integrityQps)
                    .as("QPs mrce-ctl listed while mrce_integrity paused")
                    .isNotEmpty();

            // tcpdump writes each packet as it comes (-U); SIGTERM ends the file cleanly.
            tcpdump.stop(Duration.ofSeconds(10));
            Decoded d = decode(pcap);
            String where = " (capture " + pcap + ", " + d.packets.size() + " MetaRoCE packets, " + d.cm.size()
                    + " CM endpoints)";

            assertThat(d.malformed).as("malformed frames" + where).isEmpty();
            assertThat(d.errors)
                    .as("frames with an expert error (a bad CRC is one)" + where)
                    .isEmpty();
            assertThat(d.packets).as("MetaRoCE packets" + where).isNotEmpty();
            assertThat(d.packets).as("every CRC verified and good" + where).allMatch(p -> p.crc.equals("Good"));

            Map<String, Set<Integer>> opcodesOf = Map.of(
                    "ib_write_bw", Set.of(OP_WRITE),
                    "ib_read_lat", Set.of(OP_READ_REQ, OP_READ_RESP),
                    "ib_atomic_bw", Set.of(OP_ATOMIC_RESP));
            for (Perftest run : runs) {
                // the requester's packets to its peer, as the client printed the QPNs
                List<Packet> sent = d.between(run.localQpn, run.remoteQpn);
                assertThat(sent)
                        .as("%s: packets from QP 0x%x to 0x%x%s", run.tool, run.localQpn, run.remoteQpn, where)
                        .isNotEmpty();
                List<Packet> back = d.between(run.remoteQpn, run.localQpn);
                Set<Integer> ops = new HashSet<>();
                sent.forEach(p -> ops.add(p.opcode));
                back.forEach(p -> ops.add(p.opcode));
                assertThat(ops)
                        .as("%s opcodes%s", run.tool, where)
                        .containsAll(opcodesOf.get(run.tool))
                        .contains(OP_ACK);
                if (run.tool.equals("ib_atomic_bw")) {
                    assertThat(ops).as("ib_atomic_bw sends atomics").containsAnyOf(OP_ATOMIC_CS, OP_ATOMIC_FA);
                }
                // The first RSN of the request stream is the QP's sq_psn, the PSN perftest printed (spec T-3.1).
                long firstRsn = sent.stream()
                        .filter(p -> p.rsn >= 0 && p.opcode <= OP_ATOMIC_FA && p.opcode != OP_READ_RESP)
                        .mapToLong(p -> p.rsn)
                        .min()
                        .orElse(-1);
                assertThat(firstRsn)
                        .as("%s: first RSN = the PSN perftest printed, 0x%x%s", run.tool, run.localPsn, where)
                        .isEqualTo(run.localPsn);
                assertTokensAnnounced(d, run.localQpn, run.remoteQpn, run.tool + where);
            }

            // mrce_integrity: every QP mrce-ctl listed in A sent packets with its QPN pair, and
            // the loss shows as retransmissions and gap losses in the path reports.
            boolean anyIntegrityPackets = false;
            for (Map.Entry<Integer, Integer> qp : integrityQps.entrySet()) {
                List<Packet> sent = d.between(qp.getKey(), qp.getValue());
                assertThat(sent)
                        .as("packets from QP 0x%x to 0x%x (mrce-ctl qps)%s", qp.getKey(), qp.getValue(), where)
                        .isNotEmpty();
                assertThat(integrityQps.get(qp.getValue()))
                        .as("the peer QP lists this one as its destination")
                        .isEqualTo(qp.getKey());
                anyIntegrityPackets |= sent.stream()
                        .anyMatch(p -> p.opcode == OP_SEND
                                || p.opcode == OP_SEND_IMM
                                || p.opcode == OP_WRITE
                                || p.opcode == OP_WRITE_IMM);
                assertTokensAnnounced(d, qp.getKey(), qp.getValue(), "mrce_integrity" + where);
            }
            assertThat(anyIntegrityPackets)
                    .as("mrce_integrity's data packets" + where)
                    .isTrue();
            assertThat(d.packets.stream().filter(p -> p.retransmit).count())
                    .as("retransmissions under 5 %% loss" + where)
                    .isPositive();
            assertThat(d.packets.stream().filter(p -> p.gapLosses > 0).count())
                    .as("ACKs reporting gap losses under 5 %% loss" + where)
                    .isPositive();
        }
    }

    /**
     * The receive token each QP announced in its connection-manager endpoint (CONNECT or ACCEPT)
     * is the token field of the packets its peer sent it (spec T-2.7, CM-4.2): all data and probes,
     * and every answer (ACK, NAK, response) but those sent before the peer's handshake completed,
     * which carry 0 (and are dropped by the receiver).
     */
    private static void assertTokensAnnounced(Decoded d, int qpn, int peerQpn, String what) {
        for (int[] dir : new int[][] {{qpn, peerQpn}, {peerQpn, qpn}}) {
            Long announced = d.cm.get(dir[1]);
            assertThat(announced)
                    .as("%s: endpoint of QP 0x%x in the CM frames", what, dir[1])
                    .isNotNull();
            List<Packet> to = d.between(dir[0], dir[1]);
            assertThat(to)
                    .as("%s: tokens to QP 0x%x (announced 0x%x)", what, dir[1], announced)
                    .allMatch(p -> p.token == announced
                            || (p.token == 0
                                    && p.opcode >= OP_READ_RESP
                                    && p.opcode != OP_ATOMIC_CS
                                    && p.opcode != OP_ATOMIC_FA
                                    && p.opcode != OP_PROBE))
                    .anyMatch(p -> p.token == announced);
        }
    }

    private static Perftest perftest(TwoHostFabric f, String tool, int port, String... extra) {
        List<String> cmd = new ArrayList<>(List.of(tool, "-d", "mrce0", "-x", "0", "-F", "-p", Integer.toString(port)));
        cmd.addAll(List.of(extra));
        Proc server = f.startApp(f.b(), tool + "-server", cmd);
        Proc client;
        try {
            f.awaitTcpListening(f.b(), port, server, Duration.ofSeconds(20));
            List<String> clientCmd = new ArrayList<>(cmd);
            clientCmd.add(f.appServerAddr());
            client = f.startApp(f.a(), tool + "-client", clientCmd);
        } catch (RuntimeException | Error e) {
            server.close();
            throw e;
        }
        try (server;
                client) {
            AppPair.Exits exits = AppPair.await(f, server, client, RUN_TIMEOUT);
            String out = "--- client:\n" + client.output() + "\n--- server:\n" + server.output();
            assertThat(exits.client()).as("%s client exit\n%s", tool, out).isZero();
            assertThat(exits.server()).as("%s server exit\n%s", tool, out).isZero();
            int localQpn = -1;
            int localPsn = -1;
            int remoteQpn = -1;
            Matcher m = ADDRESS.matcher(client.output());
            while (m.find()) {
                int qpn = Integer.decode(m.group(2));
                if (m.group(1).equals("local")) {
                    localQpn = qpn;
                    localPsn = Integer.decode(m.group(3));
                } else {
                    remoteQpn = qpn;
                }
            }
            assertThat(localQpn).as("%s printed its QPN\n%s", tool, out).isNotNegative();
            assertThat(remoteQpn).as("%s printed its peer's QPN\n%s", tool, out).isNotNegative();
            return new Perftest(tool, localQpn, localPsn, remoteQpn, out);
        }
    }

    /** One decoded MetaRoCE packet: the fields the test checks. */
    record Packet(
            int frame,
            int opcode,
            int srcQpn,
            int dstQpn,
            long token,
            long rsn,
            boolean retransmit,
            String crc,
            int gapLosses) {}

    /** What tshark made of the capture. */
    record Decoded(List<Packet> packets, Map<Integer, Long> cm, List<String> malformed, List<String> errors) {
        List<Packet> between(int src, int dst) {
            return packets.stream()
                    .filter(p -> p.srcQpn == src && p.dstQpn == dst)
                    .toList();
        }
    }

    private static List<String[]> tshark(Path pcap, String filter, String... fields) {
        List<String> cmd = new ArrayList<>(List.of(
                "tshark",
                "-n",
                "-r",
                pcap.toString(),
                "-X",
                "lua_script:" + lua,
                "-Y",
                filter,
                "-T",
                "fields",
                "-E",
                "separator=/t",
                "-E",
                "aggregator=,"));
        for (String field : fields) {
            cmd.add("-e");
            cmd.add(field);
        }
        Proc.Result r = Sh.run(Duration.ofSeconds(300), cmd);
        assertThat(r.ok()).as("tshark on %s: %s", pcap, r.output()).isTrue();
        List<String[]> rows = new ArrayList<>();
        for (String line : r.output().split("\n")) {
            // tshark's own notes (running as root) go to stderr, which Sh merges: keep field rows only
            if (line.isBlank() || !Character.isDigit(line.charAt(0))) {
                continue;
            }
            rows.add(line.split("\t", -1));
        }
        return rows;
    }

    private static Decoded decode(Path pcap) {
        List<Packet> packets = new ArrayList<>();
        for (String[] r : tshark(
                pcap,
                "metaroce",
                "frame.number",
                "metaroce.opcode",
                "metaroce.src_qpn",
                "metaroce.dst_qpn",
                "metaroce.token",
                "metaroce.rsn",
                "metaroce.flags.retransmit",
                "metaroce.crc.status",
                "metaroce.report.gap_losses")) {
            int gaps = 0;
            for (String g : r[8].split(",")) {
                gaps += g.isEmpty() ? 0 : Integer.parseInt(g);
            }
            packets.add(new Packet(
                    Integer.parseInt(r[0]),
                    Integer.parseInt(r[1]),
                    Integer.decode(r[2]),
                    Integer.decode(r[3]),
                    r[4].isEmpty() ? -1 : Long.decode(r[4]),
                    r[5].isEmpty() ? -1 : Long.parseLong(r[5]),
                    r[6].equals("1") || r[6].equalsIgnoreCase("true"),
                    r[7],
                    gaps));
        }
        Map<Integer, Long> cm = new HashMap<>();
        for (String[] r : tshark(
                pcap,
                "metaroce_cm.endpoint.qpn",
                "frame.number",
                "metaroce_cm.endpoint.qpn",
                "metaroce_cm.endpoint.token")) {
            String[] qpns = r[1].split(",");
            String[] tokens = r[2].split(",");
            for (int i = 0; i < qpns.length; i++) {
                cm.put(Integer.decode(qpns[i]), Long.decode(tokens[i]));
            }
        }
        List<String> malformed = new ArrayList<>();
        for (String[] r : tshark(pcap, "_ws.malformed", "frame.number")) {
            malformed.add(r[0]);
        }
        List<String> errors = new ArrayList<>();
        for (String[] r : tshark(pcap, "_ws.expert.severity == error", "frame.number", "_ws.expert.message")) {
            errors.add(String.join(" ", r));
        }
        return new Decoded(packets, cm, malformed, errors);
    }
}
