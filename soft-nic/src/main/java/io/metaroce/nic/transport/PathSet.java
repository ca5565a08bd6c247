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
    /**
     * The balance cap of this transmit pass ({@link #balance}): an ACTIVE path with more in flight
     * than this takes new data only when no other path has room (spec 10, "Balance").
     */
    private long balanceCapBytes = Long.MAX_VALUE;

    /** The balance cap in means of the ACTIVE paths' bytes in flight (spec 10, "Balance"). */
    static final int BALANCE_MEANS = 2;
    /** The balance cap's floor, in packets. */
    static final int BALANCE_FLOOR_PACKETS = 2;
    /** Rotates re-requests over the live paths' entropies. */
    private int resendRotor;
    /**
     * Packets one ACTIVE path takes back to back before the round robin moves on, when its room
     * allows (spec 10, "Bursts"): the port's {@link io.metaroce.nic.port.Port#sendBurst}, 1 but on
     * a port that sends a path's run of packets as one buffer.
     */
    int burst = 1;
    /** The path of the burst under way and the packets it may still take (0: none under way). */
    private int burstPath;

    private int burstLeft;

    /** How long a retired source-port class is avoided by redraws (spec 10). */
    static final long RETIRED_MEMORY_NS = 1_000_000_000L;
    /** Candidates one redraw looks at per pass at most (bounds its work with 65536 classes). */
    private static final int REDRAW_TRIES = 1024;
    /**
     * Source-port classes: the entropy picks socket {@code entropy mod classes} (the daemon's
     * --entropy-ports), or 65536 when the entropy itself is the route key (no pool: the SimFabric).
     */
    private int classes = 65536;
    /**
     * The network planes of the port (docs/spec/transport.md, "Multi-plane QPs"): a path's plane is
     * its entropy mod this, and a redraw keeps the plane, so a plane that fails keeps its paths,
     * DEAD and probed, until it heals. 1 on a one-interface device.
     */
    int planes = 1;
    /** The redraw walk: a permutation of the classes, {@code next, next + stride, ...} mod classes. */
    private int walkNext;

    private int walkStride = 1;
    /** Classes retired within {@link #RETIRED_MEMORY_NS} (bit {@code class mod 1024}). */
    private final long[] retired = new long[16];

    private long retiredSinceNs;
    private boolean retiredAny;

    /**
     * Entering RTS: {@code n} fresh paths of QP {@code qpn}, each with its first entropy; {@code pool}
     * source ports (0: the entropy is the route key itself).
     */
    void start(int qpn, int n, int pool, long initialCwnd, long rtoInitialNs) {
        count = n;
        for (int i = 0; i < n; i++) {
            if (paths[i] == null) {
                paths[i] = new Path(i);
            }
            paths[i].reset(entropy(qpn, i, n, 0), initialCwnd, rtoInitialNs);
        }
        rrCursor = 0;
        burstLeft = 0;
        balanceCapBytes = Long.MAX_VALUE;
        classes = pool <= 0 || pool > 65536 ? 65536 : pool;
        int seed = ((qpn * 0x9e3779b1) >>> 16) & 0xffff;
        // a per-QP walk: starts after the first entropies, stride coprime with the class count
        walkNext = (seed + n) % classes;
        int stride = (((qpn * 0x85ebca6b) >>> 8) % classes) | 1;
        while (gcd(stride, classes) != 1) {
            stride++;
        }
        walkStride = stride % classes == 0 ? 1 : stride;
        java.util.Arrays.fill(retired, 0);
        retiredAny = false;
    }

    private static int gcd(int a, int b) {
        while (b != 0) {
            int t = a % b;
            a = b;
            b = t;
        }
        return a;
    }

    private int classOf(int entropy) {
        return (entropy & 0xffff) % classes;
    }

    private boolean isRetired(int c) {
        return (retired[(c & 1023) >>> 6] & (1L << c)) != 0;
    }

    /**
     * A new entropy for {@code p}, which leaves its current one (retired, or a DEAD path whose probe
     * was lost): the next class of the QP's walk that was not retired within
     * {@link #RETIRED_MEMORY_NS} and that no other path of the QP uses; failing that, one not
     * retired; failing that (every class retired), the walk forgets and takes the next (spec 10).
     */
    int redraw(Path p, long nowNs) {
        if (retiredAny && nowNs - retiredSinceNs > RETIRED_MEMORY_NS) {
            java.util.Arrays.fill(retired, 0);
            retiredAny = false;
        }
        if (!retiredAny) {
            retiredSinceNs = nowNs;
            retiredAny = true;
        }
        int old = classOf(p.entropy);
        int plane = planes == 1 ? 0 : (p.entropy & 0xffff) % planes;
        retired[(old & 1023) >>> 6] |= 1L << old;
        int tries = Math.min(classes, REDRAW_TRIES);
        for (int pass = 0; pass < 2; pass++) {
            for (int k = 0; k < tries; k++) {
                int c = walkNext;
                walkNext = (int) ((walkNext + (long) walkStride) % classes);
                if (isRetired(c) || pass == 0 && usedByOther(p, c) || planes > 1 && c % planes != plane) {
                    continue;
                }
                return c;
            }
        }
        java.util.Arrays.fill(retired, 0);
        retired[(old & 1023) >>> 6] |= 1L << old;
        retiredSinceNs = nowNs;
        int c = walkNext;
        walkNext = (int) ((walkNext + (long) walkStride) % classes);
        c = c == old && classes > 1 ? redrawNext() : c;
        return planes > 1 ? onPlane(c, plane) : c;
    }

    /** Class {@code c} moved to plane {@code plane} (the nearest class at or below it of that plane). */
    private int onPlane(int c, int plane) {
        int d = c - c % planes + plane;
        return d < classes ? d : d - planes >= 0 ? d - planes : plane;
    }

    private int redrawNext() {
        int c = walkNext;
        walkNext = (int) ((walkNext + (long) walkStride) % classes);
        return c;
    }

    private boolean usedByOther(Path p, int c) {
        for (int i = 0; i < count; i++) {
            if (paths[i] != p && classOf(paths[i].entropy) == c) {
                return true;
            }
        }
        return false;
    }

    /**
     * The probability that {@code paths} paths use all {@code links} links when ECMP sends each
     * path down a link chosen uniformly at random (inclusion-exclusion: the sum over j of
     * (-1)^j C(links, j) (1 - j / links)^paths). Spec 10 chooses the default path count by it.
     */
    static double coverage(int links, int paths) {
        if (links <= 0 || paths < 0) {
            throw new IllegalArgumentException("links " + links + ", paths " + paths);
        }
        double sum = 0;
        double binom = 1;
        for (int j = 0; j <= links; j++) {
            double term = binom * Math.pow(1 - (double) j / links, paths);
            sum += (j & 1) == 0 ? term : -term;
            binom = binom * (links - j) / (j + 1);
        }
        return Math.max(0, Math.min(1, sum));
    }

    /** The entropy (UDP source port class) of path {@code id} of QP {@code qpn} after {@code generation} retirements. */
    static int entropy(int qpn, int id, int pathCount, int generation) {
        return (((qpn * 0x9e3779b1) >>> 16) + id + pathCount * generation) & 0xffff;
    }

    /**
     * The path for an opportunistic copy (spec 10a rule 4): round robin over the ACTIVE paths
     * other than {@code avoid} with room for {@code bytes} whose srtt is at most {@code
     * maxSrttNs}, so that a copy of a packet stuck on a slow path lands on a fast one, and copies
     * spread over the fast paths rather than pile onto the fastest. -1: none has room now.
     */
    int pickFast(int bytes, int avoid, long maxSrttNs) {
        int n = count;
        for (int k = 0; k < n; k++) {
            int i = fromCursor(k);
            Path p = paths[i];
            if (i != avoid
                    && p.state == Path.ACTIVE
                    && !p.homeDrain
                    && p.hasRtt()
                    && p.srttNs <= maxSrttNs
                    && !p.ringFull()
                    && fits(p, bytes, Math.min(p.shareBytes, p.cwndBytes))) {
                takeTurn(i);
                return i;
            }
        }
        return -1;
    }

    /**
     * Sets the balance cap from the ACTIVE paths' mean bytes in flight: {@link #BALANCE_MEANS}
     * times it, at least {@link #BALANCE_FLOOR_PACKETS} packets of {@code packet} bytes. A path on
     * a full link holds its packets longer and so has more of them in flight; round robin alone
     * would keep giving it as many new ones as a path on an idle link.
     */
    void balance(long packet) {
        long sum = 0;
        int n = 0;
        for (int i = 0; i < count; i++) {
            Path p = paths[i];
            if (p.state == Path.ACTIVE) {
                sum += p.inflightBytes;
                n++;
            }
        }
        long floor = Math.max(BALANCE_FLOOR_PACKETS, burst) * packet; // a path may take one burst
        balanceCapBytes = n == 0 ? Long.MAX_VALUE : Math.max(floor, BALANCE_MEANS * sum / n);
    }

    /** The {@code k}-th path from the round-robin cursor. */
    private int fromCursor(int k) {
        int i = rrCursor + k;
        return i >= count ? i - count : i;
    }

    /** Path {@code i} took its turn: the next search starts after it. */
    private void takeTurn(int i) {
        rrCursor = i + 1 == count ? 0 : i + 1;
    }

    /** Whether {@code bytes} more fit in {@code room} on {@code p} (an empty path always takes one packet). */
    private static boolean fits(Path p, int bytes, long room) {
        return p.inflightBytes + bytes <= room || p.inflightBytes == 0;
    }

    /**
     * Whether an ACTIVE path with packets in flight has room for a burst: {@link #burst} packets of
     * {@code bytes}, or half its room when that is less (at least one). A path whose ACKs free a
     * packet at a time then waits for the next ones instead of taking single packets, so that its
     * packets leave in runs; an empty path always takes one (spec 10, "Bursts").
     */
    private boolean fitsBurst(Path p, int bytes, long room) {
        if (p.inflightBytes == 0) {
            return true;
        }
        long quantum = Math.max(1, Math.min(burst, room / (2L * bytes)));
        return p.inflightBytes + quantum * bytes <= room;
    }

    /**
     * The path for a packet of {@code bytes}: round robin over ACTIVE paths with window room (then
     * SUSPECT ones at a quarter of their window, and ACTIVE ones past the balance cap of {@link
     * #balance}), avoiding {@code avoid} when another fits; with
     * no ACTIVE or SUSPECT path, any DEAD one so the QP still reaches its retry limit. -1: none has
     * room now. Shares (spec 10a) bound the window room like the window does.
     */
    int pick(int bytes, int avoid) {
        if (burstLeft > 0) {
            Path b = paths[burstPath];
            if (burstPath != avoid
                    && burstPath < count
                    && b.state == Path.ACTIVE
                    && !b.homeDrain
                    && !b.ringFull()
                    && b.inflightBytes + bytes <= Math.min(b.shareBytes, b.cwndBytes)
                    && b.inflightBytes + bytes <= balanceCapBytes) {
                burstLeft--;
                return burstPath;
            }
            burstLeft = 0;
        }
        int n = count;
        int fallback = -1;
        int overCap = -1;
        boolean anyAlive = false;
        for (int k = 0; k < n; k++) {
            int i = fromCursor(k);
            Path p = paths[i];
            if (p.ringFull()) {
                if (p.state != Path.DEAD) {
                    anyAlive = true;
                }
                continue;
            }
            long room = Math.min(p.shareBytes, p.state == Path.SUSPECT ? p.cwndBytes / 4 : p.cwndBytes);
            if (p.state == Path.DEAD) {
                if (!ConformanceBreak.SEND_ON_DEAD_PATH) {
                    continue;
                }
                // the break: a DEAD path takes its turn of new data whatever it holds, so the rule
                // is broken every time (subject to the room check, only its moments without a
                // probe in flight broke it, and a stream could pass them all)
                takeTurn(i);
                return i;
            }
            anyAlive = true;
            if (p.homeDrain || !fits(p, bytes, room)) {
                continue;
            }
            if (burst > 1 && p.state == Path.ACTIVE && !fitsBurst(p, bytes, room)) {
                continue; // its ACKs will open room for a burst
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
            if (p.inflightBytes + bytes > balanceCapBytes) {
                // ACTIVE past the balance cap: only when no ACTIVE path within it fits, but before
                // the path to avoid and before a SUSPECT one
                if (overCap < 0) {
                    overCap = i;
                }
                continue;
            }
            takeTurn(i);
            burstPath = i;
            burstLeft = burst - 1;
            return i;
        }
        if (overCap >= 0) {
            takeTurn(overCap);
            return overCap;
        }
        if (fallback >= 0) {
            takeTurn(fallback);
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
            if (i == from
                    || p.state != Path.ACTIVE
                    || p.homeDrain
                    || p.ringFull()
                    || p.lastDeliveryNs == Long.MIN_VALUE) {
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

    /** The largest srtt of a path that is not DEAD (0 when none has one). */
    long largestLiveSrtt() {
        long t = 0;
        for (int i = 0; i < count; i++) {
            if (paths[i].state != Path.DEAD) {
                t = Math.max(t, paths[i].srttNs);
            }
        }
        return t;
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
