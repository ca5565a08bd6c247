package io.metaroce.nic.admin;

import io.metaroce.abi.IpAddr;
import io.metaroce.control.AdminHandler;
import io.metaroce.control.AdminServer;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.engine.Telemetry;
import io.metaroce.nic.verbs.NetInfo;
import io.metaroce.nic.verbs.VerbsService;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * The daemon's answers on the admin socket (mrce-ctl):
 *
 * <ul>
 *   <li>{@code device}: the served device, netdev, address, port kind, transport settings;
 *   <li>{@code stats}: the engine's telemetry snapshot (counters, every QP and its paths): the
 *       counters read on this thread, the QPs copied by the engine, the JSON made here;
 *   <li>{@code objects}: the verbs objects per provider connection, and the daemon's own open
 *       file descriptors and memory mappings (from /proc/self), for leak checks.
 * </ul>
 */
public final class DaemonAdmin implements AdminHandler {
    private static final long SNAPSHOT_TIMEOUT_MS = 2000;
    private final EngineAgent engine;
    private final VerbsService verbs;
    private final String deviceJson;
    private final String ifname;

    public DaemonAdmin(
            EngineAgent engine, VerbsService verbs, NetInfo net, String portKind, int udpPort, Path controlSocket) {
        this.engine = engine;
        this.verbs = verbs;
        this.ifname = net.ifname();
        String ip = IpAddr.toString(net.ipv4());
        this.deviceJson = "{\"device\":" + AdminServer.jsonString(verbs.devName())
                + ",\"ifname\":" + AdminServer.jsonString(net.ifname())
                + ",\"ipv4\":" + AdminServer.jsonString(ip)
                + ",\"gid\":" + AdminServer.jsonString(IpAddr.isV6(net.ipv4()) ? ip : "::ffff:" + ip)
                + ",\"ifMtu\":" + net.mtu()
                + ",\"port\":" + AdminServer.jsonString(portKind)
                + ",\"udpPort\":" + udpPort
                + ",\"transport\":"
                + AdminServer.jsonString(engine.datapath().settings.transportName())
                + ",\"pathsPerQp\":" + engine.datapath().settings.pathsPerQp()
                + ",\"controlSocket\":" + AdminServer.jsonString(controlSocket.toString())
                + ",\"pid\":" + ProcessHandle.current().pid();
    }

    @Override
    public String handle(String command) {
        return switch (command) {
            case "device" -> deviceJson + ",\"linkUp\":" + linkUp() + "}";
            case "stats" -> stats();
            case "objects" -> objects();
            default -> throw new IllegalArgumentException("unknown command '" + command + "' (device, stats, objects)");
        };
    }

    /** The engine's telemetry; throws when the engine does not answer in time. */
    public Telemetry telemetry() {
        return Telemetry.take(engine, SNAPSHOT_TIMEOUT_MS);
    }

    /** The engine's telemetry as JSON, made here (the admin socket's thread), not on the engine thread. */
    public String stats() {
        return telemetry().toJson();
    }

    private String objects() {
        String v = verbs.objectsJson();
        return v.substring(0, v.length() - 1) + ",\"daemon\":{\"openFds\":" + count(Path.of("/proc/self/fd"))
                + ",\"mappings\":" + lines(Path.of("/proc/self/maps")) + "}}";
    }

    private boolean linkUp() {
        try {
            return "1"
                    .equals(Files.readString(Path.of("/sys/class/net", ifname, "carrier"))
                            .trim());
        } catch (IOException e) {
            return false; // reading carrier of a down interface fails with EINVAL
        }
    }

    private static long count(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.count();
        } catch (IOException e) {
            return -1;
        }
    }

    private static long lines(Path file) {
        try (Stream<String> s = Files.lines(file)) {
            return s.count();
        } catch (IOException | java.io.UncheckedIOException e) {
            return -1;
        }
    }
}
