package io.metaroce.nic.transport;

/**
 * Per-path congestion control (docs/spec/transport.md section 11) and delivery rate (section 10a
 * rule 1). The state lives in each {@link Path}; these functions change it. Engine thread only.
 */
final class PathCongestion {
    /** The initial window, and the floor of the BDP cap, in packets. */
    static final int INITIAL_PACKETS = 16;

    private PathCongestion() {}

    /** Delivery rate per rate window, EWMA 1/4 (spec 10a rule 1); true when a window closed. */
    static boolean updateRate(Path p, long delivered, long nowNs) {
        if (p.rateWindowStartNs == Path.RATE_NOT_STARTED) {
            // The first report covers bytes sent about one RTT ago (measuring from time 0 would
            // give a near-zero rate, and the BDP cap would pin the window to its floor).
            p.rateWindowStartNs = nowNs - Math.max(1, p.srttNs);
        }
        p.rateWindowBytes += delivered;
        long span = nowNs - p.rateWindowStartNs;
        if (span >= Math.max(p.srttNs, 10_000L)) {
            long rate = p.rateWindowBytes * 1_000_000_000L / Math.max(1, span);
            p.deliveryRateBps = !p.rateKnown ? rate : (3 * p.deliveryRateBps + rate) / 4;
            p.rateKnown = true;
            p.rateWindowStartNs = nowNs;
            p.rateWindowBytes = 0;
            return true;
        }
        return false;
    }

    /**
     * A report with RTT sample {@code rttNs}: delay-based window with multiplicative decrease on
     * loss or ECN and a BDP cap (spec 11). {@code mtu} is a full packet of the QP.
     */
    static void onReport(Datapath dp, Path p, long mtu, long rttNs, long ackedBytes, boolean lossOrCe, long nowNs) {
        long target = p.minRttNs + Math.max(p.minRttNs / 4, dp.ccSlackMinNs);
        boolean mayDecrease = nowNs - p.lastDecreaseNs >= p.srttNs;
        if (lossOrCe) {
            if (mayDecrease) {
                p.cwndBytes /= 2;
                p.lastDecreaseNs = nowNs;
            }
        } else if (rttNs < target) {
            p.cwndBytes += Math.max(1, mtu * ackedBytes / Math.max(1, p.cwndBytes));
        } else if (mayDecrease) {
            double f = Math.max(0.5, 1.0 - 0.8 * (rttNs - target) / (double) rttNs);
            p.cwndBytes = (long) (p.cwndBytes * f);
            p.lastDecreaseNs = nowNs;
        }
        long cap = (long) RcRequester.WINDOW * mtu;
        if (p.deliveryRateBps > 0 && p.hasRtt()) {
            long bdp = 2 * p.deliveryRateBps * p.minRttNs / 1_000_000_000L;
            cap = Math.min(cap, Math.max(INITIAL_PACKETS * mtu, bdp));
        }
        p.cwndBytes = Math.max(mtu, Math.min(cap, p.cwndBytes));
    }

    /**
     * Halves the window, not below one packet of {@code mtu} bytes, at most once per srtt: a loss
     * found by cross-path detection (spec 8), a penalty for a packet stuck on the path (spec 10a).
     */
    static void halveOncePerSrtt(Path p, long mtu, long nowNs) {
        if (nowNs - p.lastDecreaseNs >= p.srttNs) {
            halve(p, mtu, nowNs);
        }
    }

    /** Halves the window, not below one packet (a path timeout, spec 8). */
    static void halve(Path p, long mtu, long nowNs) {
        p.cwndBytes = Math.max(mtu, p.cwndBytes / 2);
        p.lastDecreaseNs = nowNs;
    }
}
