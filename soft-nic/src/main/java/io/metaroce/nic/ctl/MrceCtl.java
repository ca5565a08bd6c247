package io.metaroce.nic.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.metaroce.control.AdminClient;
import io.metaroce.control.LocalControlPaths;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * mrce-ctl: the operator's view into the soft-NIC daemon of this network namespace, over its
 * admin socket. Tables by default, the daemon's JSON with {@code --json}.
 */
@Command(
        name = "mrce-ctl",
        mixinStandardHelpOptions = true,
        description = "Shows the MetaRoCE daemon of this network namespace: devices, qps, paths, counters, objects.")
public final class MrceCtl implements Callable<Integer> {
    @Parameters(
            index = "0",
            defaultValue = "paths",
            description = "devices | qps | paths | counters | objects (default paths)")
    String what;

    @Option(names = "--json", description = "print the daemon's JSON instead of a table")
    boolean jsonOut;

    @Option(
            names = "--sock",
            description = "the daemon's control socket (default /tmp/metaroce/nicd-<netns inode>.sock);"
                    + " the admin socket is beside it")
    Path sock;

    @Option(
            names = {"-d", "--device"},
            paramLabel = "NAME",
            description = "the device to show (default mrce0; the devices view shows every device of this namespace)")
    String device;

    @Option(names = "--watch", description = "repeat every N seconds until interrupted")
    Integer watch;

    private final ObjectMapper mapper = new ObjectMapper();
    private PrintStream out = System.out;

    public static void main(String[] args) {
        System.exit(new CommandLine(new MrceCtl()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        String command = switch (what) {
            case "devices", "device" -> "device";
            case "qps", "paths", "counters" -> "stats";
            case "objects" -> "objects";
            default -> null;
        };
        if (command == null) {
            System.err.println("mrce-ctl: unknown view '" + what + "' (devices, qps, paths, counters, objects)");
            return 2;
        }
        if (device != null && !device.matches("[A-Za-z0-9_]{1,15}")) {
            System.err.println("mrce-ctl: --device " + device + ": not a device name");
            return 2;
        }
        // The devices view with no socket named: every device of this namespace, one row each.
        boolean allDevices = "device".equals(command) && sock == null && device == null;
        do {
            List<Path> controls = sock != null
                    ? List.of(sock)
                    : device != null
                            ? List.of(LocalControlPaths.socketPathFor(device))
                            : allDevices
                                    ? LocalControlPaths.deviceSocketPaths()
                                    : List.of(LocalControlPaths.defaultSocketPath());
            if (controls.isEmpty()) {
                System.err.println("mrce-ctl: no daemon in this network namespace (no control socket in "
                        + LocalControlPaths.defaultSocketPath().getParent() + ")");
                return 1;
            }
            boolean header = true;
            for (Path control : controls) {
                Path admin = LocalControlPaths.adminSocketPathFor(control);
                String answer;
                try {
                    answer = AdminClient.query(admin, command);
                } catch (IOException e) {
                    System.err.println("mrce-ctl: no daemon at " + admin + ": " + e.getMessage()
                            + " (is mrce-nicd running in this network namespace?)");
                    return 1;
                }
                JsonNode root = mapper.readTree(answer);
                if (root.has("error")) {
                    System.err.println(
                            "mrce-ctl: daemon says: " + root.get("error").asText());
                    return 1;
                }
                if (jsonOut) {
                    out.println(answer);
                } else {
                    render(root, header);
                }
                header = false;
            }
            if (watch != null) {
                Thread.sleep(Math.max(1, watch) * 1000L);
                out.println();
            }
        } while (watch != null);
        return 0;
    }

    void render(JsonNode root) {
        render(root, true);
    }

    /** Renders one daemon answer; HEADER false for the second and later devices of a table. */
    void render(JsonNode root, boolean header) {
        switch (what) {
            case "devices", "device" -> {
                if (header) {
                    out.printf(
                            "%-8s %-12s %-16s %-24s %-6s %-6s %-10s %-5s %s%n",
                            "DEVICE", "IFNAME", "IPV4", "GID", "MTU", "PORT", "TRANSPORT", "PATHS", "LINK");
                }
                out.printf(
                        "%-8s %-12s %-16s %-24s %-6d %-6s %-10s %-5d %s%n",
                        root.path("device").asText(),
                        root.path("ifname").asText(),
                        root.path("ipv4").asText(),
                        root.path("gid").asText(),
                        root.path("ifMtu").asInt(),
                        root.path("port").asText(),
                        root.path("transport").asText(),
                        root.path("pathsPerQp").asInt(),
                        root.path("linkUp").asBoolean() ? "up" : "down");
            }
            case "qps" -> {
                out.printf(
                        "%-8s %-8s %-6s %-6s %-10s %-8s %-8s %-8s %-8s%n",
                        "QPN", "DESTQPN", "STATE", "PATHS", "UNACKED", "WINDOW", "RWND", "SENDS", "RECVS");
                for (JsonNode qp : root.path("qps")) {
                    out.printf(
                            "%-8d %-8d %-6s %-6d %-10d %-8d %-8d %-8d %-8d%n",
                            qp.path("qpn").asInt(),
                            qp.path("destQpn").asInt(),
                            state(qp.path("state").asInt()),
                            qp.path("paths").size(),
                            qp.path("unackedPackets").asLong(),
                            qp.path("window").asLong(),
                            qp.path("receiveWindow").asLong(),
                            qp.path("sendsOutstanding").asLong(),
                            qp.path("recvsOutstanding").asLong());
                }
            }
            case "paths" -> {
                out.printf(
                        "%-8s %-4s %-7s %-7s %-9s %-9s %-10s %-10s %-10s %-10s %-7s %-7s %-6s%n",
                        "QPN",
                        "PATH",
                        "ENTROPY",
                        "STATE",
                        "RTT_US",
                        "MINRTT_US",
                        "INFLIGHT_B",
                        "CWND_B",
                        "RATE_MBPS",
                        "SENT_PKTS",
                        "RETX",
                        "LOSSES",
                        "ECN");
                for (JsonNode qp : root.path("qps")) {
                    for (JsonNode p : qp.path("paths")) {
                        out.printf(
                                "%-8d %-4d %-7d %-7s %-9.1f %-9.1f %-10d %-10d %-10.1f %-10d %-7d %-7d %-6d%n",
                                qp.path("qpn").asInt(),
                                p.path("id").asInt(),
                                p.path("entropy").asInt(),
                                p.path("state").asText(),
                                p.path("srttNs").asLong() / 1000.0,
                                p.path("minRttNs").asLong() / 1000.0,
                                p.path("inflightBytes").asLong(),
                                p.path("cwndBytes").asLong(),
                                p.path("deliveryRateBps").asDouble() * 8 / 1e6,
                                p.path("packetsSent").asLong(),
                                p.path("retransmitsSent").asLong(),
                                p.path("losses").asLong(),
                                p.path("ecnMarks").asLong());
                    }
                }
            }
            case "counters" -> {
                counters("transport", root.path("counters"));
                counters("port", root.path("port"));
                for (int k = 0; root.has("plane" + k); k++) {
                    counters("plane" + k, root.path("plane" + k)); // a multi-plane device's planes
                }
            }
            case "objects" -> {
                JsonNode t = root.path("totals");
                out.printf(
                        "sessions %d  pds %d  mrs %d  cqs %d  qps %d  comp channels %d%n",
                        root.path("sessions").asInt(),
                        t.path("pds").asInt(),
                        t.path("mrs").asInt(),
                        t.path("cqs").asInt(),
                        t.path("qps").asInt(),
                        t.path("compChannels").asInt());
                JsonNode d = root.path("daemon");
                out.printf(
                        "daemon: open fds %d  memory mappings %d%n",
                        d.path("openFds").asLong(), d.path("mappings").asLong());
                JsonNode cm = root.path("cmService");
                if (!cm.isMissingNode()) {
                    out.printf(
                            "connection service: listening %d  bound %d  held %d  kept %d  connecting %d%n",
                            cm.path("listening").asInt(),
                            cm.path("bound").asInt(),
                            cm.path("held").asInt(),
                            cm.path("kept").asInt(),
                            cm.path("connecting").asInt());
                }
                out.printf("%-8s %-8s %-5s %-5s %-5s %-5s%n", "SESSION", "PID", "PDS", "MRS", "CQS", "QPS");
                for (JsonNode s : root.path("perSession")) {
                    out.printf(
                            "%-8d %-8d %-5d %-5d %-5d %-5d%n",
                            s.path("id").asLong(),
                            s.path("pid").asInt(),
                            s.path("pds").asInt(),
                            s.path("mrs").asInt(),
                            s.path("cqs").asInt(),
                            s.path("qps").asInt());
                }
            }
            default -> throw new IllegalStateException(what);
        }
    }

    private void counters(String group, JsonNode node) {
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            out.printf("%-10s %-24s %d%n", group, f.getKey(), f.getValue().asLong());
        }
    }

    private static String state(int s) {
        return switch (s) {
            case 0 -> "RESET";
            case 1 -> "INIT";
            case 2 -> "RTR";
            case 3 -> "RTS";
            case 4 -> "SQD";
            case 5 -> "SQE";
            case 6 -> "ERR";
            default -> Integer.toString(s);
        };
    }
}
