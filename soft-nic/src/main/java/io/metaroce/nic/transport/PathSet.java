package io.metaroce.nic.transport;

/**
 * The paths of one RC QP and the spraying over them (docs/spec/transport.md section 10): the
 * {@link Path}s, the round-robin choice of a path with room for the next packet (ACTIVE before
 * SUSPECT, DEAD only when nothing else is left), each path's entropy and the rotation of
 * re-requests over the live ones. Loss detection, timers and repair, which need the QP's packets,
 * stay in {@link RcRequester}. Pre-allocated, engine thread only.
 */
final class PathSet {
    final Path[] paths = new Path[RcRequester.MAX_PATHS];
    /** Paths in use (1..{@link RcRequester#MAX_PATHS}). */
    int count;
    private int rrCursor;
    /** Rotates re-requests over the live paths' entropies. */
    private int resendRotor;

    /** Entering RTS: {@code n} fresh paths of QP {@code qpn}, each with its first entropy. */
    void start(int qpn, int n, long initialCwnd, long rtoInitialNs) {
        count = n;
        for (int i = 0; i < n; i++) {
            if (paths[i] == null) {
                paths[i] = new Path(i);
            }
            paths[i].reset(entropy(qpn, i, n, 0), initialCwnd, rtoInitialNs);
        }
        rrCursor = 0;
    }

    /** The entropy (UDP source port class) of path {@code id} of QP {@code qpn} after {@code generation} retirements. */
    static int entropy(int qpn, int id, int pathCount, int generation) {
        return (((qpn * 0x9e3779b1) >>> 16) + id + pathCount * generation) & 0xffff;
    }

    /**
     * The path for a packet of {@code bytes}: round robin over ACTIVE paths with window room (then
     * SUSPECT ones at a quarter of their window), avoiding {@code avoid} when another fits; with
     * no ACTIVE or SUSPECT path, any DEAD one so the QP still reaches its retry limit. -1: none has
     * room now. Shares (spec 10a) bound the window room like the window does.
     */
    int pick(int bytes, int avoid) {
        int n = count;
        int fallback = -1;
        boolean anyAlive = false;
        for (int k = 0; k < n; k++) {
            int i = rrCursor + k;
            if (i >= n) {
                i -= n;
            }
            Path p = paths[i];
            if (p.ringFull()) {
                if (p.state != Path.DEAD) {
                    anyAlive = true;
                }
                continue;
            }
            long room = Math.min(p.shareBytes, p.state == Path.SUSPECT ? p.cwndBytes / 4 : p.cwndBytes);
            if (p.state == Path.DEAD) {
                continue;
            }
            anyAlive = true;
            if (p.inflightBytes + bytes > room && p.inflightBytes > 0) {
                continue;
            }
            if (i == avoid && n > 1) {
                if (fallback < 0) {
                    fallback = i;
                }
                continue;
            }
            if (p.state == Path.SUSPECT) {
                // only when no ACTIVE path fits (even with a fallback already noted)
                if (fallback < 0) {
                    fallback = i;
                }
                continue;
            }
            rrCursor = i + 1 == n ? 0 : i + 1;
            return i;
        }
        if (fallback >= 0) {
            rrCursor = fallback + 1 == n ? 0 : fallback + 1;
            return fallback;
        }
        if (anyAlive) {
            return -1;
        }
        // Every path is DEAD: use the one that failed longest ago (it may carry data again).
        int best = -1;
        for (int i = 0; i < n; i++) {
            Path p = paths[i];
            if (p.ringFull() || (p.inflightBytes > 0 && p.inflightBytes + bytes > p.cwndBytes)) {
                continue;
            }
            if (best < 0 || p.failedAtNs - paths[best].failedAtNs < 0) {
                best = i;
            }
        }
        return best;
    }

    /**
     * The path for a tail-loss probe of a packet of {@code from}: the ACTIVE path other than
     * {@code from} whose deliveries were reported most recently (the one most likely to carry it
     * now), whatever its window (a probe is one packet); {@code from} itself when no other has
     * delivered anything yet.
     */
    int freshest(int from) {
        int best = -1;
        for (int i = 0; i < count; i++) {
            Path p = paths[i];
            if (i == from || p.state != Path.ACTIVE || p.ringFull() || p.lastDeliveryNs == Long.MIN_VALUE) {
                continue;
            }
            if (best < 0 || p.lastDeliveryNs - paths[best].lastDeliveryNs > 0) {
                best = i;
            }
        }
        return best < 0 ? from : best;
    }

    /** The entropy of the next live path in rotation (re-requests spread over the paths). */
    int nextLiveEntropy() {
        for (int k = 0; k < count; k++) {
            if (++resendRotor >= count) {
                resendRotor = 0;
            }
            if (paths[resendRotor].state != Path.DEAD) {
                return paths[resendRotor].entropy;
            }
        }
        return paths[0].entropy;
    }

    /** Whether a live path other than {@code p} has packets in flight. */
    boolean othersInflight(Path p) {
        for (int i = 0; i < count; i++) {
            if (paths[i] != p && paths[i].state != Path.DEAD && paths[i].hasInflight()) {
                return true;
            }
        }
        return false;
    }

    /** Whether a path other than {@code p} is not DEAD. */
    boolean anotherUsable(Path p) {
        for (int i = 0; i < count; i++) {
            if (paths[i] != p && paths[i].state != Path.DEAD) {
                return true;
            }
        }
        return false;
    }
}
