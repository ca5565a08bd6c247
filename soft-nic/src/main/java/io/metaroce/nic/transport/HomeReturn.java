package io.metaroce.nic.transport;

/**
 * Home return (docs/spec/transport.md section 10, "Home return"): a path retired because its route
 * went silent keeps the entropy it left as its <em>home</em> while it works elsewhere, and tries it
 * again after a back-off (50 ms, doubling per failed try, at most 500 ms), so that a link that heals
 * carries the QP again within a second instead of being left for good. A try drains the path (no
 * new data until nothing is in flight on it: the move loses nothing), takes the home entropy and
 * probes it as a DEAD path is probed (within the probe budget). Three answered probes bring the
 * path home once an earlier try has failed (the route was dead and is back); at a first try they
 * send it back (it left for losses that passed). A lost probe sends it back to the entropy it
 * left, with the window and rate it had there. At most {@link #TRIALS_PER_QP} paths of a QP drain
 * or try at once, one after a try that failed. Engine thread only; one per {@link PathRecovery}.
 */
final class HomeReturn {
    /** The first try of a home after the path left it. */
    static final long FIRST_BACKOFF_NS = 50_000_000L;
    /** The longest wait between two tries: a healed link is used again within about this. */
    static final long MAX_BACKOFF_NS = 500_000_000L;
    /** A path retired again within this of coming home (a flapping link) backs off further. */
    static final long STABLE_NS = 1_000_000_000L;
    /** Paths of one QP draining or on trial at once. */
    static final int TRIALS_PER_QP = 4;
    /** {@link #dueNs}: nothing is due until something changes. */
    static final long NONE = Long.MAX_VALUE;

    private final PathSet pathSet;
    private final QpWindow qpWindow;
    /** Paths draining or on trial now. */
    private int busy;
    /** Paths with a home (away from it): none, and {@link #scan} has nothing to look at. */
    private int away;
    /**
     * The last try that ended failed: the next one is a lone scout (the paths that left a link
     * together would all find it dead again); a try that succeeds opens {@link #TRIALS_PER_QP}.
     */
    private boolean lastFailed;

    HomeReturn(PathSet pathSet, QpWindow qpWindow) {
        this.pathSet = pathSet;
        this.qpWindow = qpWindow;
    }

    /** Entering RTS: the paths are fresh, none away. */
    void start() {
        busy = 0;
        away = 0;
        lastFailed = false;
    }

    /** Tries that may drain or run at once now. */
    private int slots() {
        return lastFailed ? 1 : TRIALS_PER_QP;
    }

    /** {@code p} is retired from its entropy (before the redraw): that entropy becomes its home. */
    void onRetire(Path p, long nowNs) {
        if (p.homeDrain) {
            p.homeDrain = false;
            busy--;
        }
        if (p.homeEntropy >= 0) {
            return; // retired again while away: the home and its schedule stay
        }
        if (p.lastDeliveryNs - p.suspectSinceNs >= 0) {
            return; // it delivered since it turned SUSPECT: losses, not a dead route; no home to miss
        }
        p.homeEntropy = p.entropy;
        away++;
        p.homeFailed = false;
        p.homeBackoffNs = nowNs - p.homeSinceNs < STABLE_NS
                ? Math.min(MAX_BACKOFF_NS, Math.max(FIRST_BACKOFF_NS, 2 * p.homeBackoffNs))
                : FIRST_BACKOFF_NS;
        p.homeDueNs = nowNs + p.homeBackoffNs;
    }

    /** Starts the tries that are due (drains) and moves drained paths onto their homes. */
    int scan(Datapath dp, long nowNs) {
        if (away == 0) {
            return 0;
        }
        int work = 0;
        Path[] paths = pathSet.paths;
        for (int i = 0; i < pathSet.count; i++) {
            Path p = paths[i];
            if (p.homeEntropy < 0 || p.homeTrial) {
                continue;
            }
            if (!p.homeDrain) {
                if (p.state != Path.ACTIVE || nowNs - p.homeDueNs < 0 || busy >= slots()) {
                    continue;
                }
                p.homeDrain = true;
                busy++;
                work++;
            }
            if (p.state != Path.DEAD && !p.hasInflight()) {
                beginTrial(dp, p, nowNs);
                work++;
            }
        }
        return work;
    }

    private void beginTrial(Datapath dp, Path p, long nowNs) {
        p.homeDrain = false;
        p.homeTrial = true;
        p.awayEntropy = p.entropy;
        p.awayCwndBytes = p.cwndBytes;
        p.awayRateBps = p.rateKnown ? p.deliveryRateBps : -1;
        p.entropy = p.homeEntropy;
        p.generation++;
        p.state = Path.DEAD;
        p.probesOk = 0;
        p.nextProbeNs = nowNs;
        p.failedAtNs = nowNs;
        p.lossHistory = 0;
        qpWindow.invalidate();
        dp.counters.homeTrials++;
    }

    /**
     * The trial's third answered probe re-admitted {@code p} (a fresh window): it stays home if an
     * earlier try had failed, else it goes back to the entropy it left.
     */
    void onReadmitted(Datapath dp, Path p, long nowNs) {
        if (!p.homeTrial) {
            return;
        }
        p.homeTrial = false;
        p.homeEntropy = -1;
        away--;
        busy--;
        lastFailed = false;
        if (!p.homeFailed) {
            // The home answered at its first try: the path left it for losses that passed (a
            // queue that overflowed), not for a dead route; it goes back to the entropy it had,
            // which a redraw chose to be apart from the other paths.
            backAway(p);
            return;
        }
        p.homeSinceNs = nowNs;
        dp.counters.homeReturns++;
    }

    /**
     * Whether {@code p}'s lost probe was a trial's: then it goes back to the entropy it left, ACTIVE
     * with the window and rate it had there, and tries again after twice the wait (the caller
     * redraws otherwise).
     */
    boolean onProbeLost(Path p, long nowNs) {
        if (!p.homeTrial) {
            return false;
        }
        p.homeTrial = false;
        p.homeFailed = true;
        busy--;
        lastFailed = true;
        p.state = Path.ACTIVE;
        p.lossHistory = 0;
        p.cleanRun = 0;
        backAway(p);
        p.homeBackoffNs = Math.min(MAX_BACKOFF_NS, 2 * p.homeBackoffNs);
        p.homeDueNs = nowNs + p.homeBackoffNs;
        return true;
    }

    /** {@code p} goes back to the entropy it left for the trial, with the window and rate it had there. */
    private void backAway(Path p) {
        p.entropy = p.awayEntropy;
        p.generation++;
        p.cwndBytes = p.awayCwndBytes;
        p.restartRate();
        if (p.awayRateBps >= 0) {
            p.deliveryRateBps = p.awayRateBps;
            p.rateKnown = true;
        }
        qpWindow.invalidate();
    }

    /**
     * When {@link #scan} next has something to do for {@code p} if nothing else changes: a drained
     * path at once, an away ACTIVE path at its due time (while a trial slot is free); {@link #NONE}
     * otherwise (a report, a re-admission or a trial's end changes that, and each opens the gate).
     */
    long dueNs(Path p, long nowNs) {
        if (p.homeEntropy < 0 || p.homeTrial) {
            return NONE;
        }
        if (p.homeDrain) {
            return p.hasInflight() || p.state == Path.DEAD ? NONE : nowNs;
        }
        return p.state == Path.ACTIVE && busy < slots() ? p.homeDueNs : NONE;
    }
}
