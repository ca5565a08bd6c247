package io.metaroce.bench.jverbs;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.Mtu;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.RcConnector;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The loopback RC pair the java-verbs benchmarks share: QP a (on CQ a) connected to QP b (on
 * CQ b) of one device, each with room for {@code 2 * window} requests, one 4 KiB registered
 * buffer, a 64-byte signaled SEND from offset 0 and a receive into offset 2048, and the raw loop:
 * {@link #postSend()} counts what is in flight, {@link #drain()} polls both CQs (send completions
 * free the window, receives are posted again). Confined to the benchmark's thread.
 */
final class LoopbackRcPair implements AutoCloseable {

    static final int MSG = 64;

    final Context ctx;
    final CompletionQueue cqA;
    final CompletionQueue cqB;
    final QueuePair a;
    final QueuePair b;
    final SendWorkRequest send;
    final RecvWorkRequest recv;
    private final Arena arena = Arena.ofShared();
    private final ProtectionDomain pd;
    private final MemoryRegion mr;
    private final WorkCompletions wcs = new WorkCompletions(16);
    private final int window;
    private long inflight;

    LoopbackRcPair(String device, int gidIndex, int window) {
        this.window = window;
        ctx = Device.open(device);
        pd = ctx.allocateProtectionDomain();
        cqA = ctx.createCompletionQueue(2 * window + 4);
        cqB = ctx.createCompletionQueue(2 * window + 4);
        a = pd.createQueuePair(QueuePair.rc(cqA, cqA).maxSendWr(2 * window).maxRecvWr(2 * window));
        b = pd.createQueuePair(QueuePair.rc(cqB, cqB).maxSendWr(2 * window).maxRecvWr(2 * window));
        MemorySegment buf = arena.allocate(4096, 4096);
        buf.fill((byte) 0x5a);
        mr = pd.register(buf, Access.LOCAL_WRITE);
        a.toInit(1, 0);
        b.toInit(1, 0);
        RcConnector.connectToEachOther(a, b, new ConnectOptions(1, gidIndex, Mtu.MTU_1024, 0, 0));
        send = new SendWorkRequest(1).wrId(1).send().signaled(true).sge(mr, 0, MSG);
        recv = new RecvWorkRequest(1).wrId(2).sge(mr, 2048, MSG);
    }

    /** The raw loop: b keeps {@code 2 * window} receives posted. */
    void postReceives() {
        for (int i = 0; i < 2 * window; i++) {
            b.postRecv(recv);
        }
    }

    /** Polls both CQs once: send completions free the window, receives are posted again. */
    void drain() {
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

    /** One SEND of the raw loop, after draining while the window is full; the count in flight. */
    long postSend() {
        while (inflight >= window) {
            drain();
        }
        a.postSend(send);
        return ++inflight;
    }

    /** Polls an empty-or-not CQ of this context into the pair's completions (the empty-poll loop). */
    int poll(CompletionQueue cq) {
        return cq.poll(wcs);
    }

    /** Waits for the raw loop's sends, then frees everything. */
    @Override
    public void close() {
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
        pd.close();
        ctx.close();
        arena.close();
    }
}
