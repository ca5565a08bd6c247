package io.metaroce.nic.engine;

import io.metaroce.nic.port.PortCounters;
import io.metaroce.nic.transport.Path;
import io.metaroce.nic.transport.Qp;
import io.metaroce.nic.transport.RcRequester;
import io.metaroce.nic.transport.TransportCounters;
import io.metaroce.nic.transport.UdTransport;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One snapshot of an engine's telemetry, numbers only: what mrce-ctl stats, {@code --stats} and
 * the Prometheus endpoint show. The daemon-wide counters (transport, UD, loopback, port) are read
 * by the thread that takes the snapshot, with opaque loads of the fields the engine thread alone
 * writes; the QPs and their paths, which the engine adds, removes and changes, are copied by the
 * engine thread in one command ({@link EngineAgent#qpTelemetry}). JSON is made from the snapshot
 * on the reader's thread ({@link #toJson}); the engine never builds a string for it.
 *
 * @param timeNs when it was taken
 * @param transport "metaroce" or "baseline"
 * @param pathsPerQp the paths each RC QP uses
 * @param ecnReadable whether the port reads the ECN bits of received packets
 * @param groups the daemon-wide counters: "counters" (transport), "ud", "loopback", "port" (and on a
 *     multi-plane device "plane0", "plane1" ...: each plane's frame counters)
 * @param qps the active QPs
 * @param closedQps the QPs removed lately (a snapshot after an application exits still shows them)
 */
public record Telemetry(
        long timeNs,
        String transport,
        int pathsPerQp,
        boolean ecnReadable,
        List<Group> groups,
        List<QpRow> qps,
        List<QpRow> closedQps) {

    /** The QPs an engine copied: the active ones and those removed lately. */
    public record QpRows(List<QpRow> active, List<QpRow> closed) {}

    /** A group of counters: {@code values[i]} is counter {@code keys[i]}. */
    public record Group(String name, List<String> keys, long[] values) {}

    /** What the engine copies of one QP (and its paths, RC only). */
    public record QpRow(
            int qpn,
            int destQpn,
            int state,
            boolean closed,
            int unackedPackets,
            int window,
            int receiveWindow,
            int sendsOutstanding,
            int recvsOutstanding,
            List<PathRow> paths) {}

    /**
     * One path of an RC QP: its id, its state ("active", "suspect", "dead") and the numbers of
     * {@link #PATH_KEYS}, in that order.
     */
    public record PathRow(int id, String state, long[] values) {}

    /** A path's numbers; {@code entropy} first (the JSON puts the state after it). */
    public static final List<String> PATH_KEYS = List.of(
            "entropy",
            "minRttNs",
            "srttNs",
            "rttvarNs",
            "inflightBytes",
            "cwndBytes",
            "deliveryRateBps",
            "packetsSent",
            "bytesSent",
            "deliveredBytes",
            "retransmitsSent",
            "losses",
            "timeouts",
            "tlps",
            "ecnMarks",
            "replacements",
            "probesSent");

    // The counter groups: JSON key, and the field read when it differs ("key:field").
    private static final Reader TRANSPORT = new Reader(
            TransportCounters.class,
            "dataTx",
            "dataRetransmits",
            "dataRx",
            "duplicates",
            "acksTx",
            "acksRx",
            "staleAcks",
            "naksTx",
            "naksRx",
            "outOfWindow",
            "rnrDrops",
            "malformed",
            "timeouts",
            "pathLosses",
            "pathTimeouts",
            "pathRetirements",
            "tlps",
            "probesTx",
            "probesRx",
            "gapsDetected",
            "crossPathLosses",
            "spuriousLosses",
            "opportunisticRetransmits",
            "entropyRedraws",
            "homeTrials",
            "homeReturns",
            "sequenceNaksTx",
            "ecnMarksRx");
    private static final Reader UD = new Reader(
            UdTransport.class,
            "packetsTx",
            "packetsRx",
            "qkeyDrops",
            "noRecvDrops",
            "cqFullDrops",
            "stateDrops",
            "malformed",
            "recvErrors",
            "sendErrors");
    private static final Reader PLANE =
            new Reader(PortCounters.class, "rxFrames", "txFrames", "txErrors", "rxTruncated", "rxShort");
    private static final Reader LOOPBACK = new Reader(LoopbackPort.class, "frames:looped", "drops");
    private static final Reader PORT = new Reader(
            PortCounters.class,
            "rxFrames",
            "txFrames",
            "txErrors",
            "rxTruncated",
            "rxShort",
            "rxBadVersion",
            "rxBadCrc",
            "rxUnknownQp",
            "rxBadOpcode",
            "rxBadToken",
            "rxBadSource");

    /**
     * Takes a snapshot of {@code engine} from another thread: the engine copies its QPs in a
     * command (waited for at most {@code timeoutMs}), this thread reads the counters.
     */
    public static Telemetry take(EngineAgent engine, long timeoutMs) {
        CompletableFuture<QpRows> rows = new CompletableFuture<>();
        if (!engine.submit(() -> rows.complete(engine.qpTelemetry()))) {
            throw new IllegalStateException("engine command queue full");
        }
        try {
            return of(engine, System.nanoTime(), rows.get(timeoutMs, TimeUnit.MILLISECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("engine snapshot: " + e);
        }
    }

    /** The snapshot of {@code engine} with the QP rows it copied; reads the counters on this thread. */
    static Telemetry of(EngineAgent engine, long timeNs, QpRows rows) {
        var settings = engine.datapath().settings;
        return new Telemetry(
                timeNs,
                settings.transportName(),
                settings.pathsPerQp(),
                engine.port().readsEcn(),
                groups(engine),
                rows.active(),
                rows.closed());
    }

    /**
     * The daemon-wide groups of {@code engine}; a multi-plane port adds one group of frame
     * counters per plane, "plane0", "plane1" ...
     */
    private static List<Group> groups(EngineAgent engine) {
        List<Group> groups = new java.util.ArrayList<>(List.of(
                TRANSPORT.read("counters", engine.datapath().counters), UD.read("ud", engine.ud()),
                LOOPBACK.read("loopback", engine.loopback()), PORT.read("port", engine.portCounters())));
        int planes = engine.port().planes();
        for (int k = 0; planes > 1 && k < planes; k++) {
            groups.add(PLANE.read("plane" + k, engine.port().planeCounters(k)));
        }
        return List.copyOf(groups);
    }

    /** The transport counters as their group (what "counters" of a snapshot holds). */
    static Group transportCounters(TransportCounters c) {
        return TRANSPORT.read("counters", c);
    }

    /** Engine thread: a copy of {@code qp}'s numbers. */
    static QpRow row(Qp qp, boolean closed) {
        RcRequester r = qp.requester;
        PathRow[] paths = new PathRow[r.pathCount()];
        for (int i = 0; i < paths.length; i++) {
            Path p = r.path(i);
            paths[i] = new PathRow(p.id, p.stateName(), new long[] {
                p.entropy,
                p.hasRtt() ? p.minRttNs : 0,
                p.srttNs,
                p.rttvarNs,
                p.inflightBytes,
                p.cwndBytes,
                p.deliveryRateBps,
                p.packetsSent,
                p.bytesSent,
                p.deliveredBytes,
                p.retransmitsSent,
                p.losses,
                p.timeouts,
                p.tlps,
                p.ecnMarks,
                p.replacements,
                p.probesSent
            });
        }
        return new QpRow(
                qp.qpn,
                qp.destQpNum,
                qp.state,
                closed,
                r.unacknowledged(),
                r.window(),
                r.receiveWindow(),
                r.outstanding(),
                qp.responder.outstanding(),
                List.of(paths));
    }

    /** The group named {@code name}, or null. */
    public Group group(String name) {
        for (Group g : groups) {
            if (g.name().equals(name)) {
                return g;
            }
        }
        return null;
    }

    /** The snapshot as the JSON document of mrce-ctl stats and --stats (one line, no newline). */
    public String toJson() {
        StringBuilder b = new StringBuilder(4096);
        b.append("{\"timeNs\":")
                .append(timeNs)
                .append(",\"transport\":\"")
                .append(transport)
                .append("\",\"pathsPerQp\":")
                .append(pathsPerQp)
                .append(",\"ecnReadable\":")
                .append(ecnReadable);
        for (Group g : groups) {
            b.append(",\"").append(g.name()).append("\":");
            appendGroup(b, g);
        }
        b.append(",\"qps\":");
        appendQps(b, qps);
        b.append(",\"closedQps\":");
        appendQps(b, closedQps);
        return b.append('}').toString();
    }

    static void appendGroup(StringBuilder b, Group g) {
        b.append('{');
        for (int i = 0; i < g.keys().size(); i++) {
            b.append(i == 0 ? "" : ",")
                    .append('"')
                    .append(g.keys().get(i))
                    .append("\":")
                    .append(g.values()[i]);
        }
        b.append('}');
    }

    private static void appendQps(StringBuilder b, List<QpRow> rows) {
        b.append('[');
        for (int q = 0; q < rows.size(); q++) {
            QpRow r = rows.get(q);
            b.append(q == 0 ? "" : ",")
                    .append("{\"qpn\":")
                    .append(r.qpn())
                    .append(",\"destQpn\":")
                    .append(r.destQpn())
                    .append(",\"state\":")
                    .append(r.state())
                    .append(",\"closed\":")
                    .append(r.closed())
                    .append(",\"unackedPackets\":")
                    .append(r.unackedPackets())
                    .append(",\"window\":")
                    .append(r.window())
                    .append(",\"receiveWindow\":")
                    .append(r.receiveWindow())
                    .append(",\"sendsOutstanding\":")
                    .append(r.sendsOutstanding())
                    .append(",\"recvsOutstanding\":")
                    .append(r.recvsOutstanding())
                    .append(",\"paths\":[");
            for (int i = 0; i < r.paths().size(); i++) {
                PathRow p = r.paths().get(i);
                long[] v = p.values();
                b.append(i == 0 ? "" : ",")
                        .append("{\"id\":")
                        .append(p.id())
                        .append(",\"entropy\":")
                        .append(v[0])
                        .append(",\"state\":\"")
                        .append(p.state())
                        .append('"');
                for (int k = 1; k < v.length; k++) {
                    b.append(",\"").append(PATH_KEYS.get(k)).append("\":").append(v[k]);
                }
                b.append('}');
            }
            b.append("]}");
        }
        b.append(']');
    }

    /** Reads named long fields of one counter class with opaque loads (their writer is the engine thread). */
    private static final class Reader {
        private final List<String> keys;
        private final VarHandle[] fields;

        Reader(Class<?> type, String... spec) {
            String[] keys = new String[spec.length];
            fields = new VarHandle[spec.length];
            try {
                MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(type, MethodHandles.lookup());
                for (int i = 0; i < spec.length; i++) {
                    int colon = spec[i].indexOf(':');
                    keys[i] = colon < 0 ? spec[i] : spec[i].substring(0, colon);
                    fields[i] = lookup.findVarHandle(type, spec[i].substring(colon + 1), long.class);
                }
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
            this.keys = List.of(keys);
        }

        Group read(String name, Object counters) {
            long[] values = new long[fields.length];
            for (int i = 0; i < values.length; i++) {
                values[i] = (long) fields[i].getOpaque(counters);
            }
            return new Group(name, keys, values);
        }
    }
}
