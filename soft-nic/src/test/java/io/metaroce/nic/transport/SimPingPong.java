package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.sim.SimClock;
import io.metaroce.nic.sim.SimFabric;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * An {@code ibv_rc_pingpong}-like exchange between two real engines over a {@link SimFabric},
 * driven with the simulated clock in steps of {@link Config#stepNs}: each iteration the client
 * SENDs a message (signaled) and waits for both its send completion (the ACK) and the server's
 * reply; the server replies to each message once its own previous send completed. Every byte of
 * every message is checked. Reports, per window of iterations, the simulated time per iteration,
 * the frames both engines sent per iteration (data, ACKs, probes, tail-loss probes,
 * retransmissions, timeouts) and the duty cycles and their CPU time: simulated time is
 * load-independent (the measurement issue 17's cold start and latency regression are judged by),
 * CPU time is not. Used by {@code PingPongSimTest} and {@code bench/run-pingpong-sim}.
 */
public final class SimPingPong {
    static final int IP_A = 0xC6120001; // 198.18.0.1
    static final int IP_B = 0xC6120002; // 198.18.0.2
    static final int UDP = 4793;

    /** The fabric, the transport and the loop. */
    public static final class Config {
        public long seed = 1;
        public int links = 4;
        public long delayNs = 20_000;
        /** Uniform extra delay per frame in [0, jitterNs): scheduling noise of a real host, seeded. */
        public long jitterNs;

        public long rateBitsPerSec = 10_000_000_000L;
        public int paths = 48;
        public int bytes = 64;
        public int iterations = 5000;
        public long stepNs = 1_000;
        /** The daemon's timer floors on a real port (rto-min 10 ms, tlp-min 5 ms, cc-slack 1 ms). */
        public boolean daemonTimers = true;
        /** Iteration windows reported: [from, to) each. */
        public int[][] windows = {{0, 1000}, {4000, 5000}};
        /** Run-away guard: simulated time after which the run fails. */
        public long limitNs = 20_000_000_000L;
    }

    /** What one window of iterations took. */
    public record Window(
            int from,
            int to,
            double simUsPerIter,
            double dataPerIter,
            double acksPerIter,
            double probesPerIter,
            double tlpsPerIter,
            double retxPerIter,
            double timeoutsPerIter,
            double cyclesPerIter,
            double busyCyclesPerIter,
            double pathScansPerIter,
            double cpuNsPerIter) {}

    public record Result(Config config, Window[] windows, long bytesChecked, double idleCycleNs) {}

    private SimPingPong() {}

    /** Counters of both engines together, at one moment. */
    private record Snap(
            long t,
            long data,
            long acks,
            long probes,
            long tlps,
            long retx,
            long timeouts,
            long cycles,
            long busy,
            long scans,
            long cpuNs) {}

    public static Result run(Config c) throws Exception {
        SimClock clock = new SimClock(1_000_000_000L);
        try (SimFabric fabric = new SimFabric(c.seed, c.links, clock, SimFabric.DEFAULT_MAX_FRAME, 16384, 2);
                Arena arena = Arena.ofShared()) {
            fabric.forEachLink(l -> l.delayNs(c.delayNs).jitterNs(c.jitterNs).rateBitsPerSec(c.rateBitsPerSec));
            TransportSettings transport = TransportSettings.SIMULATION.withPaths(c.paths);
            if (c.daemonTimers) {
                transport = transport.withFloors(10_000_000L, 5_000_000L, 1_000_000L);
            }
            TestNode a = new TestNode(fabric.attach(IP_A, UDP), UDP, clock, transport);
            TestNode b = new TestNode(fabric.attach(IP_B, UDP), UDP, clock, transport);
            try {
                return loop(c, clock, arena, a, b);
            } finally {
                a.close();
                b.close();
            }
        }
    }

    private static long key(long seed, long i, int side) {
        long h = (seed ^ 0x9E3779B97F4A7C15L) + (2 * i + side) * 0xBF58476D1CE4E5B9L;
        h ^= h >>> 31;
        h *= 0x94D049BB133111EBL;
        return h ^ (h >>> 29);
    }

    private static void fill(MemorySegment s, long off, int len, long key) {
        long x = key;
        for (int i = 0; i < len; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            s.set(ValueLayout.JAVA_BYTE, off + i, (byte) (x >>> 56));
        }
    }

    private static void check(MemorySegment s, long off, int len, long key, String what) {
        long x = key;
        for (int i = 0; i < len; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            if (s.get(ValueLayout.JAVA_BYTE, off + i) != (byte) (x >>> 56)) {
                throw new AssertionError(what + ": byte " + i + " differs");
            }
        }
    }

    private static final int RECVS = 16;

    private static Result loop(Config c, SimClock clock, Arena arena, TestNode a, TestNode b) {
        if (a.hello().status() != 0 || b.hello().status() != 0) {
            throw new IllegalStateException("hello failed");
        }
        int pdA = a.allocPd();
        int pdB = b.allocPd();
        int n = c.bytes;
        MemorySegment sendA = arena.allocate(n, 4096);
        MemorySegment sendB = arena.allocate(n, 4096);
        MemorySegment recvA = arena.allocate((long) n * RECVS, 4096);
        MemorySegment recvB = arena.allocate((long) n * RECVS, 4096);
        int[] mrSendA = a.regMr(pdA, sendA, 0);
        int[] mrSendB = b.regMr(pdB, sendB, 0);
        int[] mrRecvA = a.regMr(pdA, recvA, Ibv.ACCESS_LOCAL_WRITE);
        int[] mrRecvB = b.regMr(pdB, recvB, Ibv.ACCESS_LOCAL_WRITE);
        TestNode.CqHandles cqA = a.createCq(256, AbiConstants.NO_HANDLE);
        TestNode.CqHandles cqB = b.createCq(256, AbiConstants.NO_HANDLE);
        TestNode.QpHandles qpA = a.createQp(pdA, cqA.handle(), cqA.handle(), 64, 1, 0);
        TestNode.QpHandles qpB = b.createQp(pdB, cqB.handle(), cqB.handle(), 64, 1, 0);
        a.connect(qpA.handle(), IP_B, qpB.qpn(), 0x10000, 0x20000, Ibv.MTU_4096);
        b.connect(qpB.handle(), IP_A, qpA.qpn(), 0x20000, 0x10000, Ibv.MTU_4096);
        long[] addr = new long[1];
        int[] len = {n};
        long recvPostedA = 0;
        long recvPostedB = 0;
        long sendPostedA = 0;
        long sendDoneA = 0;
        long recvDoneA = 0;
        long sendPostedB = 0;
        long sendDoneB = 0;
        long recvDoneB = 0;
        long checked = 0;
        long cycles = 0;
        long busy = 0;
        long cpuNs = 0;
        long start = clock.nowNs();
        Snap[] at = new Snap[c.iterations + 1];
        RcRequester reqA = a.engine.qpByQpn(qpA.qpn()).requester;
        RcRequester reqB = b.engine.qpByQpn(qpB.qpn()).requester;
        at[0] = snap(clock, a, b, reqA, reqB, 0, 0, 0);
        int iter = 0;
        while (iter < c.iterations) {
            if (clock.nowNs() - start > c.limitNs) {
                throw new AssertionError("iteration " + iter + " not done after " + c.limitNs / 1000 + " us");
            }
            while (recvPostedA - recvDoneA < RECVS) {
                addr[0] = recvA.address() + (recvPostedA % RECVS) * n;
                if (!a.post(qpA.rq(), recvPostedA, 0, 0, 0, addr, len, mrRecvA[1])) {
                    break;
                }
                recvPostedA++;
            }
            while (recvPostedB - recvDoneB < RECVS) {
                addr[0] = recvB.address() + (recvPostedB % RECVS) * n;
                if (!b.post(qpB.rq(), recvPostedB, 0, 0, 0, addr, len, mrRecvB[1])) {
                    break;
                }
                recvPostedB++;
            }
            if (sendPostedA == iter && sendDoneA == iter && recvDoneA == iter) {
                fill(sendA, 0, n, key(c.seed, iter, 0));
                addr[0] = sendA.address();
                if (!a.post(qpA.sq(), iter, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, addr, len, mrSendA[1])) {
                    throw new AssertionError("SQ full");
                }
                sendPostedA++;
            }
            if (sendPostedB < recvDoneB && sendDoneB == sendPostedB) {
                fill(sendB, 0, n, key(c.seed, sendPostedB, 1));
                addr[0] = sendB.address();
                if (!b.post(qpB.sq(), sendPostedB, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, addr, len, mrSendB[1])) {
                    throw new AssertionError("SQ full");
                }
                sendPostedB++;
            }
            clock.advance(c.stepNs);
            long t0 = System.nanoTime();
            int w = a.pump();
            long t1 = System.nanoTime();
            int v = b.pump();
            long t2 = System.nanoTime();
            cycles += 2;
            busy += (w > 0 ? 1 : 0) + (v > 0 ? 1 : 0);
            cpuNs += t2 - t0;
            for (TestNode.Cqe e : a.poll(cqA.ring())) {
                if (e.status() != Ibv.WC_SUCCESS) {
                    throw new AssertionError("A: completion status " + e.status() + " at iteration " + iter);
                }
                if (e.opcode() == Ibv.WC_SEND) {
                    sendDoneA++;
                } else {
                    if (e.byteLen() != n || e.wrId() != recvDoneA) {
                        throw new AssertionError("A: receive " + e.wrId() + " of " + e.byteLen() + " bytes");
                    }
                    check(recvA, (recvDoneA % RECVS) * n, n, key(c.seed, recvDoneA, 1), "reply " + recvDoneA);
                    checked += n;
                    recvDoneA++;
                }
            }
            for (TestNode.Cqe e : b.poll(cqB.ring())) {
                if (e.status() != Ibv.WC_SUCCESS) {
                    throw new AssertionError("B: completion status " + e.status() + " at iteration " + iter);
                }
                if (e.opcode() == Ibv.WC_SEND) {
                    sendDoneB++;
                } else {
                    if (e.byteLen() != n || e.wrId() != recvDoneB) {
                        throw new AssertionError("B: receive " + e.wrId() + " of " + e.byteLen() + " bytes");
                    }
                    check(recvB, (recvDoneB % RECVS) * n, n, key(c.seed, recvDoneB, 0), "message " + recvDoneB);
                    checked += n;
                    recvDoneB++;
                }
            }
            if (sendDoneA > iter && recvDoneA > iter) {
                iter++;
                at[iter] = snap(clock, a, b, reqA, reqB, cycles, busy, cpuNs);
            }
        }
        Window[] ws = new Window[c.windows.length];
        for (int k = 0; k < ws.length; k++) {
            int from = c.windows[k][0];
            int to = Math.min(c.windows[k][1], c.iterations);
            Snap x = at[from];
            Snap y = at[to];
            double m = Math.max(1, to - from);
            ws[k] = new Window(
                    from,
                    to,
                    (y.t - x.t) / 1000.0 / m,
                    (y.data - x.data) / m,
                    (y.acks - x.acks) / m,
                    (y.probes - x.probes) / m,
                    (y.tlps - x.tlps) / m,
                    (y.retx - x.retx) / m,
                    (y.timeouts - x.timeouts) / m,
                    (y.cycles - x.cycles) / m,
                    (y.busy - x.busy) / m,
                    (y.scans - x.scans) / m,
                    (y.cpuNs - x.cpuNs) / m);
        }
        // the cost of a duty cycle with the QP idle (nothing in flight): what a busy-polling
        // engine spends per spin
        for (int i = 0; i < 20_000; i++) {
            a.pump();
        }
        long best = Long.MAX_VALUE;
        for (int r = 0; r < 5; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < 20_000; i++) {
                a.pump();
            }
            best = Math.min(best, System.nanoTime() - t0);
        }
        return new Result(c, ws, checked, best / 20_000.0);
    }

    private static Snap snap(
            SimClock clock,
            TestNode a,
            TestNode b,
            RcRequester reqA,
            RcRequester reqB,
            long cycles,
            long busy,
            long cpuNs) {
        TransportCounters x = a.engine.datapath().counters;
        TransportCounters y = b.engine.datapath().counters;
        return new Snap(
                clock.nowNs(),
                x.dataTx + y.dataTx,
                x.acksTx + y.acksTx,
                x.probesTx + y.probesTx,
                x.tlps + y.tlps,
                x.dataRetransmits + y.dataRetransmits,
                x.timeouts + x.pathTimeouts + y.timeouts + y.pathTimeouts,
                cycles,
                busy,
                reqA.pathTimerScans() + reqB.pathTimerScans(),
                cpuNs);
    }

    /** One line per window, for the benchmark table and the test's output. */
    public static String format(Result r) {
        StringBuilder s = new StringBuilder();
        for (Window w : r.windows) {
            s.append(String.format(
                    java.util.Locale.ROOT,
                    "| %5d | %6d | %4d-%-4d | %8.1f | %5.2f | %5.2f | %5.3f | %5.3f | %5.3f | %5.3f | %6.1f | %5.1f | %5.1f | %8.1f | %6.0f |%n",
                    r.config.paths,
                    r.config.bytes,
                    w.from + 1,
                    w.to,
                    w.simUsPerIter,
                    w.dataPerIter,
                    w.acksPerIter,
                    w.probesPerIter,
                    w.tlpsPerIter,
                    w.retxPerIter,
                    w.timeoutsPerIter,
                    w.cyclesPerIter,
                    w.busyCyclesPerIter,
                    w.pathScansPerIter,
                    w.cpuNsPerIter / 1000.0,
                    r.idleCycleNs));
        }
        return s.toString();
    }

    public static final String HEADER =
            "| paths | bytes | iterations | sim us/iter | data/iter | ACKs/iter | probes/iter | TLPs/iter | retx/iter | timeouts/iter | cycles/iter | busy cycles/iter | path-timer scans/iter | CPU us/iter | idle cycle ns |\n"
                    + "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
}
