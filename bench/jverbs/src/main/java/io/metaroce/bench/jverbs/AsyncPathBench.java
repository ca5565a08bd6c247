package io.metaroce.bench.jverbs;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.CompletionPoller;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.QpEndpoint;
import io.metaroce.verbs.cm.RcConnector;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The asynchronous path's cost per message against the raw poll loop, on a loopback RC pair of
 * the device (as {@link PostPollBench}): one op = one 64-byte SEND from QP a received by QP b,
 * at most {@code window} in flight.
 *
 * <ul>
 *   <li>{@code raw}: post, and when the window is full poll both CQs on this thread (receives
 *       re-posted): allocation-free, no thread hand-off.
 *   <li>{@code futures}: the same messages through a {@link CompletionPoller} per CQ: each send
 *       and each receive registers a CompletableFuture (unique wr_ids), the poller threads
 *       complete them; when the window is full this thread joins the oldest pair. The difference
 *       is the async path's cost: futures, snapshots, the map and the hand-off between threads.
 * </ul>
 *
 * With {@code window} 1 each op is a whole round trip through the daemon (latency); with 16 it
 * is the cost per message when pipelined. Needs mrce0 and its daemon: {@code run-jverbs-bench}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class AsyncPathBench {

    static final int MSG = 64;

    @Param("mrce0")
    public String device;

    @Param("0")
    public int gidIndex;

    @Param({"1", "16"})
    public int window;

    private Arena arena;
    private Context ctx;
    private ProtectionDomain pd;
    private CompletionQueue cqA;
    private CompletionQueue cqB;
    private QueuePair a;
    private QueuePair b;
    private MemoryRegion mr;
    private SendWorkRequest send;
    private RecvWorkRequest recv;
    private WorkCompletions wcs;
    private CompletionPoller pollerA;
    private CompletionPoller pollerB;
    private final ArrayDeque<CompletableFuture<WorkCompletion.Snapshot>> sends = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<WorkCompletion.Snapshot>> recvs = new ArrayDeque<>();
    private long inflight;
    private long nextId = 1;

    /** Each benchmark runs in a fork of its own (JMH's default): set up what it uses. */
    @Setup(Level.Trial)
    public void setup(org.openjdk.jmh.infra.BenchmarkParams params) {
        arena = Arena.ofShared();
        ctx = Device.open(device);
        pd = ctx.allocateProtectionDomain();
        cqA = ctx.createCompletionQueue(2 * window + 4);
        cqB = ctx.createCompletionQueue(2 * window + 4);
        a = pd.createQueuePair(QueuePair.rc(cqA, cqA).maxSendWr(2 * window).maxRecvWr(2 * window));
        b = pd.createQueuePair(QueuePair.rc(cqB, cqB).maxSendWr(2 * window).maxRecvWr(2 * window));
        MemorySegment buf = arena.allocate(4096, 4096);
        buf.fill((byte) 0x5a);
        mr = pd.register(buf, Access.LOCAL_WRITE);
        ConnectOptions o = new ConnectOptions(1, gidIndex, io.metaroce.verbs.Mtu.MTU_1024, 0, 0);
        a.toInit(1, 0);
        b.toInit(1, 0);
        QpEndpoint ea = RcConnector.localEndpoint(a, o);
        QpEndpoint eb = RcConnector.localEndpoint(b, o);
        RcConnector.connect(a, o, eb);
        RcConnector.connect(b, o, ea);
        send = new SendWorkRequest(1).wrId(1).send().signaled(true).sge(mr, 0, MSG);
        recv = new RecvWorkRequest(1).wrId(2).sge(mr, 2048, MSG);
        wcs = new WorkCompletions(16);
        if (params.getBenchmark().endsWith(".futures")) {
            pollerA = CompletionPoller.start(cqA);
            pollerB = CompletionPoller.start(cqB);
        } else {
            for (int i = 0; i < 2 * window; i++) { // raw: b keeps 2*window receives posted
                b.postRecv(recv);
            }
        }
    }

    private void drainRaw() {
        int n = cqA.poll(wcs);
        for (int i = 0; i < n; i++) {
            if (wcs.get(i).status() != 0) {
                wcs.get(i).check();
            }
            inflight--;
        }
        n = cqB.poll(wcs);
        for (int i = 0; i < n; i++) {
            if (wcs.get(i).status() != 0) {
                wcs.get(i).check();
            }
            b.postRecv(recv);
        }
    }

    @Benchmark
    public long raw() {
        while (inflight >= window) {
            drainRaw();
        }
        a.postSend(send);
        return ++inflight;
    }

    @Benchmark
    public int futures() {
        if (sends.size() >= window) {
            sends.poll().join();
            recvs.poll().join();
        }
        recvs.add(pollerB.postRecv(b, recv.wrId(nextId++)));
        sends.add(pollerA.postSend(a, send.wrId(nextId++)));
        return sends.size();
    }

    @TearDown(Level.Trial)
    public void teardown() {
        while (!sends.isEmpty()) {
            sends.poll().join();
            recvs.poll().join();
        }
        while (inflight > 0) {
            drainRaw();
        }
        if (pollerA != null) {
            pollerA.close();
            pollerB.close();
        }
        wcs.close();
        send.close();
        recv.close();
        a.close();
        b.close();
        mr.close();
        cqA.close();
        cqB.close();
        pd.close();
        ctx.close();
        arena.close();
    }
}
