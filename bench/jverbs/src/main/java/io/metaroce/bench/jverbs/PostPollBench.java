package io.metaroce.bench.jverbs;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.QpEndpoint;
import io.metaroce.verbs.cm.RcConnector;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * Post+poll cost of java-verbs, the same two loops as {@code bench/jverbs/c/verbs_loop.c}:
 *
 * <ul>
 *   <li>{@code sendRecv}: one 64-byte signaled SEND from QP a to QP b of a loopback pair on the
 *       device, at most 16 in flight; a full window polls both CQs (send completions free it,
 *       receives are re-posted). One op = one message, through the provider and its daemon.
 *   <li>{@code pollEmpty}: one {@code poll} of 16 entries on a CQ that never completes.
 * </ul>
 *
 * Needs a device (mrce0 with its daemon, LD_PRELOAD=libmetaroce.so): {@code run-jverbs-bench}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class PostPollBench {

    static final int WINDOW = 16;
    static final int MSG = 64;

    @Param("mrce0")
    public String device;

    @Param("0")
    public int gidIndex;

    private Arena arena;
    private Context ctx;
    private ProtectionDomain pd;
    private CompletionQueue cqA;
    private CompletionQueue cqB;
    private CompletionQueue cqEmpty;
    private QueuePair a;
    private QueuePair b;
    private MemoryRegion mr;
    private SendWorkRequest send;
    private RecvWorkRequest recv;
    private WorkCompletions wcs;
    private long inflight;

    @Setup(Level.Trial)
    public void setup() {
        arena = Arena.ofShared();
        ctx = Device.open(device);
        pd = ctx.allocateProtectionDomain();
        cqA = ctx.createCompletionQueue(2 * WINDOW + 4);
        cqB = ctx.createCompletionQueue(2 * WINDOW + 4);
        cqEmpty = ctx.createCompletionQueue(16);
        a = pd.createQueuePair(QueuePair.rc(cqA, cqA).maxSendWr(2 * WINDOW).maxRecvWr(2 * WINDOW));
        b = pd.createQueuePair(QueuePair.rc(cqB, cqB).maxSendWr(2 * WINDOW).maxRecvWr(2 * WINDOW));
        MemorySegment buf = arena.allocate(4096, 4096);
        buf.fill((byte) 0x5a);
        mr = pd.register(buf, Access.LOCAL_WRITE);
        ConnectOptions oa = new ConnectOptions(1, gidIndex, io.metaroce.verbs.Mtu.MTU_1024, 0, 0);
        ConnectOptions ob = oa;
        a.toInit(1, 0);
        b.toInit(1, 0);
        QpEndpoint ea = RcConnector.localEndpoint(a, oa);
        QpEndpoint eb = RcConnector.localEndpoint(b, ob);
        RcConnector.connect(a, oa, eb);
        RcConnector.connect(b, ob, ea);
        send = new SendWorkRequest(1).wrId(1).send().signaled(true).sge(mr, 0, MSG);
        recv = new RecvWorkRequest(1).wrId(2).sge(mr, 2048, MSG);
        wcs = new WorkCompletions(16);
        for (int i = 0; i < 2 * WINDOW; i++) {
            b.postRecv(recv);
        }
    }

    private void drain() {
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
    public long sendRecv() {
        while (inflight >= WINDOW) {
            drain();
        }
        a.postSend(send);
        return ++inflight;
    }

    @Benchmark
    public int pollEmpty() {
        return cqEmpty.poll(wcs);
    }

    @TearDown(Level.Trial)
    public void teardown() {
        while (inflight > 0) {
            drain();
        }
        wcs.close();
        send.close();
        recv.close();
        a.close();
        b.close();
        mr.close();
        cqA.close();
        cqB.close();
        cqEmpty.close();
        pd.close();
        ctx.close();
        arena.close();
    }
}
