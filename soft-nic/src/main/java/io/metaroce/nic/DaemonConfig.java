package io.metaroce.nic;

import io.metaroce.control.cm.ConnectionManager;
import io.metaroce.nic.engine.IdleStrategy;
import io.metaroce.nic.transport.TransportSettings;
import io.metaroce.nic.verbs.UserQuota;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.TypeConversionException;

/**
 * Everything one mrce-nicd run serves with, checked once ({@link NicDaemon#config}) and immutable
 * after: the devices and their threading, packet I/O, the control socket and its users' quotas,
 * the transport, the connection manager, the idle strategy, metrics and the stats file. Each part
 * is handed to the object that uses it when that object is built.
 *
 * @param devices the devices served (one per interface)
 * @param threading how their engines are run
 * @param port the packet I/O
 * @param udpPort the data UDP port
 * @param entropyPorts send sockets on the ports above {@code udpPort} (0: send from the data port)
 * @param udpOffload the UDP port's GSO sends and GRO receives (--no-udp-offload: off)
 * @param addr the IPv4 or IPv6 address to serve instead of the interface's, or null
 * @param sock the control socket, or null for the default of each device
 * @param socketPerms the control socket's permissions ("rw-rw-rw-")
 * @param sockGroup the control socket's group, or null
 * @param quota what one user may hold
 * @param transport the transport's settings (paths, timer floors, baseline)
 * @param cm the connection manager's settings
 * @param idle the engine threads' idle strategy
 * @param metricsPort the Prometheus port of the first device, or null (off)
 * @param metricsAddr the address the metrics endpoint binds
 * @param stats the JSON telemetry file, or null
 */
record DaemonConfig(
        List<NicDaemon.Device> devices,
        Threading threading,
        PortKind port,
        int udpPort,
        int entropyPorts,
        boolean udpOffload,
        String addr,
        Path sock,
        String socketPerms,
        String sockGroup,
        UserQuota quota,
        TransportSettings transport,
        Cm cm,
        Idle idle,
        Integer metricsPort,
        String metricsAddr,
        Path stats) {

    /** The connection manager: off when {@code port} is 0; {@code secret} null when not authenticated. */
    record Cm(
            int port,
            int heartbeatMs,
            int peerTimeoutMs,
            int connectTimeoutMs,
            int disconnectGraceMs,
            Path secretFile,
            byte[] secret) {
        boolean on() {
            return port != 0;
        }

        ConnectionManager.Config managerConfig() {
            return new ConnectionManager.Config(port, heartbeatMs, peerTimeoutMs, connectTimeoutMs);
        }
    }

    /** The idle strategy of each engine thread (each thread gets its own). */
    record Idle(IdleKind kind, int spins, int yields) {
        IdleStrategy newStrategy() {
            return switch (kind) {
                case BACKOFF -> IdleStrategy.backoff(spins, yields);
                case BUSY_SPIN -> IdleStrategy.busySpin();
                case YIELD -> IdleStrategy.yielding();
            };
        }
    }

    /** The metrics port of device {@code index} (0..): the first device's plus the index; 0 stays 0 (a free port). */
    Integer metricsPortOf(int index) {
        return metricsPort == null || metricsPort == 0 ? metricsPort : Integer.valueOf(metricsPort + index);
    }

    /** Whether several devices' engines share one thread. */
    boolean sharedEngineThread() {
        return devices.size() > 1
                && (threading == Threading.SHARED
                        || (threading == Threading.AUTO
                                && Runtime.getRuntime().availableProcessors() < 4 * devices.size()));
    }

    /** An option's value: its name on the command line is its constant's, lower case, '_' as '-'. */
    interface Named {
        default String cliName() {
            return ((Enum<?>) this).name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    /** The constant of {@code type} named {@code s} on the command line, or a clear error listing them. */
    static <E extends Enum<E> & Named> E parse(Class<E> type, String s) {
        StringBuilder known = new StringBuilder();
        for (E e : type.getEnumConstants()) {
            if (e.cliName().equals(s)) {
                return e;
            }
            known.append(known.isEmpty() ? "" : ", ").append(e.cliName());
        }
        throw new TypeConversionException("'" + s + "' is not one of " + known);
    }

    /** Lets {@code cl} read every option of type {@link Named} by its command-line names. */
    static CommandLine withNamedValues(CommandLine cl) {
        register(cl, PortKind.class);
        register(cl, Threading.class);
        register(cl, TransportKind.class);
        register(cl, IdleKind.class);
        return cl;
    }

    private static <E extends Enum<E> & Named> void register(CommandLine cl, Class<E> type) {
        cl.registerConverter(type, s -> parse(type, s));
    }

    /** --port: packet I/O. */
    enum PortKind implements Named {
        UDP,
        XDP,
        XDP_NATIVE
    }

    /** --threading: how several devices' engines run. */
    enum Threading implements Named {
        AUTO,
        SHARED,
        DEDICATED
    }

    /** --transport. */
    enum TransportKind implements Named {
        METAROCE,
        BASELINE
    }

    /** --idle-strategy. */
    enum IdleKind implements Named {
        BACKOFF,
        BUSY_SPIN,
        YIELD
    }
}
