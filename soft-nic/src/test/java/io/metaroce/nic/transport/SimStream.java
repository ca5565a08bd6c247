package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.sim.LinkSelector;
import io.metaroce.nic.sim.SimClock;
import io.metaroce.nic.sim.SimFabric;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.function.BiConsumer;

/**
 * Two real engines over a {@link SimFabric}, driven with the simulated clock: host A streams SENDs
 * to host B, each message of its own seeded length and content, and every byte of every received
 * message is compared with what was sent (canaries around each receive slot catch stray writes).
 * Deterministic: a seed, the fabric's settings and the impairment schedule give the same run.
 * Used by the gray-failure throughput guard and the gray-failure property tests.
 */
final class SimStream {
    static final int IP_A = 0xC6120001; // 198.18.0.1
    static final int IP_B = 0xC6120002; // 198.18.0.2
    static final int UDP = 4793;
    static final byte CANARY = (byte) 0x5a;

    /** The fabric and the stream. */
    static final class Config {
        long seed = 1;
        int links = 4;
        long rateBitsPerSec = 1_000_000_000L;
        long delayNs = 10_000;
        long queueBytes = 256 * 1024;
        int paths = 32;
        /** Source ports the entropies map to (Datapath.entropyPorts; 0: the entropy is the route key). */
        int entropyPorts;
        /** How the fabric picks a frame's link (default: entropy mod links, no collisions). */
        LinkSelector selector = LinkSelector.ENTROPY_MOD;

        int mtu = Ibv.MTU_4096;
        /** Message lengths are uniform in [minBytes, maxBytes]. */
        int minBytes = 64 * 1024;

        int maxBytes = 64 * 1024;
        /** Messages in all (the run ends when all completed, or at {@link #limitNs}). */
        int messages = Integer.MAX_VALUE;
        /** The daemon's timer floors (--rto-min-us 10000, --tlp-min-us 5000, --cc-slack-us 1000), as on a real host. */
        boolean daemonTimers;

        int sendsOutstanding = 16;
        int recvSlots = 48;
        long stepNs = 1_000;
        long warmupNs = 5_000_000;
        long measureNs = 40_000_000;
        /** Simulated time after which a run that has not completed all messages stops. */
        long limitNs = Long.MAX_VALUE;
        /** Called every step with the fabric and the time since the start of the run. */
        BiConsumer<SimFabric, Long> schedule = (f, t) -> {};
        /**
         * Network planes (docs/spec/transport.md, "Multi-plane QPs"): 2 gives each host a
         * {@link io.metaroce.nic.port.PlanePort} over this fabric (plane 0) and a second fabric of
         * the same links (plane 1, hosts at 198.18.1.1 and .2).
         */
        int planes = 1;
        /** What host A's port answers to {@link io.metaroce.nic.port.Port#sendBurst} (one plane only). */
        int sendBurst = 1;
        /** With 2 planes: called every step with plane 1's fabric and the time since the start. */
        BiConsumer<SimFabric, Long> plane1Schedule = (f, t) -> {};
        /** Called at the end of the run with the sending QP's requester (its paths' telemetry). */
        java.util.function.Consumer<RcRequester> inspect = r -> {};
    }

    /** What a run delivered: goodput over the measured interval, messages checked, counters. */
    record Result(
            long measuredBytes,
            double goodputBps,
            long messagesChecked,
            long bytesChecked,
            long elapsedNs,
            long retransmits,
            long opportunistic,
            long timeouts,
            long retirements,
            boolean failed,
            String note,
            long dataTx,
            long probes,
            long redraws,
            long work,
            long homeTrials,
            long homeReturns,
            long txFrames,
            long txCoalesced) {
        double gbps() {
            return goodputBps / 1e9;
        }
    }

    private SimStream() {}

    static final boolean DUMP = Boolean.getBoolean("simstream.dump");

    static void dump(RcRequester r, long t, TransportCounters tc, long measured) {
        StringBuilder b = new StringBuilder();
        b.append("t=")
                .append(t / 1000)
                .append("us window=")
                .append(r.window())
                .append(" unacked=")
                .append(r.unacknowledged())
                .append(" measured=")
                .append(measured)
                .append(" orp=")
                .append(tc.opportunisticRetransmits)
                .append(" retx=")
                .append(tc.dataRetransmits)
                .append(" cross=")
                .append(tc.crossPathLosses)
                .append(" spur=")
                .append(tc.spuriousLosses)
                .append('\n');
        for (int i = 0; i < r.pathCount(); i++) {
            Path p = r.path(i);
            b.append(String.format(
                    java.util.Locale.ROOT,
                    "  p%-3d e%-5d %-7s srtt %8d min %8d rate %12d cwnd %8d share %20d infl %8d sent %6d%n",
                    i,
                    p.entropy,
                    p.stateName(),
                    p.srttNs / 1000,
                    p.minRttNs == Long.MAX_VALUE ? -1 : p.minRttNs / 1000,
                    p.deliveryRateBps,
                    p.cwndBytes,
                    p.shareBytes,
                    p.inflightBytes,
                    p.packetsSent));
        }
        System.out.print(b);
    }

    static Result run(Config c) throws Exception {
        SimClock clock = new SimClock(1_000_000_000L);
        int slot = c.maxBytes;
        try (SimFabric fabric = new SimFabric(c.seed, c.links, clock, SimFabric.DEFAULT_MAX_FRAME, 16384, 2);
                Arena arena = Arena.ofShared()) {
            fabric.selector(c.selector);
            fabric.forEachLink(
                    l -> l.delayNs(c.delayNs).rateBitsPerSec(c.rateBitsPerSec).queueBytes(c.queueBytes));
            TransportSettings transport =
                    TransportSettings.SIMULATION.withPaths(c.paths).withEntropyPorts(c.entropyPorts);
            if (c.daemonTimers) {
                transport = transport.withFloors(10_000_000L, 5_000_000L, 1_000_000L);
            }
            SimFabric plane1 = c.planes == 1
                    ? null
                    : new SimFabric(c.seed + 1, c.links, clock, SimFabric.DEFAULT_MAX_FRAME, 16384, 2);
            if (plane1 != null) {
                plane1.selector(c.selector);
                plane1.forEachLink(l ->
                        l.delayNs(c.delayNs).rateBitsPerSec(c.rateBitsPerSec).queueBytes(c.queueBytes));
                BiConsumer<SimFabric, Long> plane0 = c.schedule;
                c.schedule = (f, t) -> {
                    plane0.accept(f, t);
                    c.plane1Schedule.accept(plane1, t);
                };
            }
            TestNode a = new TestNode(
                    plane1 == null
                            ? fabric.attach(IP_A, UDP).sendBurst(c.sendBurst)
                            : new io.metaroce.nic.port.PlanePort(
                                    fabric.attach(IP_A, UDP), plane1.attach(IP_A + 0x100, UDP)),
                    UDP,
                    clock,
                    transport);
            TestNode b = new TestNode(
                    plane1 == null
                            ? fabric.attach(IP_B, UDP)
                            : new io.metaroce.nic.port.PlanePort(
                                    fabric.attach(IP_B, UDP), plane1.attach(IP_B + 0x100, UDP)),
                    UDP,
                    clock,
                    transport);
            try {
                if (a.hello().status() != 0 || b.hello().status() != 0) {
                    throw new IllegalStateException("hello failed");
                }
                int pdA = a.allocPd();
                int pdB = b.allocPd();
                // one send slot per outstanding send, one receive slot (with canaries) per posted receive
                MemorySegment sendBuf = arena.allocate((long) c.sendsOutstanding * slot, 4096);
                long recvStride = slot + 64L;
                MemorySegment recvBuf = arena.allocate(recvStride * c.recvSlots, 4096);
                recvBuf.fill(CANARY);
                int[] sendMr = a.regMr(pdA, sendBuf, 0);
                int[] recvMr = b.regMr(pdB, recvBuf, Ibv.ACCESS_LOCAL_WRITE);
                TestNode.CqHandles cqA = a.createCq(1024, AbiConstants.NO_HANDLE);
                TestNode.CqHandles cqB = b.createCq(1024, AbiConstants.NO_HANDLE);
                TestNode.QpHandles qpA = a.createQp(pdA, cqA.handle(), cqA.handle(), 64, 1, 0);
                TestNode.QpHandles qpB = b.createQp(pdB, cqB.handle(), cqB.handle(), 64, 1, 0);
                a.connect(qpA.handle(), IP_B, qpB.qpn(), 0x10000, 0x20000, c.mtu);
                b.connect(qpB.handle(), IP_A, qpA.qpn(), 0x20000, 0x10000, c.mtu);
                return stream(
                        c, fabric, clock, a, b, qpA, qpB, cqA, cqB, sendBuf, recvBuf, recvStride, sendMr[1], recvMr[1]);
            } finally {
                a.close();
                b.close();
                if (plane1 != null) {
                    plane1.close();
                }
            }
        }
    }

    /** The length and first content byte of message {@code i} (a function of the seed). */
    private static long messageKey(long seed, long i) {
        long h = (seed ^ 0x9E3779B97F4A7C15L) + i * 0xBF58476D1CE4E5B9L;
        h ^= h >>> 31;
        h *= 0x94D049BB133111EBL;
        return h ^ (h >>> 29);
    }

    private static int lengthOf(Config c, long i) {
        long k = messageKey(c.seed, i);
        return c.minBytes + (int) Long.remainderUnsigned(k, c.maxBytes - c.minBytes + 1L);
    }

    private static void fill(MemorySegment s, long off, int len, long key) {
        Random r = new Random(key);
        int i = 0;
        for (; i + 8 <= len; i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, off + i, r.nextLong());
        }
        long last = r.nextLong();
        for (; i < len; i++, last >>>= 8) {
            s.set(ValueLayout.JAVA_BYTE, off + i, (byte) last);
        }
    }

    private static Result stream(
            Config c,
            SimFabric fabric,
            SimClock clock,
            TestNode a,
            TestNode b,
            TestNode.QpHandles qpA,
            TestNode.QpHandles qpB,
            TestNode.CqHandles cqA,
            TestNode.CqHandles cqB,
            MemorySegment sendBuf,
            MemorySegment recvBuf,
            long recvStride,
            int sendKey,
            int recvKey) {
        int slot = c.maxBytes;
        MemorySegment expect = Arena.ofAuto().allocate(Math.max(1, slot), 8);
        long start = clock.nowNs();
        long measureFrom = start + c.warmupNs;
        long end = measureFrom + c.measureNs;
        long[] addr = new long[1];
        int[] len = new int[1];
        long sendsPosted = 0;
        long sendsDone = 0;
        long recvsPosted = 0;
        long recvsDone = 0;
        long measured = 0;
        long checkedBytes = 0;
        boolean failed = false;
        String note = "";
        TransportCounters tc = a.engine.datapath().counters;
        long work = 0;
        while (clock.nowNs() < end && clock.nowNs() - start < c.limitNs && recvsDone < c.messages) {
            while (!failed && recvsPosted - recvsDone < c.recvSlots && recvsPosted < c.messages) {
                addr[0] = recvBuf.address() + (recvsPosted % c.recvSlots) * recvStride + 32;
                len[0] = slot;
                if (!b.post(qpB.rq(), recvsPosted, 0, 0, 0, addr, len, recvKey)) {
                    break;
                }
                recvsPosted++;
            }
            while (!failed && sendsPosted - sendsDone < c.sendsOutstanding && sendsPosted < c.messages) {
                long off = (sendsPosted % c.sendsOutstanding) * (long) slot;
                len[0] = lengthOf(c, sendsPosted);
                fill(sendBuf, off, len[0], messageKey(c.seed, sendsPosted));
                addr[0] = sendBuf.address() + off;
                if (!a.post(qpA.sq(), sendsPosted, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, addr, len, sendKey)) {
                    break;
                }
                sendsPosted++;
            }
            clock.advance(c.stepNs);
            long now = clock.nowNs();
            c.schedule.accept(fabric, now - start);
            if (DUMP && (now - start) % 5_000_000L == 0) {
                dump(a.engine.qpByQpn(qpA.qpn()).requester, now - start, tc, measured);
            }
            work += a.pump();
            work += b.pump();
            for (TestNode.Cqe e : a.poll(cqA.ring())) {
                if (e.wrId() != sendsDone) {
                    throw new AssertionError("send completion out of order: " + e.wrId() + " for " + sendsDone);
                }
                sendsDone++;
                if (e.status() != Ibv.WC_SUCCESS && !failed) {
                    failed = true;
                    note = "send failed with status " + e.status() + " at " + (now - start) / 1000 + " us";
                }
            }
            for (TestNode.Cqe e : b.poll(cqB.ring())) {
                if (e.wrId() != recvsDone) {
                    throw new AssertionError("receive completion out of order: " + e.wrId() + " for " + recvsDone);
                }
                if (e.status() != Ibv.WC_SUCCESS) {
                    failed = true;
                    note = "receive failed with status " + e.status();
                    recvsDone++;
                    continue;
                }
                int n = lengthOf(c, recvsDone);
                if (e.byteLen() != n) {
                    throw new AssertionError("message " + recvsDone + ": byte_len " + e.byteLen() + ", sent " + n);
                }
                long base = (recvsDone % c.recvSlots) * recvStride;
                fill(expect, 0, n, messageKey(c.seed, recvsDone));
                long mismatch = MemorySegment.mismatch(recvBuf, base + 32, base + 32 + n, expect, 0, n);
                if (mismatch != -1) {
                    throw new AssertionError("message " + recvsDone + ": byte " + mismatch + " differs");
                }
                for (long k = base; k < base + 32; k++) {
                    if (recvBuf.get(ValueLayout.JAVA_BYTE, k) != CANARY) {
                        throw new AssertionError("message " + recvsDone + ": canary before the slot overwritten");
                    }
                }
                for (long k = base + 32 + n; k < base + recvStride; k++) {
                    if (recvBuf.get(ValueLayout.JAVA_BYTE, k) != CANARY) {
                        throw new AssertionError("message " + recvsDone + ": write past its end at " + (k - base - 32));
                    }
                }
                // the slot goes back to canaries before it is posted again
                recvBuf.asSlice(base, recvStride).fill(CANARY);
                checkedBytes += n;
                if (now >= measureFrom) {
                    measured += n;
                }
                recvsDone++;
            }
        }
        c.inspect.accept(a.engine.qpByQpn(qpA.qpn()).requester);
        long elapsed = clock.nowNs() - start;
        long measuredNs = Math.max(1, Math.min(clock.nowNs(), end) - measureFrom);
        if (c.messages != Integer.MAX_VALUE && recvsDone < c.messages && !failed) {
            failed = true;
            note = "only " + recvsDone + " of " + c.messages + " messages in " + elapsed / 1000 + " us";
        }
        return new Result(
                measured,
                measured * 8e9 / measuredNs,
                recvsDone,
                checkedBytes,
                elapsed,
                tc.dataRetransmits,
                tc.opportunisticRetransmits,
                tc.timeouts,
                tc.pathRetirements,
                failed,
                note,
                tc.dataTx,
                tc.probesTx,
                tc.entropyRedraws,
                work,
                tc.homeTrials,
                tc.homeReturns,
                a.port.counters().txFrames,
                a.port.counters().txCoalesced);
    }
}
