package io.metaroce.nic.transport;

/**
 * One path of an RC QP's requester: an entropy (the UDP source port it maps to), its own PSN
 * space with a ring of the transmissions not yet resolved, an RTT estimator, a congestion window
 * and its telemetry. docs/spec/transport.md sections 8, 10 and 11. Engine thread only.
 */
public final class Path {
    public static final int ACTIVE = 0;
    public static final int SUSPECT = 1;
    public static final int DEAD = 2;
    /** Transmissions a path may have unresolved (a power of two, at least the QP window). */
    static final int RING = RcRequester.WINDOW;

    static final int RING_MASK = RING - 1;
    /** {@link #rateWindowStartNs} before the first report. */
    static final long RATE_NOT_STARTED = Long.MIN_VALUE;
    /** Marks a ring entry that is a PROBE, not a data packet. */
    static final int PROBE_LEN = -1;

    public final int id;
    public int state = ACTIVE;
    public int entropy;
    public int generation;
    int nextPsn;
    /** Oldest PSN not yet resolved (delivered or lost). */
    int una;

    /*
     * The transmission ring (RING entries of each array below, 27 bytes an entry: 6.9 KiB a path)
     * is allocated when the path first sends ({@link #ensureRings}); until then the arrays are
     * shared all-zero ones that nothing writes (every write is to an entry in flight, una to
     * nextPsn, which only a path with its own ring has). A QP sprays over every path when it
     * streams, but a mostly idle one (10^4 QPs of 48 paths each: 3.3 GB of rings) uses a few.
     */
    private static final int[] NO_INTS = new int[RING];
    private static final long[] NO_LONGS = new long[RING];
    private static final boolean[] NO_FLAGS = new boolean[RING];

    int[] txRsn = NO_INTS;
    long[] txTimeNs = NO_LONGS;
    /** The QP's transmission number of each packet (its order on the wire among all paths). */
    long[] txSeq = NO_LONGS;

    int[] txBytes = NO_INTS;
    /** The transmission was resolved lost by cross-path detection (a later report of it proves it was not). */
    boolean[] crossLost = NO_FLAGS;
    /**
     * The transmission's tail-loss probe went out on another path: when that copy is acknowledged
     * and this one is still unreported, this path lost it (evidence against the path, spec 8).
     */
    boolean[] tlpAway = NO_FLAGS;
    /**
     * The transmission is a tail-loss probe sent on its own silent path: it waits on that path's
     * fate and is no evidence for or against another path (spec 8).
     */
    boolean[] tlpCopy = NO_FLAGS;

    public long inflightBytes;
    public long cwndBytes;
    public long srttNs;
    public long rttvarNs;
    public long minRttNs = Long.MAX_VALUE;
    public long lastRttNs;
    long rtoNs;
    /** When the path last resolved something, or started having packets in flight. */
    long lastProgressNs;
    /** When a report last said something sent on this path arrived (a packet or a probe). */
    long lastDeliveryNs = Long.MIN_VALUE;

    boolean tlpSent;
    long lastDecreaseNs;
    /** Bytes per second acknowledged over the last smoothed RTT, EWMA. */
    public long deliveryRateBps;

    long rateWindowStartNs;
    long rateWindowBytes;
    /** Whether a rate window has closed since the path (re)started ({@link #deliveryRateBps} is measured). */
    boolean rateKnown;
    /** The most this path may have in flight as its share of the QP window (spec 10a rule 2). */
    public long shareBytes = Long.MAX_VALUE;
    /** Bit i: the i-th most recent resolved transmission was lost. */
    int lossHistory;

    int cleanRun;
    int probesOk;
    long nextProbeNs;
    long failedAtNs;
    /** When the path last turned SUSPECT (a retirement with nothing delivered since: its route died). */
    long suspectSinceNs;
    /*
     * Home return (spec 10, {@link HomeReturn}): the entropy the path was retired from, while it has
     * not gone back to it (-1: at home); the working entropy a trial of the home leaves (to go back
     * to when the trial fails); the trial's phases; when the next trial is due and the back-off.
     */
    int homeEntropy = -1;
    int awayEntropy;
    /** The window and delivery rate (-1: none measured) the path had away, kept across a trial. */
    long awayCwndBytes;

    long awayRateBps;
    /** ACTIVE or SUSPECT, taking no new data, so that it can move home once nothing is in flight. */
    boolean homeDrain;
    /** DEAD on its home entropy, probed: 3 answered probes bring it home, a lost one back away. */
    boolean homeTrial;
    /** A trial of the home failed since the path left it: its route was dead, not just lossy. */
    boolean homeFailed;

    long homeDueNs;
    long homeBackoffNs;
    /** When the path last came home (a path that is retired again soon after backs off further). */
    long homeSinceNs = Long.MIN_VALUE / 2;
    // telemetry
    public long packetsSent;
    public long bytesSent;
    public long retransmitsSent;
    public long deliveredBytes;
    public long losses;
    public long timeouts;
    public long ecnMarks;
    public long replacements;
    public long probesSent;
    public long tlps;

    Path(int id) {
        this.id = id;
    }

    void reset(int entropy, long initialCwnd, long rtoInitialNs) {
        state = ACTIVE;
        this.entropy = entropy;
        generation = 0;
        nextPsn = 0;
        una = 0;
        inflightBytes = 0;
        cwndBytes = initialCwnd;
        srttNs = 0;
        rttvarNs = 0;
        minRttNs = Long.MAX_VALUE;
        lastRttNs = 0;
        lastDeliveryNs = Long.MIN_VALUE;
        rtoNs = rtoInitialNs;
        tlpSent = false;
        lastDecreaseNs = Long.MIN_VALUE / 2;
        deliveryRateBps = 0;
        rateWindowStartNs = RATE_NOT_STARTED;
        rateWindowBytes = 0;
        rateKnown = false;
        shareBytes = Long.MAX_VALUE;
        lossHistory = 0;
        cleanRun = 0;
        probesOk = 0;
        homeEntropy = -1;
        homeDrain = false;
        homeTrial = false;
        homeBackoffNs = 0;
        homeSinceNs = Long.MIN_VALUE / 2;
        packetsSent = bytesSent = retransmitsSent = deliveredBytes = losses = timeouts = 0;
        ecnMarks = replacements = probesSent = tlps = 0;
    }

    /** Forgets the delivery rate (a re-admitted path is measured afresh). */
    void restartRate() {
        deliveryRateBps = 0;
        rateWindowStartNs = RATE_NOT_STARTED;
        rateWindowBytes = 0;
        rateKnown = false;
        shareBytes = Long.MAX_VALUE;
    }

    /**
     * Gives the path its own transmission ring before it first puts a packet on the wire; once per
     * path (kept across restarts), so the steady state allocates nothing.
     */
    void ensureRings() {
        if (txRsn == NO_INTS) {
            txRsn = new int[RING];
            txTimeNs = new long[RING];
            txSeq = new long[RING];
            txBytes = new int[RING];
            crossLost = new boolean[RING];
            tlpAway = new boolean[RING];
            tlpCopy = new boolean[RING];
        }
    }

    /** Whether the path has its own transmission ring (it has sent since the QP was created). */
    boolean hasRings() {
        return txRsn != NO_INTS;
    }

    boolean hasInflight() {
        return una != nextPsn;
    }

    boolean ringFull() {
        return nextPsn - una >= RING;
    }

    public boolean hasRtt() {
        return minRttNs != Long.MAX_VALUE;
    }

    /** RFC 6298 estimator; returns the sample. */
    void rttSample(long rttNs, long rtoMinNs, long rtoMaxNs) {
        if (rttNs <= 0) {
            rttNs = 1;
        }
        lastRttNs = rttNs;
        if (!hasRtt()) {
            srttNs = rttNs;
            rttvarNs = rttNs / 2;
        } else {
            rttvarNs = (3 * rttvarNs + Math.abs(srttNs - rttNs)) / 4;
            srttNs = (7 * srttNs + rttNs) / 8;
        }
        minRttNs = Math.min(minRttNs, rttNs);
        rtoNs = Math.min(rtoMaxNs, Math.max(rtoMinNs, srttNs + 4 * rttvarNs));
    }

    /**
     * Tail-loss probe timeout: max(2 srtt, srtt + 4 rttvar, {@code tlpMinNs}); half the initial RTO
     * (and at least the floor) before any RTT sample.
     */
    long ptoNs(long rtoInitialNs, long tlpMinNs) {
        if (!hasRtt()) {
            return Math.max(tlpMinNs, rtoInitialNs / 2);
        }
        return Math.max(tlpMinNs, Math.max(2 * srttNs, srttNs + 4 * rttvarNs));
    }

    /** Records a resolved transmission in the loss history; true when it makes a loss burst. */
    boolean recordOutcome(boolean lost) {
        lossHistory = (lossHistory << 1) | (lost ? 1 : 0);
        if (lost) {
            cleanRun = 0;
        } else {
            cleanRun++;
        }
        return Integer.bitCount(lossHistory & 0xffff) >= 3;
    }

    public String stateName() {
        return state == ACTIVE ? "active" : state == SUSPECT ? "suspect" : "dead";
    }
}
