package io.metaroce.nic.transport;

/**
 * The transport's settings, fixed when an engine is built (handed to {@link Datapath}'s
 * constructor; mrce-nicd makes them from its options). Immutable: a test or the daemon that wants
 * other values builds another one with the {@code with*} methods.
 *
 * @param paths paths per RC QP, 1..{@link RcRequester#MAX_PATHS}; the baseline uses one whatever this says
 * @param entropyPorts source ports the port spreads entropies over (the daemon's --entropy-ports,
 *     at least 1 there; 0: the entropy itself is the route key, as on the SimFabric); redraws of
 *     retired paths pick among these
 * @param baseline the classic-RoCE stand-in: one path, cumulative ACKs, go-back-N, fixed RTO
 * @param rtoInitialNs the retransmission timeout before any RTT sample
 * @param rtoMaxNs the largest retransmission timeout
 * @param rtoMinNs the smallest per-path RTO, and the floor of the QP RTO (at least twice it)
 * @param tlpMinNs the smallest tail-loss probe timeout (spec 8)
 * @param ccSlackMinNs the smallest slack of the delay target above min RTT (spec 11: target =
 *     min_rtt + max(min_rtt / 4, this))
 * @param lossDetectVarFactor cross-path loss detection (spec 8): a packet is lost once a packet
 *     sent after it on another path was reported delivered and it is older than srtt + this many
 *     rttvar of its own path
 * @param qpWindowGain the QP window in bandwidth-delay products of its paths (spec 10a rule 3),
 *     {@value #QP_WINDOW_GAIN}; 4 keeps a QP sending through random loss on a deep-buffered
 *     fabric, at the price of twice the packets in flight (docs/benchmarks.md, the 4-spine fabric)
 * @param probesPerQp probe budget (spec 10): probes one QP may send per epoch
 * @param probesPerDaemon probes the whole engine may send per epoch
 */
public record TransportSettings(
        int paths,
        int entropyPorts,
        boolean baseline,
        long rtoInitialNs,
        long rtoMaxNs,
        long rtoMinNs,
        long tlpMinNs,
        long ccSlackMinNs,
        int lossDetectVarFactor,
        int qpWindowGain,
        int probesPerQp,
        int probesPerDaemon) {

    /**
     * Paths per RC QP by default in the daemon: 48 reach every link of a 4-link fabric with
     * probability 0.999996 and of an 8-link one with 0.987, ECMP modelled as a uniform random
     * choice per path (spec 10, {@link PathSet#coverage}); 48 of the 64 default entropy ports
     * leave 16 unused ones for the redraws of retired paths.
     */
    public static final int DEFAULT_PATHS = 48;
    /** The RTO before any RTT sample, and the largest RTO. */
    public static final long RTO_INITIAL_NS = 5_000_000L;

    public static final long RTO_MAX_NS = 200_000_000L;
    /** {@link #qpWindowGain} by default, and its largest value. */
    public static final int QP_WINDOW_GAIN = 2;

    public static final int QP_WINDOW_GAIN_MAX = 16;

    /**
     * The in-process fabric's settings (SimFabric, MemoryLink: microsecond timing, queueing the
     * only RTT noise): 8 paths, RTO floor 200 us, TLP floor 50 us, delay-target slack 20 us. The
     * daemon's real port needs floors of milliseconds ({@link #forRealPort}).
     */
    public static final TransportSettings SIMULATION = new TransportSettings(
            8,
            0,
            false,
            RTO_INITIAL_NS,
            RTO_MAX_NS,
            200_000L,
            50_000L,
            20_000L,
            4,
            QP_WINDOW_GAIN,
            Datapath.PROBES_PER_QP,
            Datapath.PROBES_PER_DAEMON);

    public TransportSettings {
        if (paths < 1 || paths > RcRequester.MAX_PATHS) {
            throw new IllegalArgumentException("paths " + paths + ": 1.." + RcRequester.MAX_PATHS);
        }
        if (entropyPorts < 0
                || rtoMinNs < 1
                || tlpMinNs < 1
                || ccSlackMinNs < 1
                || rtoInitialNs < 1
                || rtoMaxNs < rtoInitialNs
                || lossDetectVarFactor < 1
                || qpWindowGain < 1
                || qpWindowGain > QP_WINDOW_GAIN_MAX
                || probesPerQp < 0
                || probesPerDaemon < 0) {
            throw new IllegalArgumentException("inconsistent transport settings: " + this);
        }
    }

    /**
     * The daemon's settings for a real port: the SimFabric's with the given paths, entropy ports
     * (at least 1: the entropy classes of the send sockets) and timer floors; the initial RTO is
     * at least twice the floor.
     */
    public static TransportSettings forRealPort(
            int paths, int entropyPorts, boolean baseline, long rtoMinNs, long tlpMinNs, long ccSlackMinNs) {
        return new TransportSettings(
                paths,
                Math.max(1, entropyPorts),
                baseline,
                Math.max(RTO_INITIAL_NS, 2 * rtoMinNs),
                RTO_MAX_NS,
                rtoMinNs,
                tlpMinNs,
                ccSlackMinNs,
                SIMULATION.lossDetectVarFactor,
                SIMULATION.qpWindowGain,
                SIMULATION.probesPerQp,
                SIMULATION.probesPerDaemon);
    }

    /** Paths a QP actually uses: "baseline means one path" is said here. */
    public int pathsPerQp() {
        return baseline ? 1 : paths;
    }

    /** The transport's name, as mrce-nicd --transport and the stats call it. */
    public String transportName() {
        return baseline ? "baseline" : "metaroce";
    }

    public TransportSettings withPaths(int n) {
        return new TransportSettings(
                n,
                entropyPorts,
                baseline,
                rtoInitialNs,
                rtoMaxNs,
                rtoMinNs,
                tlpMinNs,
                ccSlackMinNs,
                lossDetectVarFactor,
                qpWindowGain,
                probesPerQp,
                probesPerDaemon);
    }

    public TransportSettings withEntropyPorts(int n) {
        return new TransportSettings(
                paths,
                n,
                baseline,
                rtoInitialNs,
                rtoMaxNs,
                rtoMinNs,
                tlpMinNs,
                ccSlackMinNs,
                lossDetectVarFactor,
                qpWindowGain,
                probesPerQp,
                probesPerDaemon);
    }

    public TransportSettings withBaseline(boolean on) {
        return new TransportSettings(
                paths,
                entropyPorts,
                on,
                rtoInitialNs,
                rtoMaxNs,
                rtoMinNs,
                tlpMinNs,
                ccSlackMinNs,
                lossDetectVarFactor,
                qpWindowGain,
                probesPerQp,
                probesPerDaemon);
    }

    /** The timer floors (RTO, TLP) and the delay-target slack; the initial RTO stays as it is. */
    public TransportSettings withFloors(long rtoMin, long tlpMin, long ccSlackMin) {
        return new TransportSettings(
                paths,
                entropyPorts,
                baseline,
                rtoInitialNs,
                rtoMaxNs,
                rtoMin,
                tlpMin,
                ccSlackMin,
                lossDetectVarFactor,
                qpWindowGain,
                probesPerQp,
                probesPerDaemon);
    }

    public TransportSettings withCcSlackMinNs(long ns) {
        return withFloors(rtoMinNs, tlpMinNs, ns);
    }

    public TransportSettings withLossDetectVarFactor(int factor) {
        return new TransportSettings(
                paths,
                entropyPorts,
                baseline,
                rtoInitialNs,
                rtoMaxNs,
                rtoMinNs,
                tlpMinNs,
                ccSlackMinNs,
                factor,
                qpWindowGain,
                probesPerQp,
                probesPerDaemon);
    }

    public TransportSettings withQpWindowGain(int gain) {
        return new TransportSettings(
                paths,
                entropyPorts,
                baseline,
                rtoInitialNs,
                rtoMaxNs,
                rtoMinNs,
                tlpMinNs,
                ccSlackMinNs,
                lossDetectVarFactor,
                gain,
                probesPerQp,
                probesPerDaemon);
    }
}
