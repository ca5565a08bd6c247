package io.metaroce.it.jverbs.apps;

import static io.metaroce.it.jverbs.apps.Checks.expect;
import static io.metaroce.it.jverbs.apps.Checks.require;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.VerbsException;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Safe memory and use-after-close on mrce0, one PASS/FAIL line each and "N passed, M failed":
 * closes that race with a poller or a poster on another thread (they must end in an
 * IllegalStateException, never a crash), regions tied to their arena, regions that own their
 * memory, completion snapshots and immediates in host order.
 */
public final class SafetyApp {

    private SafetyApp() {}

    public static void main(String[] args) throws Exception {
        Checks c = new Checks();

        c.check("closingACqWhileAPollerLoopsEndsThePollerWithAnException", () -> {
            for (int round = 0; round < 50; round++) {
                try (Context ctx = Device.open("mrce0"); WorkCompletions wcs = new WorkCompletions(16)) {
                    CompletionQueue cq = ctx.createCompletionQueue(64);
                    AtomicLong polls = new AtomicLong();
                    AtomicReference<Throwable> end = new AtomicReference<>();
                    CountDownLatch looping = new CountDownLatch(1);
                    Thread poller = Thread.ofPlatform().start(() -> {
                        try {
                            for (;;) {
                                cq.poll(wcs);
                                if (polls.incrementAndGet() == 50) {
                                    looping.countDown();
                                }
                            }
                        } catch (Throwable t) {
                            end.set(t);
                        }
                    });
                    require(looping.await(60, TimeUnit.SECONDS), "the poller runs");
                    cq.close();
                    poller.join(60_000);
                    require(!poller.isAlive(), "the poller ended");
                    require(end.get() instanceof IllegalStateException && end.get().getMessage().endsWith("is closed"),
                            "poller ended with " + end.get());
                }
            }
        });

        c.check("closingAQpWhileAThreadPostsEndsThePosterWithAnException", () -> {
            for (int round = 0; round < 20; round++) {
                try (Context ctx = Device.open("mrce0"); ProtectionDomain pd = ctx.allocateProtectionDomain();
                        CompletionQueue cq = ctx.createCompletionQueue(64);
                        MemoryRegion mr = pd.allocateRegistered(4096);
                        RecvWorkRequest recv = new RecvWorkRequest(1).wrId(1).sge(mr, 0, 64)) {
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq).maxRecvWr(16));
                    qp.toInit(1, Access.LOCAL_WRITE);
                    AtomicReference<Throwable> end = new AtomicReference<>();
                    CountDownLatch looping = new CountDownLatch(1);
                    Thread poster = Thread.ofPlatform().start(() -> {
                        long n = 0;
                        try {
                            for (;; n++) {
                                try {
                                    qp.postRecv(recv);
                                } catch (VerbsException full) {
                                    // the receive queue is full: keep calling into the provider
                                }
                                if (n == 50) {
                                    looping.countDown();
                                }
                            }
                        } catch (Throwable t) {
                            end.set(t);
                        }
                    });
                    require(looping.await(60, TimeUnit.SECONDS), "the poster runs");
                    qp.close();
                    poster.join(60_000);
                    require(!poster.isAlive(), "the poster ended");
                    require(end.get() instanceof IllegalStateException, "poster ended with " + end.get());
                }
            }
        });

        c.check("closingTheArenaFirstDeregistersATiedRegion", () -> {
            try (Context ctx = Device.open("mrce0"); ProtectionDomain pd = ctx.allocateProtectionDomain();
                    CompletionQueue cq = ctx.createCompletionQueue(8);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq));
                    RecvWorkRequest recv = new RecvWorkRequest(1).wrId(5)) {
                qp.toInit(1, Access.LOCAL_WRITE);
                Arena arena = Arena.ofShared();
                MemorySegment buf = arena.allocate(8192, 4096);
                MemoryRegion mr = pd.register(arena, buf, Access.LOCAL_WRITE);
                recv.sge(mr, 0, 4096);
                qp.postRecv(recv); // fine while the arena is open
                arena.close();
                require(mr.isClosed(), "closing the arena closed (deregistered) the region");
                IllegalStateException e = expect(IllegalStateException.class, () -> qp.postRecv(recv));
                require(e.getMessage().contains(mr.describe()) && e.getMessage().endsWith("is closed"), e.getMessage());
                require(pd.liveDependents().contains(qp) && !pd.liveDependents().contains(mr),
                        "the PD no longer holds the region: " + pd.liveDependents());
            }
        });

        c.check("aPostOverAnUntiedRegionWhoseArenaClosedThrows", () -> {
            try (Context ctx = Device.open("mrce0"); ProtectionDomain pd = ctx.allocateProtectionDomain();
                    CompletionQueue cq = ctx.createCompletionQueue(8);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq));
                    RecvWorkRequest recv = new RecvWorkRequest(1).wrId(6);
                    RecvWorkRequest later = new RecvWorkRequest(1).wrId(7)) {
                qp.toInit(1, Access.LOCAL_WRITE);
                Arena arena = Arena.ofShared();
                MemoryRegion mr = pd.register(arena.allocate(4096, 4096), Access.LOCAL_WRITE);
                recv.sge(mr, 0, 4096);
                arena.close();
                IllegalStateException e = expect(IllegalStateException.class, () -> qp.postRecv(recv));
                require(e.getMessage().contains("its memory was freed"), e.getMessage());
                expect(IllegalStateException.class, () -> later.sge(mr, 0, 64));
                mr.close(); // deregistering still works
            }
        });

        c.check("aRegisteredBufferOwnsItsMemory", () -> {
            try (LoopbackPair p = new LoopbackPair(8, 0); WorkCompletions wcs = new WorkCompletions(4)) {
                MemoryRegion src = p.pd.allocateRegistered(4096);
                MemoryRegion dst = p.pd.allocateRegistered(4096, Access.LOCAL_WRITE);
                require(src.ownsMemory() && src.length() == 4096 && src.address() % 4096 == 0, src.describe());
                for (int i = 0; i < 4096; i++) {
                    src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
                }
                try (SendWorkRequest send = new SendWorkRequest(1).wrId(1).send().sge(src, 0, 4096).signaled(true);
                        RecvWorkRequest recv = new RecvWorkRequest(1).wrId(2).sge(dst, 0, 4096)) {
                    p.b.postRecv(recv);
                    p.a.postSend(send);
                    require(LoopbackPair.awaitOne(p.cqA, wcs).check().wrId() == 1, "send completion");
                    WorkCompletion wc = LoopbackPair.awaitOne(p.cqB, wcs).check();
                    require(wc.byteLength() == 4096, "received " + wc.byteLength());
                    require(dst.segment().mismatch(src.segment()) == -1, "the bytes that landed");
                    src.close();
                    expect(IllegalStateException.class, () -> src.segment().get(ValueLayout.JAVA_BYTE, 0));
                    expect(IllegalStateException.class, () -> p.a.postSend(send));
                }
                dst.close();
            }
        });

        c.check("immediatesArriveInHostOrderAndSnapshotsSurviveTheNextPoll", () -> {
            try (LoopbackPair p = new LoopbackPair(8, 0); WorkCompletions wcs = new WorkCompletions(4)) {
                MemoryRegion mr = p.pd.allocateRegistered(8192);
                try (SendWorkRequest send = new SendWorkRequest(1).sge(mr, 0, 16).signaled(true);
                        RecvWorkRequest recv = new RecvWorkRequest(1).sge(mr, 4096, 16)) {
                    p.b.postRecv(recv.wrId(10));
                    p.b.postRecv(recv.wrId(11));
                    p.a.postSend(send.wrId(20).sendWithImm(0x01020304));
                    p.a.postSend(send.wrId(21).sendWithImm(0xfedcba98));
                    LoopbackPair.awaitOne(p.cqA, wcs).check();
                    LoopbackPair.awaitOne(p.cqA, wcs).check();
                    WorkCompletion wc = LoopbackPair.awaitOne(p.cqB, wcs).check();
                    WorkCompletion.Snapshot first = wc.snapshot();
                    require(wc.immData() == 0x01020304, "host order: " + Integer.toHexString(wc.immData()));
                    require(wc.immDataRaw() == Integer.reverseBytes(0x01020304), "raw (network order) on x86: "
                            + Integer.toHexString(wc.immDataRaw()));
                    LoopbackPair.awaitOne(p.cqB, wcs).check(); // the same slot, now the second receive
                    require(wc.wrId() == 11 && wc.immData() == 0xfedcba98, "flyweight shows the second: " + wc);
                    require(first.wrId() == 10 && first.immData() == 0x01020304 && first.hasImm()
                            && first.opcode() == WorkCompletion.OP_RECV && first.byteLength() == 16,
                            "snapshot kept the first: " + first);
                }
                mr.close();
            }
        });

        System.exit(c.finish());
    }
}
