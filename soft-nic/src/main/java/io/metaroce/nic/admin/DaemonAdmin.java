package io.metaroce.nic.admin;

import io.metaroce.control.AdminHandler;
import io.metaroce.control.AdminServer;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.NetInfo;
import io.metaroce.nic.verbs.VerbsService;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * The daemon's answers on the admin socket (mrce-ctl):
 *
 * <ul>
 *   <li>{@code device}: the served device, netdev, address, port kind, transport settings;
 *   <li>{@code stats}: the engine's telemetry snapshot (counters, every QP and its paths), taken
 *       on the engine thread;
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

    public DaemonAdmin(EngineAgent engine, VerbsService verbs, NetInfo net, String portKind,
            int udpPort, Path controlSocket) {
        this.engine = engine;
        this.verbs = verbs;
        this.ifname = net.ifname();
        String ip = Inet4.toString(net.ipv4());
        this.deviceJson = "{\"device\":" + AdminServer.jsonString(verbs.devName())
                + ",\"ifname\":" + AdminServer.jsonString(net.ifname())
                + ",\"ipv4\":" + AdminServer.jsonString(ip)
                + ",\"gid\":" + AdminServer.jsonString("::ffff:" + ip)
                + ",\"ifMtu\":" + net.mtu()
                + ",\"port\":" + AdminServer.jsonString(portKind)
                + ",\"udpPort\":" + udpPort
                + ",\"transport\":" + AdminServer.jsonString(engine.datapath().settings.transportName())
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
            default -> throw new IllegalArgumentException(
                    "unknown command '" + command + "' (device, stats, objects)");
        };
    }

    /** The engine's snapshot, or an error document when the engine does not answer in time. */
    public String stats() {
        CompletableFuture<String> json = new CompletableFuture<>();
        if (!engine.submit(() -> json.complete(engine.statsJson(System.nanoTime())))) {
            throw new IllegalStateException("engine command queue full");
        }
        try {
            return json.get(SNAPSHOT_TIMEOUT_MS, TimeUnit.MILLISECONDS).trim();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("engine snapshot: " + e);
        }
    }

    private String objects() {
        String v = verbs.objectsJson();
        return v.substring(0, v.length() - 1) + ",\"daemon\":{\"openFds\":" + count(Path.of("/proc/self/fd"))
                + ",\"mappings\":" + lines(Path.of("/proc/self/maps")) + "}}";
    }

    private boolean linkUp() {
        try {
            return "1".equals(Files.readString(Path.of("/sys/class/net", ifname, "carrier")).trim());
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
