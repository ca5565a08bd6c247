package io.metaroce.nic.ctl;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.metaroce.control.AdminServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MrceCtlTest {
    static final String STATS = "{\"timeNs\":1,\"counters\":{\"dataTx\":5},\"port\":{\"rxFrames\":7},\"qps\":["
            + "{\"qpn\":17,\"destQpn\":18,\"state\":3,\"unackedPackets\":2,\"window\":64,\"receiveWindow\":256,"
            + "\"sendsOutstanding\":1,\"recvsOutstanding\":4,\"paths\":[{\"id\":0,\"entropy\":4,\"state\":\"ACTIVE\","
            + "\"srttNs\":1500,\"minRttNs\":900,\"inflightBytes\":4096,\"cwndBytes\":65536,"
            + "\"deliveryRateBps\":125000000,\"packetsSent\":11,\"retransmitsSent\":1,\"losses\":2,\"ecnMarks\":0}]}],"
            + "\"closedQps\":[]}";

    @TempDir
    Path dir;

    private String run(String... args) throws Exception {
        Path control = dir.resolve("nicd-5.sock");
        try (AdminServer server = AdminServer.bind(dir.resolve("nicd-5.admin.sock"), c -> switch (c) {
            case "stats" -> STATS;
            case "device" ->
                "{\"device\":\"mrce0\",\"ifname\":\"veth0\",\"ipv4\":\"198.18.0.1\","
                        + "\"gid\":\"::ffff:198.18.0.1\",\"ifMtu\":9000,\"port\":\"xdp\",\"transport\":\"metaroce\","
                        + "\"pathsPerQp\":8,\"linkUp\":true}";
            case "objects" ->
                "{\"sessions\":1,\"totals\":{\"pds\":1,\"mrs\":2,\"compChannels\":0,\"cqs\":1,\"qps\":1},"
                        + "\"perSession\":[{\"id\":3,\"pid\":42,\"pds\":1,\"mrs\":2,\"compChannels\":0,\"cqs\":1,\"qps\":1}],"
                        + "\"cmService\":{\"listening\":1,\"bound\":2,\"held\":3,\"kept\":4,\"connecting\":5},"
                        + "\"daemon\":{\"openFds\":30,\"mappings\":200}}";
            default -> throw new IllegalArgumentException("unknown");
        })) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            PrintStream saved = System.out;
            System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
            try {
                String[] full = new String[args.length + 2];
                System.arraycopy(args, 0, full, 0, args.length);
                full[args.length] = "--sock";
                full[args.length + 1] = control.toString();
                assertThat(new CommandLine(new MrceCtl()).execute(full)).isZero();
            } finally {
                System.setOut(saved);
            }
            return bytes.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void pathsTable() throws Exception {
        String out = run("paths");
        assertThat(out.lines().findFirst().orElseThrow()).startsWith("QPN").contains("RTT_US", "LOSSES");
        assertThat(out)
                .containsPattern(
                        "17\\s+0\\s+4\\s+ACTIVE\\s+1\\.5\\s+0\\.9\\s+4096\\s+65536\\s+1000\\.0\\s+11\\s+1\\s+2");
    }

    @Test
    void qpsDevicesCountersObjects() throws Exception {
        assertThat(run("qps")).containsPattern("17\\s+18\\s+RTS\\s+1\\s+2\\s+64\\s+256\\s+1\\s+4");
        assertThat(run("devices")).contains("mrce0", "veth0", "::ffff:198.18.0.1", "xdp", "up");
        assertThat(run("counters"))
                .containsPattern("transport\\s+dataTx\\s+5")
                .containsPattern("port\\s+rxFrames\\s+7");
        assertThat(run("objects"))
                .contains(
                        "sessions 1",
                        "qps 1",
                        "open fds 30",
                        "connection service: listening 1  bound 2  held 3  kept 4  connecting 5");
    }

    @Test
    void aBadDeviceNameIsRefusedBeforeAnySocketIsTried() {
        CommandLine cl = new CommandLine(new MrceCtl());
        PrintStream saved = System.err;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            assertThat(cl.execute("counters", "-d", "../x")).isEqualTo(2);
        } finally {
            System.setErr(saved);
        }
        assertThat(bytes.toString(StandardCharsets.UTF_8)).contains("--device ../x: not a device name");
    }

    @Test
    void jsonIsTheDaemonsDocument() throws Exception {
        String out = run("paths", "--json");
        assertThat(new ObjectMapper().readTree(out)).isEqualTo(new ObjectMapper().readTree(STATS));
    }
}
