package io.metaroce.nic.sim;

import java.util.SplittableRandom;

/**
 * One of the fabric's parallel links (a path through the spine), full duplex: towards each
 * attached host it has its own egress queue and serializer, so the two directions of a
 * conversation do not share capacity. Impairments apply to every direction and may be changed at
 * any time between duty cycles; they act on frames committed afterwards (a frame already on the
 * wire keeps its fate). All methods run on the simulation's single thread.
 *
 * <p>The fate of a frame, in order: blackhole; tail drop when the egress queue (serializer backlog)
 * would exceed {@link #queueBytes}, else an ECN CE mark when it holds at least
 * {@link #ecnThresholdBytes} (a step marking threshold, as DCTCP switches use); random loss;
 * burst loss (Gilbert-Elliott, a two-state chain per direction); gray loss. A surviving frame
 * arrives at the end of its serialization plus {@link #delayNs}, the gray failure's added delay
 * and, when enabled, a uniform jitter; without jitter a link is FIFO (an arrival never precedes the previous one on that direction). A
 * duplicate arrives together with its original, just after it.
 */
public final class SimLink {
    static final long PS_PER_S_BITS = 8_000_000_000_000L; // picoseconds per second, times 8 bits

    final int index;
    final SplittableRandom random;

    private long delayNs;
    private long jitterNs;
    private long rateBitsPerSec;
    private long queueBytes = 1 << 20;
    private long ecnThresholdBytes = Long.MAX_VALUE;
    /** Whether the frame {@link #admit} just passed is marked CE. */
    boolean lastCe;

    private int overheadBytes;
    private double lossRate;
    private double burstEnter;
    private double burstLeave = 1.0;
    private double burstLossRate = 1.0;
    private double dupRate;
    private boolean blackhole;
    private double grayLossRate;
    private long grayDelayNs;

    // per destination host: serializer busy until (ps), last arrival (ns), burst state
    final long[] busyUntilPs;
    final long[] lastArrivalNs;
    final boolean[] burstBad;

    /** Frames offered to the link (after it was selected), and their bytes. */
    public long txFrames;

    public long txBytes;
    /** Frames handed to the destination host (duplicates included), and their bytes. */
    public long deliveredFrames;

    public long deliveredBytes;
    public long droppedBlackhole;
    public long droppedQueue;
    public long droppedRandom;
    public long droppedBurst;
    public long droppedGray;
    /** Frames marked CE (congestion experienced) instead of being dropped. */
    public long ceMarked;
    /** Extra copies made. */
    public long duplicated;

    SimLink(int index, long seed, int maxHosts) {
        this.index = index;
        this.random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + index * 0xD1B54A32D192ED03L);
        this.busyUntilPs = new long[maxHosts];
        this.lastArrivalNs = new long[maxHosts];
        this.burstBad = new boolean[maxHosts];
    }

    public int index() {
        return index;
    }

    /** One-way propagation delay. */
    public SimLink delayNs(long ns) {
        this.delayNs = nonNegative(ns);
        return this;
    }

    /** Uniform extra delay in [0, ns); non-zero allows reordering within the link. */
    public SimLink jitterNs(long ns) {
        this.jitterNs = nonNegative(ns);
        return this;
    }

    /** Serialization rate per direction; 0 is unlimited (no serialization delay, no queue). */
    public SimLink rateBitsPerSec(long bps) {
        this.rateBitsPerSec = nonNegative(bps);
        return this;
    }

    /** Egress queue bound per direction, the frame being serialized included. */
    public SimLink queueBytes(long bytes) {
        this.queueBytes = nonNegative(bytes);
        return this;
    }

    /**
     * Marks a frame CE when the egress queue it joins already holds at least {@code bytes} (needs a
     * rate); {@link Long#MAX_VALUE} (the default) never marks.
     */
    public SimLink ecnThresholdBytes(long bytes) {
        this.ecnThresholdBytes = nonNegative(bytes);
        return this;
    }

    /** Bytes each frame costs on the wire beyond its UDP payload (Ethernet, IP, UDP headers). */
    public SimLink overheadBytes(int bytes) {
        this.overheadBytes = (int) nonNegative(bytes);
        return this;
    }

    /** Independent random loss. */
    public SimLink lossRate(double p) {
        this.lossRate = probability(p);
        return this;
    }

    /**
     * Gilbert-Elliott burst loss: per frame the chain enters the bad state with {@code enter} and
     * leaves it with {@code leave}; in the bad state a frame is lost with {@code lossInBad}. The
     * long-run loss is {@code enter / (enter + leave) * lossInBad}, bursts last {@code 1 / leave}
     * frames on average. {@code enter = 0} turns it off.
     */
    public SimLink burstLoss(double enter, double leave, double lossInBad) {
        this.burstEnter = probability(enter);
        this.burstLeave = probability(leave);
        this.burstLossRate = probability(lossInBad);
        if (enter == 0) {
            java.util.Arrays.fill(burstBad, false);
        }
        return this;
    }

    /** Probability that a delivered frame is delivered twice. */
    public SimLink dupRate(double p) {
        this.dupRate = probability(p);
        return this;
    }

    /** Drops every frame while on. */
    public SimLink blackhole(boolean on) {
        this.blackhole = on;
        return this;
    }

    /** Gray failure: partial loss plus added delay, on together; (0, 0) turns it off. */
    public SimLink gray(double lossRate, long addedDelayNs) {
        this.grayLossRate = probability(lossRate);
        this.grayDelayNs = nonNegative(addedDelayNs);
        return this;
    }

    public long delayNs() {
        return delayNs;
    }

    public long jitterNs() {
        return jitterNs;
    }

    public long rateBitsPerSec() {
        return rateBitsPerSec;
    }

    public long queueBytes() {
        return queueBytes;
    }

    public double lossRate() {
        return lossRate;
    }

    public double dupRate() {
        return dupRate;
    }

    public boolean blackhole() {
        return blackhole;
    }

    /** Frames dropped for any reason. */
    public long droppedFrames() {
        return droppedBlackhole + droppedQueue + droppedRandom + droppedBurst + droppedGray;
    }

    /**
     * Decides the fate of a {@code length}-byte frame towards host {@code dst} committed at
     * {@code nowNs}: its arrival time, or -1 when it is dropped (counted here).
     */
    long admit(int dst, int length, long nowNs) {
        txFrames++;
        txBytes += length;
        lastCe = false;
        if (blackhole) {
            droppedBlackhole++;
            return -1;
        }
        long doneNs = nowNs;
        if (rateBitsPerSec > 0) {
            long nowPs = nowNs * 1000;
            long startPs = Math.max(nowPs, busyUntilPs[dst]);
            long wirePs = (length + overheadBytes) * PS_PER_S_BITS / rateBitsPerSec;
            long capacityPs = (long) ((double) queueBytes * PS_PER_S_BITS / rateBitsPerSec);
            if (startPs - nowPs + wirePs > capacityPs) {
                droppedQueue++;
                return -1;
            }
            if (startPs - nowPs >= (double) ecnThresholdBytes * PS_PER_S_BITS / rateBitsPerSec) {
                lastCe = true;
            }
            busyUntilPs[dst] = startPs + wirePs;
            doneNs = (startPs + wirePs + 999) / 1000;
        }
        if (lossRate > 0 && random.nextDouble() < lossRate) {
            droppedRandom++;
            return -1;
        }
        if (burstEnter > 0) {
            boolean bad = burstBad[dst];
            bad = bad ? random.nextDouble() >= burstLeave : random.nextDouble() < burstEnter;
            burstBad[dst] = bad;
            if (bad && random.nextDouble() < burstLossRate) {
                droppedBurst++;
                return -1;
            }
        }
        if (grayLossRate > 0 && random.nextDouble() < grayLossRate) {
            droppedGray++;
            return -1;
        }
        long arrivalNs = doneNs + delayNs + grayDelayNs;
        if (jitterNs > 0) {
            arrivalNs += (long) (random.nextDouble() * jitterNs);
        } else if (arrivalNs < lastArrivalNs[dst]) {
            arrivalNs = lastArrivalNs[dst]; // a path is FIFO, even when its delay just dropped
        }
        lastArrivalNs[dst] = arrivalNs;
        if (lastCe) {
            ceMarked++;
        }
        return arrivalNs;
    }

    /** Whether the frame just admitted is also duplicated. */
    boolean duplicate() {
        if (dupRate > 0 && random.nextDouble() < dupRate) {
            duplicated++;
            return true;
        }
        return false;
    }

    @Override
    public String toString() {
        return "link " + index + ": tx " + txFrames + " delivered " + deliveredFrames + " dropped blackhole "
                + droppedBlackhole + " queue " + droppedQueue + " random " + droppedRandom + " burst "
                + droppedBurst + " gray " + droppedGray + " duplicated " + duplicated + " ce " + ceMarked;
    }

    private static long nonNegative(long v) {
        if (v < 0) {
            throw new IllegalArgumentException("negative: " + v);
        }
        return v;
    }

    private static double probability(double p) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("not a probability: " + p);
        }
        return p;
    }
}
