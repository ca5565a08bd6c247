package io.metaroce.nic.transport;

/**
 * The READ and atomic requests of one RC QP that wait for their responses (docs/spec/transport.md
 * section 8a): at most {@link #CAPACITY} trackers, each with a bitmap of the response packets that
 * landed (they may come in any order) and a response timer; and the count of atomics sent, which
 * bounds how far ahead a new atomic may go (the responder's replay window). Pre-allocated, engine
 * thread only; {@link RcRequester} drives it.
 */
final class ResponseTrackers {
    /** READ and atomic requests outstanding at most (the most max_rd_atomic may ask for). */
    static final int CAPACITY = 16;
    /** Response packets one READ request covers at most (a longer READ is cut into several). */
    static final int SEGMENT_PACKETS = 1024;

    /** One request waiting for its responses. */
    static final class Tracker {
        boolean active;
        boolean atomic;
        int rsn;
        /** Index of its work request (wrTail counter value). */
        int wr;
        /** Bytes [start, start + length) of the READ, in response packets of {@code unit} bytes. */
        long start;

        int length;
        int unit;
        int packets;
        int staged;
        int landed;
        final long[] bits = new long[SEGMENT_PACKETS / 64];
        long deadlineNs;
        int timeouts;
        /** Atomics: the count of atomics sent before this one (the replay window, spec 5). */
        long atomicSeq;

        /** Marks response {@code index} as taken; false when it already was (a duplicate). */
        boolean take(int index) {
            long bit = 1L << (index & 63);
            if ((bits[index >>> 6] & bit) != 0) {
                return false;
            }
            bits[index >>> 6] |= bit;
            staged++;
            return true;
        }

        boolean has(int index) {
            return (bits[index >>> 6] & (1L << (index & 63))) != 0;
        }
    }

    private final Tracker[] trackers = new Tracker[CAPACITY];
    private int active;
    /** Atomics sent since RTS. */
    private long atomicsSent;

    ResponseTrackers() {
        for (int i = 0; i < CAPACITY; i++) {
            trackers[i] = new Tracker();
        }
    }

    /** Trackers in use. */
    int active() {
        return active;
    }

    Tracker get(int i) {
        return trackers[i];
    }

    void clear() {
        for (int i = 0; i < CAPACITY; i++) {
            trackers[i].active = false;
        }
        active = 0;
    }

    /** Starts tracking request {@code rsn} of work request {@code wrIndex}; the caller checked there is room. */
    void start(SendWr wr, int wrIndex, int rsn, long start, int length, long deadlineNs) {
        for (int i = 0; i < CAPACITY; i++) {
            Tracker t = trackers[i];
            if (!t.active) {
                t.active = true;
                t.atomic = wr.kind == SendWr.KIND_ATOMIC;
                t.rsn = rsn;
                t.wr = wrIndex;
                t.start = start;
                t.length = length;
                t.unit = t.atomic ? 8 : wr.unit;
                t.packets = t.atomic ? 1 : Math.max(1, (length + t.unit - 1) / t.unit);
                t.staged = 0;
                t.landed = 0;
                java.util.Arrays.fill(t.bits, 0L);
                t.deadlineNs = deadlineNs;
                t.timeouts = 0;
                if (t.atomic) {
                    t.atomicSeq = atomicsSent++;
                }
                active++;
                return;
            }
        }
        throw new IllegalStateException("no free tracker"); // transmit checked active()
    }

    /** A request whose responses all landed: its tracker is free again. */
    void finish(Tracker t) {
        t.active = false;
        active--;
    }

    /** Whether one more atomic keeps every unanswered one within the responder's replay window. */
    boolean atomicReplayable() {
        for (int i = 0; i < CAPACITY; i++) {
            Tracker t = trackers[i];
            if (t.active && t.atomic && atomicsSent - t.atomicSeq >= Wire.ATOMIC_REPLAY_WINDOW) {
                return false;
            }
        }
        return true;
    }

    /** The tracker of request {@code rsn}, or -1. */
    int indexOf(int rsn) {
        if (active == 0) {
            return -1;
        }
        for (int i = 0; i < CAPACITY; i++) {
            if (trackers[i].active && trackers[i].rsn == rsn) {
                return i;
            }
        }
        return -1;
    }

    /** Re-arms the timer of every tracker of request {@code rsn} or a later one (answered in order behind it). */
    void restartFrom(int rsn, long deadlineNs) {
        for (int i = 0; i < CAPACITY; i++) {
            Tracker o = trackers[i];
            if (o.active && o.rsn - rsn >= 0) {
                o.deadlineNs = deadlineNs;
            }
        }
    }

    /** The earliest of {@code deadlineNs} (when {@code armed}) and the trackers' timers. */
    long earliestDeadline(boolean armed, long deadlineNs) {
        long d = armed ? deadlineNs : 0;
        boolean any = armed;
        if (active > 0) {
            for (int i = 0; i < CAPACITY; i++) {
                Tracker t = trackers[i];
                if (t.active && (!any || t.deadlineNs - d < 0)) {
                    d = t.deadlineNs;
                    any = true;
                }
            }
        }
        return d;
    }
}
