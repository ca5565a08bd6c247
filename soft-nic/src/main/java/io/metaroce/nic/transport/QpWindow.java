package io.metaroce.nic.transport;

/**
 * Gray-failure tolerance, rules 2 and 3 of docs/spec/transport.md section 10a: the QP window from
 * the bandwidth-delay product of its paths (between {@link #MIN} and {@link RcRequester#WINDOW}),
 * each path's share of it in proportion to its delivery rate ({@link Path#shareBytes}), and the
 * smallest srtt of an ACTIVE path (what opportunistic retransmission compares with). Recomputed
 * only when something it depends on changed ({@link #invalidate}). Engine thread only.
 */
final class QpWindow {
    /** The smallest QP window the bandwidth-delay product may set: two bursts. */
    static final int MIN = 64;
    /** The floor of a path's share, in packets: a slow path still carries traffic and stays measured. */
    static final int SHARE_FLOOR_PACKETS = 2;

    private int window = RcRequester.WINDOW;
    private long srttMinNs = Long.MAX_VALUE;
    private boolean dirty;

    void reset() {
        window = RcRequester.WINDOW;
        srttMinNs = Long.MAX_VALUE;
        dirty = false;
    }

    /** A rate window closed, a path changed state or the receive window changed. */
    void invalidate() {
        dirty = true;
    }

    /** The QP window in packets, before the receive window. */
    int window() {
        return window;
    }

    /** The smallest srtt of an ACTIVE path with a sample; MAX_VALUE when none. */
    long srttMinNs() {
        return srttMinNs;
    }

    /**
     * Recomputes the window and the shares if due; {@code packet}: a full packet of the QP, in
     * bytes; {@code gain}: the window in bandwidth-delay products ({@link
     * TransportSettings#qpWindowGain}).
     */
    void update(Path[] paths, int pathCount, int rwnd, long packet, int gain) {
        if (!dirty) {
            return;
        }
        dirty = false;
        long rateSum = 0;
        long bdpBytes = 0;
        boolean anyRate = false;
        long srttMin = Long.MAX_VALUE;
        for (int i = 0; i < pathCount; i++) {
            Path p = paths[i];
            if (p.state == Path.DEAD) {
                continue;
            }
            if (p.state == Path.ACTIVE && p.hasRtt()) {
                srttMin = Math.min(srttMin, p.srttNs);
            }
            if (p.rateKnown) {
                anyRate = true;
                rateSum += p.deliveryRateBps;
                bdpBytes += p.deliveryRateBps * p.srttNs / 1_000_000_000L;
            }
        }
        srttMinNs = srttMin;
        window = !anyRate
                ? RcRequester.WINDOW
                : (int) Math.max(MIN, Math.min(RcRequester.WINDOW, (gain * bdpBytes + packet - 1) / packet));
        long windowBytes = Math.min(window, Math.max(1, rwnd)) * packet;
        for (int i = 0; i < pathCount; i++) {
            Path p = paths[i];
            p.shareBytes = !p.rateKnown || p.state == Path.DEAD
                    ? Long.MAX_VALUE
                    : Math.max(
                            SHARE_FLOOR_PACKETS * packet,
                            rateSum == 0 ? 0 : 2 * windowBytes * p.deliveryRateBps / rateSum);
        }
    }
}
