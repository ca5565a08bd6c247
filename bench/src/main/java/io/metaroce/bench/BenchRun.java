package io.metaroce.bench;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.sim.LinkSelector;
import io.metaroce.nic.sim.SimClock;
import io.metaroce.nic.sim.SimFabric;
import io.metaroce.nic.sim.SimLink;
import io.metaroce.nic.transport.TransportCounters;
import io.metaroce.nic.transport.TransportSettings;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One measurement: two real engines (EngineAgent + VerbsService, as in the daemon) over a
 * SimFabric, driven step by step with the simulated clock; host A streams SENDs to host B as fast
 * as the transport takes them, and the bytes of B's successful receive completions during the
 * measured interval are the goodput.
 */
final class BenchRun {
    static final int IP_A = 0xC6120001; // 198.18.0.1
    static final int IP_B = 0xC6120002; // 198.18.0.2
    static final int UDP = 4793;

    record Result(
            Scenario scenario,
            TransportMode mode,
            long seed,
            int impairedLink,
            long goodBytes,
            double goodputBps,
            double fraction,
            long messages,
            long retransmits,
            long timeouts,
            long linkDrops,
            long detectNs,
            long detectSrttNs,
            String note,
            double wallSeconds) {}

    private final BenchConfig cfg;
    private final Scenario scenario;
    private final TransportMode mode;
    private final long seed;

    BenchRun(BenchConfig cfg, Scenario scenario, TransportMode mode, long seed) {
        this.cfg = cfg;
        this.scenario = scenario;
        this.mode = mode;
        this.seed = seed;
    }

    Result run() throws Exception {
        long wallStart = System.nanoTime();
        SimClock clock = new SimClock(1_000_000_000L);
        int maxFrame = SimFabric.DEFAULT_MAX_FRAME;
        // enough frames for every queue full plus what is in flight on the wires
        long perLinkFrames = cfg.queueBytes / 256 + cfg.rateBitsPerSec / 8 * 2 * cfg.delayNs / 1_000_000_000L / 64;
        int pool = (int) Math.min(1 << 17, Math.max(8192, 2 * cfg.links * (perLinkFrames / 4 + 256)));
        try (SimFabric fabric = new SimFabric(seed, cfg.links, clock, maxFrame, pool, 2);
                Arena arena = Arena.ofShared()) {
            LinkSelector selector = cfg.hashSelector ? LinkSelector.HASH : LinkSelector.ENTROPY_MOD;
            fabric.selector(selector);
            fabric.forEachLink(l ->
                    l.delayNs(cfg.delayNs).rateBitsPerSec(cfg.rateBitsPerSec).queueBytes(cfg.queueBytes));
            TransportSettings transport = mode.settings(TransportSettings.SIMULATION);
            TestNode a = new TestNode(fabric.attach(IP_A, UDP), UDP, clock, transport);
            TestNode b = new TestNode(fabric.attach(IP_B, UDP), UDP, clock, transport);
            try {
                return stream(fabric, selector, clock, arena, a, b, wallStart);
            } finally {
                a.close();
                b.close();
            }
        }
    }

    private Result stream(
            SimFabric fabric,
            LinkSelector selector,
            SimClock clock,
            Arena arena,
            TestNode a,
            TestNode b,
            long wallStart) {
        check(a.hello().status() == 0 && b.hello().status() == 0, "hello");
        int pdA = a.allocPd();
        int pdB = b.allocPd();
        int msg = cfg.messageBytes;
        int slots = cfg.recvsPosted;
        MemorySegment sendBuf = arena.allocate(msg, 4096);
        MemorySegment recvBuf = arena.allocate((long) msg * slots, 4096);
        for (int i = 0; i < msg; i += 8) {
            sendBuf.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
        }
        int[] sendMr = a.regMr(pdA, sendBuf, 0);
        int[] recvMr = b.regMr(pdB, recvBuf, Ibv.ACCESS_LOCAL_WRITE);
        TestNode.CqHandles cqA = a.createCq(1024, AbiConstants.NO_HANDLE);
        TestNode.CqHandles cqB = b.createCq(1024, AbiConstants.NO_HANDLE);
        TestNode.QpHandles qpA = a.createQp(pdA, cqA.handle(), cqA.handle(), 64, 1, 0);
        TestNode.QpHandles qpB = b.createQp(pdB, cqB.handle(), cqB.handle(), 64, 1, 0);
        // The impaired link: the one the baseline's single path (path 0 of 1) takes from A to B.
        int impaired = selector.link(
                IP_A, IP_B, UDP, io.metaroce.nic.transport.RcRequester.entropy(qpA.qpn(), 0, 1, 0) & 0xffff, cfg.links);
        scenario.before(fabric, cfg.rateBitsPerSec, impaired);
        long[] framesBefore = new long[fabric.links()];
        for (int i = 0; i < fabric.links(); i++) {
            framesBefore[i] = fabric.link(i).txFrames;
        }
        a.connect(qpA.handle(), IP_B, qpB.qpn(), 0x10000, 0x20000, cfg.mtu);
        b.connect(qpB.handle(), IP_A, qpA.qpn(), 0x20000, 0x10000, cfg.mtu);

        long start = clock.nowNs();
        long measureFrom = start + cfg.warmupNs;
        long eventAt = measureFrom + cfg.measureNs / 2;
        long end = measureFrom + cfg.measureNs;
        long[] sendAddr = {sendBuf.address()};
        int[] sendLen = {msg};
        long[] recvAddr = new long[1];
        int[] recvLen = {msg};
        long sendsPosted = 0;
        long sendsDone = 0;
        long recvsPosted = 0;
        long recvsDone = 0;
        long goodBytes = 0;
        long messages = 0;
        boolean eventDone = false;
        long detectNs = -1;
        // smoothed RTT of every path of A's QP just before the blackhole, and that of the path
        // found down (the detection time in units of it: the target is within 3)
        long[] srttBefore = new long[io.metaroce.nic.transport.RcRequester.MAX_PATHS];
        long detectSrttNs = -1;
        io.metaroce.nic.transport.Qp sender = a.engine.qpByQpn(qpA.qpn());
        String note = "";
        boolean failed = false;
        long retransmitsAtStart = 0;
        long timeoutsAtStart = 0;
        boolean measuring = false;
        while (clock.nowNs() < end) {
            while (!failed && recvsPosted - recvsDone < slots) {
                recvAddr[0] = recvBuf.address() + (recvsPosted % slots) * (long) msg;
                if (!b.post(qpB.rq(), recvsPosted, 0, 0, 0, recvAddr, recvLen, recvMr[1])) {
                    break;
                }
                recvsPosted++;
            }
            while (!failed && sendsPosted - sendsDone < cfg.sendsOutstanding) {
                if (!a.post(qpA.sq(), sendsPosted, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, sendAddr, sendLen, sendMr[1])) {
                    break;
                }
                sendsPosted++;
            }
            clock.advance(cfg.stepNs);
            long now = clock.nowNs();
            if (!measuring && now >= measureFrom) {
                measuring = true;
                retransmitsAtStart = a.engine.datapath().counters.dataRetransmits;
                timeoutsAtStart = a.engine.datapath().counters.timeouts;
            }
            if (scenario.hasEvent() && !eventDone && now >= eventAt) {
                for (int i = 0; i < sender.requester.pathCount(); i++) {
                    srttBefore[i] = sender.requester.path(i).srttNs;
                }
                scenario.midRun(fabric, impaired);
                eventDone = true;
            }
            a.pump();
            b.pump();
            if (eventDone && detectNs < 0 && mode.anyPathDown(a.engine)) {
                detectNs = now - eventAt;
                for (int i = 0; i < sender.requester.pathCount(); i++) {
                    if (sender.requester.path(i).state != io.metaroce.nic.transport.Path.ACTIVE) {
                        detectSrttNs = srttBefore[i];
                        break;
                    }
                }
            }
            for (TestNode.Cqe c : a.poll(cqA.ring())) {
                sendsDone++;
                if (c.status() != Ibv.WC_SUCCESS && !failed) {
                    failed = true;
                    note = "QP failed at " + (now - measureFrom) / 1_000_000 + " ms: wc status " + c.status();
                }
            }
            for (TestNode.Cqe c : b.poll(cqB.ring())) {
                recvsDone++;
                if (c.status() == Ibv.WC_SUCCESS && now >= measureFrom) {
                    goodBytes += c.byteLen();
                    messages++;
                }
            }
        }
        // the data itself: the last completed slot holds the sender's pattern
        if (recvsDone > 0) {
            long slot = (recvsDone - 1) % slots;
            if (MemorySegment.mismatch(recvBuf, slot * msg, slot * msg + msg, sendBuf, 0, msg) != -1) {
                throw new IllegalStateException("received bytes differ from the sent ones (slot " + slot + ")");
            }
        }
        if (!mode.exposesPathStates()) {
            // the baseline's traffic must have taken the impaired link: it carried the most frames
            int busiest = 0;
            for (int i = 1; i < fabric.links(); i++) {
                if (fabric.link(i).txFrames - framesBefore[i] > fabric.link(busiest).txFrames - framesBefore[busiest]) {
                    busiest = i;
                }
            }
            if (busiest != impaired) {
                throw new IllegalStateException(
                        "the baseline's frames went over link " + busiest + ", not the impaired link " + impaired);
            }
        }
        TransportCounters tc = a.engine.datapath().counters;
        long drops = 0;
        for (int i = 0; i < fabric.links(); i++) {
            SimLink l = fabric.link(i);
            drops += l.droppedFrames();
        }
        if (fabric.droppedPoolEmpty > 0) {
            note += (note.isEmpty() ? "" : "; ") + "fabric pool ran dry " + fabric.droppedPoolEmpty + " times";
        }
        if (scenario.hasEvent() && !mode.exposesPathStates()) {
            detectNs = -2; // n/a
        }
        double bps = goodBytes * 8 * 1e9 / cfg.measureNs;
        return new Result(
                scenario,
                mode,
                seed,
                impaired,
                goodBytes,
                bps,
                bps / cfg.aggregateBitsPerSec(),
                messages,
                tc.dataRetransmits - retransmitsAtStart,
                tc.timeouts - timeoutsAtStart,
                drops,
                detectNs,
                detectSrttNs,
                note,
                (System.nanoTime() - wallStart) / 1e9);
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what + " failed");
        }
    }
}
