package io.metaroce.it.jverbs.apps;

import static io.metaroce.it.jverbs.apps.Checks.expect;
import static io.metaroce.it.jverbs.apps.Checks.require;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.AsyncEvent;
import io.metaroce.verbs.CompletionChannel;
import io.metaroce.verbs.CompletionPoller;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.RegisteredBufferPool;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.SharedReceiveQueue;
import io.metaroce.verbs.VerbsException;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletionException;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.ConnectionService;
import io.metaroce.verbs.cm.DaemonConnectionService;
import io.metaroce.verbs.cm.QpEndpoint;
import io.metaroce.verbs.cm.RcConnector;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * Safe memory and use-after-close on mrce0, one PASS/FAIL line each and "N passed, M failed":
 * closes that race with a poller or a poster on another thread (they must end in an
 * IllegalStateException, never a crash), regions tied to their arena, regions that own their
 * memory, completion snapshots and immediates in host order; polls with a timeout, channel
 * waits on virtual threads that a close wakes, futures completed by a poller per CQ; RC
 * parameters from ConnectOptions; a Connection that disconnects and frees what it owns; a daemon
 * listener's accept timeout and a close that wakes its accept; async events (SRQ limit) to a
 * virtual thread, woken by the context's close; a pool of registered buffers.
 */
public final class SafetyApp {

    private SafetyApp() {}

    /** Connects two RC QPs of this process to each other through the daemon (GID index 0). */
    static void connect(QueuePair a, QueuePair b) {
        ConnectOptions oa = ConnectOptions.defaults(0);
        ConnectOptions ob = ConnectOptions.defaults(0);
        a.toInit(1, Access.ALL);
        b.toInit(1, Access.ALL);
        QpEndpoint ea = RcConnector.localEndpoint(a, oa);
        QpEndpoint eb = RcConnector.localEndpoint(b, ob);
        RcConnector.connect(a, oa, eb);
        RcConnector.connect(b, ob, ea);
    }

    public static void main(String[] args) throws Exception {
        Checks c = new Checks();

        c.check("closingACqWhileAPollerLoopsEndsThePollerWithAnException", () -> {
            for (int round = 0; round < 50; round++) {
                try (Context ctx = Device.open("mrce0");
                        WorkCompletions wcs = new WorkCompletions(16)) {
                    CompletionQueue cq = ctx.createCompletionQueue(64);
                    AtomicLong polls = new AtomicLong();
                    AtomicReference<Throwable> end = new AtomicReference<>();
                    CountDownLatch looping = new CountDownLatch(1);
                    Thread poller = Thread.ofPlatform().start(() -> {
                        try {
                            for (; ; ) {
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
                    require(
                            end.get() instanceof IllegalStateException
                                    && end.get().getMessage().endsWith("is closed"),
                            "poller ended with " + end.get());
                }
            }
        });

        c.check("closingAQpWhileAThreadPostsEndsThePosterWithAnException", () -> {
            for (int round = 0; round < 20; round++) {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain();
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
                            for (; ; n++) {
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
            try (Context ctx = Device.open("mrce0");
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
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
                require(
                        pd.liveDependents().contains(qp) && !pd.liveDependents().contains(mr),
                        "the PD no longer holds the region: " + pd.liveDependents());
            }
        });

        c.check("aPostOverAnUntiedRegionWhoseArenaClosedThrows", () -> {
            try (Context ctx = Device.open("mrce0");
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
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
            try (LoopbackPair p = new LoopbackPair(8, 0);
                    WorkCompletions wcs = new WorkCompletions(4)) {
                MemoryRegion src = p.pd.allocateRegistered(4096);
                MemoryRegion dst = p.pd.allocateRegistered(4096, Access.LOCAL_WRITE);
                require(src.ownsMemory() && src.length() == 4096 && src.address() % 4096 == 0, src.describe());
                for (int i = 0; i < 4096; i++) {
                    src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
                }
                try (SendWorkRequest send = new SendWorkRequest(1)
                                .wrId(1)
                                .send()
                                .sge(src, 0, 4096)
                                .signaled(true);
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
            try (LoopbackPair p = new LoopbackPair(8, 0);
                    WorkCompletions wcs = new WorkCompletions(4)) {
                MemoryRegion mr = p.pd.allocateRegistered(8192);
                try (SendWorkRequest send =
                                new SendWorkRequest(1).sge(mr, 0, 16).signaled(true);
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
                    require(
                            wc.immDataRaw() == Integer.reverseBytes(0x01020304),
                            "raw (network order) on x86: " + Integer.toHexString(wc.immDataRaw()));
                    LoopbackPair.awaitOne(p.cqB, wcs).check(); // the same slot, now the second receive
                    require(wc.wrId() == 11 && wc.immData() == 0xfedcba98, "flyweight shows the second: " + wc);
                    require(
                            first.wrId() == 10
                                    && first.immData() == 0x01020304
                                    && first.hasImm()
                                    && first.opcode() == WorkCompletion.OP_RECV
                                    && first.byteLength() == 16,
                            "snapshot kept the first: " + first);
                }
                mr.close();
            }
        });

        c.check("pollWithATimeoutReturnsNothingWhenNothingCompletes", () -> {
            try (Context ctx = Device.open("mrce0");
                    CompletionQueue cq = ctx.createCompletionQueue(8);
                    WorkCompletions wcs = new WorkCompletions(4)) {
                require(cq.poll(wcs, 4, TimeUnit.MILLISECONDS.toNanos(20)) == 0, "nothing to poll");
                require(cq.pollOne(wcs, Duration.ofMillis(1)) == null, "pollOne: null on timeout");
            }
        });

        c.check("aChannelAwaitTimesOutThenReturnsTheCqOfACompletion", () -> {
            try (Context ctx = Device.open("mrce0");
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
                    CompletionChannel ch = ctx.createCompletionChannel();
                    CompletionQueue cqA = ctx.createCompletionQueue(8);
                    CompletionQueue cqB = ctx.createCompletionQueue(8, ch, 0);
                    QueuePair a = pd.createQueuePair(QueuePair.rc(cqA, cqA));
                    QueuePair b = pd.createQueuePair(QueuePair.rc(cqB, cqB));
                    WorkCompletions wcs = new WorkCompletions(4)) {
                connect(a, b);
                MemoryRegion mr = pd.allocateRegistered(4096);
                try (SendWorkRequest send = new SendWorkRequest(1)
                                .wrId(1)
                                .send()
                                .sge(mr, 0, 64)
                                .signaled(true);
                        RecvWorkRequest recv = new RecvWorkRequest(1).wrId(2).sge(mr, 1024, 64)) {
                    b.postRecv(recv);
                    cqB.requestNotify(false);
                    require(ch.await(Duration.ofMillis(30)) == null, "no event before a completion");
                    Recording pins = new Recording();
                    pins.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO);
                    pins.start();
                    // a virtual thread waits for the event while the main thread sends
                    AtomicReference<Object> got = new AtomicReference<>();
                    Thread waiter = Thread.ofVirtual().start(() -> {
                        try {
                            got.set(ch.await(Duration.ofSeconds(30)));
                        } catch (Throwable t) {
                            got.set(t);
                        }
                    });
                    a.postSend(send);
                    waiter.join(60_000);
                    pins.stop();
                    Path jfr = Files.createTempFile("safety-pins", ".jfr");
                    try {
                        pins.dump(jfr);
                        List<RecordedEvent> pinned = RecordingFile.readAllEvents(jfr);
                        require(pinned.isEmpty(), "jdk.VirtualThreadPinned while awaiting: " + pinned);
                    } finally {
                        pins.close();
                        Files.deleteIfExists(jfr);
                    }
                    require(got.get() == cqB, "the event names cqB: " + got.get());
                    cqB.ackEvents();
                    require(LoopbackPair.awaitOne(cqB, wcs).check().wrId() == 2, "the receive");
                    require(LoopbackPair.awaitOne(cqA, wcs).check().wrId() == 1, "the send");
                }
                mr.close();
            }
        });

        c.check("closingAChannelWakesAVirtualThreadWaitingOnIt", () -> {
            try (Context ctx = Device.open("mrce0")) {
                CompletionChannel ch = ctx.createCompletionChannel();
                AtomicReference<Throwable> end = new AtomicReference<>();
                CountDownLatch started = new CountDownLatch(1);
                Thread waiter = Thread.ofVirtual().start(() -> {
                    started.countDown();
                    try {
                        ch.await(Duration.ofMinutes(10));
                        end.set(new AssertionError("await returned"));
                    } catch (Throwable t) {
                        end.set(t);
                    }
                });
                require(started.await(60, TimeUnit.SECONDS), "the waiter started");
                ch.close();
                waiter.join(60_000);
                require(!waiter.isAlive(), "the close woke the waiter");
                require(
                        end.get() instanceof IllegalStateException
                                && end.get().getMessage().endsWith("is closed"),
                        "waiter ended with " + end.get());
            }
        });

        c.check("futuresCompleteFromAPollerPerCq", () -> {
            try (LoopbackPair p = new LoopbackPair(16, 0);
                    CompletionPoller pa = CompletionPoller.start(p.cqA);
                    CompletionPoller pb = CompletionPoller.start(p.cqB)) {
                MemoryRegion src = p.pd.allocateRegistered(16 * 256);
                MemoryRegion dst = p.pd.allocateRegistered(16 * 256);
                try (SendWorkRequest send = new SendWorkRequest(1).send().signaled(true);
                        RecvWorkRequest recv = new RecvWorkRequest(1)) {
                    for (int round = 0; round < 20; round++) {
                        List<CompletableFuture<WorkCompletion.Snapshot>> recvs = new ArrayList<>();
                        List<CompletableFuture<WorkCompletion.Snapshot>> sends = new ArrayList<>();
                        for (int i = 0; i < 8; i++) {
                            long id = round * 100L + i;
                            src.segment().asSlice(i * 256L, 256).fill((byte) (id + 1));
                            recvs.add(pb.postRecv(p.b, recv.wrId(id).sge(dst, i * 256L, 256)));
                        }
                        for (int i = 0; i < 8; i++) {
                            long id = round * 100L + i;
                            sends.add(pa.postSend(p.a, send.wrId(1_000_000 + id).sge(src, i * 256L, 100 + i)));
                        }
                        for (int i = 0; i < 8; i++) {
                            long id = round * 100L + i;
                            WorkCompletion.Snapshot r = recvs.get(i).get(30, TimeUnit.SECONDS);
                            require(
                                    r.wrId() == id && r.byteLength() == 100 + i && r.opcode() == WorkCompletion.OP_RECV,
                                    "receive " + r);
                            require(sends.get(i).get(30, TimeUnit.SECONDS).wrId() == 1_000_000 + id, "send");
                            for (int j = 0; j < 100 + i; j++) {
                                require(
                                        dst.segment().get(ValueLayout.JAVA_BYTE, i * 256L + j) == (byte) (id + 1),
                                        "byte " + j + " of message " + id);
                            }
                        }
                    }
                    require(pa.unmatchedCount() == 0 && pb.unmatchedCount() == 0, "every completion had its future");
                    // an error status completes the future exceptionally
                    try (SendWorkRequest bad = new SendWorkRequest(1)
                            .wrId(77)
                            .send()
                            .signaled(true)
                            .addSge(src.address(), 64, src.lkey() ^ 0x5a5a00)) {
                        CompletableFuture<WorkCompletion.Snapshot> r =
                                pb.postRecv(p.b, recv.wrId(78).sge(dst, 0, 256));
                        CompletableFuture<WorkCompletion.Snapshot> f = pa.postSend(p.a, bad);
                        ExecutionException e = expect(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
                        require(
                                e.getCause() instanceof WorkCompletionException w && w.wrId() == 77,
                                "cause " + e.getCause());
                        // the QP is in error now: the posted receive is flushed (or still pending);
                        // closing its poller completes whatever is left exceptionally
                        pb.close();
                        expect(ExecutionException.class, () -> r.get(30, TimeUnit.SECONDS));
                    }
                }
                src.close();
                dst.close();
            }
        });

        c.check("rcParametersComeFromConnectOptions", () -> {
            try (Context ctx = Device.open("mrce0");
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
                    CompletionQueue cq = ctx.createCompletionQueue(16);
                    QueuePair a = pd.createQueuePair(QueuePair.rc(cq, cq));
                    QueuePair b = pd.createQueuePair(QueuePair.rc(cq, cq));
                    WorkCompletions wcs = new WorkCompletions(4)) {
                ConnectOptions.RcParameters rc = ConnectOptions.RcParameters.DEFAULTS
                        .withTimeout(10)
                        .withRetries(3, 3)
                        .withRdAtomic(4, 4)
                        .withMinRnrTimer(6);
                ConnectOptions oa = ConnectOptions.defaults(0).withRc(rc);
                ConnectOptions ob = ConnectOptions.defaults(0).withRc(rc);
                a.toInit(1, Access.ALL);
                b.toInit(1, Access.ALL);
                QpEndpoint ea = RcConnector.localEndpoint(a, oa);
                QpEndpoint eb = RcConnector.localEndpoint(b, ob);
                RcConnector.connect(a, oa, eb);
                RcConnector.connect(b, ob, ea);
                require(a.state() == QueuePair.State.RTS && b.state() == QueuePair.State.RTS, "both in RTS");
                MemoryRegion mr = pd.allocateRegistered(4096);
                try (SendWorkRequest send = new SendWorkRequest(1)
                                .wrId(1)
                                .send()
                                .sge(mr, 0, 32)
                                .signaled(true);
                        RecvWorkRequest recv = new RecvWorkRequest(1).wrId(2).sge(mr, 2048, 32)) {
                    mr.segment().asSlice(0, 32).fill((byte) 0x3c);
                    b.postRecv(recv);
                    a.postSend(send);
                    LoopbackPair.awaitOne(cq, wcs).check();
                    LoopbackPair.awaitOne(cq, wcs).check();
                    require(mr.segment().asSlice(2048, 32).mismatch(mr.segment().asSlice(0, 32)) == -1, "the data");
                }
                mr.close();
            }
        });

        c.check("closingAConnectionDisconnectsAndClosesWhatItOwns", () -> {
            try (Context ctx = Device.open("mrce0");
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
                    CompletionQueue cqB = ctx.createCompletionQueue(16);
                    QueuePair b = pd.createQueuePair(QueuePair.rc(cqB, cqB))) {
                CompletionQueue cqA = ctx.createCompletionQueue(16);
                QueuePair a = pd.createQueuePair(QueuePair.rc(cqA, cqA));
                MemoryRegion mrA = pd.allocateRegistered(4096);
                connect(a, b);
                ConnectionService.Connection conn = new ConnectionService.Connection(
                                a,
                                RcConnector.localEndpoint(a, ConnectOptions.defaults(0)),
                                RcConnector.localEndpoint(b, ConnectOptions.defaults(0)))
                        .owning(cqA, mrA);
                CompletableFuture<WorkCompletion.Snapshot> pendingRecv;
                try (CompletionPoller poller = CompletionPoller.start(cqA);
                        RecvWorkRequest recv = new RecvWorkRequest(1).wrId(9).sge(mrA, 0, 64)) {
                    pendingRecv = poller.postRecv(a, recv);
                    conn.close();
                    ExecutionException e =
                            expect(ExecutionException.class, () -> pendingRecv.get(30, TimeUnit.SECONDS));
                    require(
                            e.getCause() instanceof WorkCompletionException
                                    || e.getCause() instanceof IllegalStateException,
                            "the receive was flushed or failed by the closing CQ: " + e.getCause());
                }
                require(a.isClosed() && cqA.isClosed() && mrA.isClosed(), "the QP, its CQ and its memory are closed");
                require(
                        !pd.isClosed() && pd.liveDependents().equals(List.of(b)),
                        "the PD still holds only b: " + pd.liveDependents());
                conn.close(); // again: a no-op
            }
        });

        c.check("aDaemonListenerTimesOutAndItsCloseWakesItsAccept", () -> {
            ConnectionService cm = new DaemonConnectionService();
            try (ConnectionService.Listener l = cm.listen(4242)) {
                SocketTimeoutException e = expect(SocketTimeoutException.class, () -> l.next(Duration.ofMillis(50)));
                require(e.getMessage().contains("service 4242"), e.getMessage());
                expect(
                        SocketTimeoutException.class,
                        () -> l.accept(null, ConnectOptions.defaults(0), Duration.ofMillis(20)));
            }
            ConnectionService.Listener l = cm.listen(4243);
            AtomicReference<Throwable> end = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(1);
            Thread acceptor = Thread.ofVirtual().start(() -> {
                started.countDown();
                try {
                    l.next();
                    end.set(new AssertionError("next returned"));
                } catch (Throwable t) {
                    end.set(t);
                }
            });
            require(started.await(60, TimeUnit.SECONDS), "the acceptor started");
            l.close();
            acceptor.join(60_000);
            require(!acceptor.isAlive(), "the close woke the accept");
            require(
                    end.get() instanceof SocketException
                            && end.get().getMessage().contains("is closed"),
                    "accept ended with " + end.get());
            try (ConnectionService.Listener again = cm.listen(4243)) {
                require(again != null, "the service is free again");
            }
        });

        c.check("guardedPostsAndPollsAllocateNothing", () -> {
            try (LoopbackPair p = new LoopbackPair(16, 0);
                    WorkCompletions wcs = new WorkCompletions(4)) {
                MemoryRegion src = p.pd.allocateRegistered(4096);
                MemoryRegion dst = p.pd.allocateRegistered(4096);
                var bean = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
                long tid = Thread.currentThread().threadId();
                try (SendWorkRequest send = new SendWorkRequest(2)
                                .wrId(1)
                                .send()
                                .sge(src, 0, 64)
                                .addSge(src, 64, 64)
                                .signaled(true);
                        RecvWorkRequest recv =
                                new RecvWorkRequest(2).wrId(2).sge(dst, 0, 64).addSge(dst, 64, 64)) {
                    long before = 0;
                    int cycles = 30_000;
                    for (int i = 0; i < cycles; i++) {
                        if (i == cycles - 10_000) {
                            before = bean.getThreadAllocatedBytes(tid);
                        }
                        p.b.postRecv(recv);
                        p.a.postSend(send);
                        int got = 0;
                        while (got < 2) {
                            got += p.cqA.poll(wcs, 1, 20_000_000_000L);
                            got += p.cqB.poll(wcs, 1, 0);
                        }
                    }
                    long allocated = bean.getThreadAllocatedBytes(tid) - before;
                    System.out.println("    allocated " + allocated + " bytes over 10^4 guarded post/poll cycles");
                    require(allocated < 16 * 1024, "allocated " + allocated + " bytes over 10^4 cycles");
                }
                src.close();
                dst.close();
            }
        });

        c.check("anSrqBelowItsLimitRaisesAnAsyncEventToAVirtualThread", () -> {
            try (Context ctx = Device.open("mrce0");
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
                    CompletionQueue cqA = ctx.createCompletionQueue(16);
                    CompletionQueue cqB = ctx.createCompletionQueue(16);
                    SharedReceiveQueue srq = pd.createSharedReceiveQueue(16, 1, 0);
                    QueuePair a = pd.createQueuePair(QueuePair.rc(cqA, cqA));
                    QueuePair b = pd.createQueuePair(QueuePair.rc(cqB, cqB).srq(srq));
                    WorkCompletions wcs = new WorkCompletions(4)) {
                connect(a, b);
                require(ctx.awaitAsyncEvent(Duration.ofMillis(20)) == null, "no event yet");
                MemoryRegion mr = pd.allocateRegistered(8192);
                try (SendWorkRequest send =
                                new SendWorkRequest(1).send().sge(mr, 0, 64).signaled(true);
                        RecvWorkRequest recv = new RecvWorkRequest(1)) {
                    for (int i = 0; i < 4; i++) {
                        srq.postRecv(recv.wrId(100 + i).sge(mr, 4096 + 128L * i, 128));
                    }
                    srq.setLimit(2);
                    AtomicReference<Object> got = new AtomicReference<>();
                    Thread waiter = Thread.ofVirtual().start(() -> {
                        try {
                            got.set(ctx.awaitAsyncEvent(Duration.ofSeconds(30)));
                        } catch (Throwable t) {
                            got.set(t);
                        }
                    });
                    for (int i = 0; i < 3; i++) { // 4 posted, 3 consumed: 1 left, below the limit of 2
                        a.postSend(send.wrId(i));
                        LoopbackPair.awaitOne(cqA, wcs).check();
                        LoopbackPair.awaitOne(cqB, wcs).check();
                    }
                    waiter.join(60_000);
                    require(
                            got.get() instanceof AsyncEvent e
                                    && e.type() == AsyncEvent.Type.SRQ_LIMIT_REACHED
                                    && e.element() == srq,
                            "the event: " + got.get());
                }
                mr.close();
            }
        });

        c.check("closingAContextWakesAVirtualThreadAwaitingAsyncEvents", () -> {
            Context ctx = Device.open("mrce0");
            AtomicReference<Throwable> end = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(1);
            Thread waiter = Thread.ofVirtual().start(() -> {
                started.countDown();
                try {
                    ctx.awaitAsyncEvent(Duration.ofMinutes(10));
                    end.set(new AssertionError("await returned"));
                } catch (Throwable t) {
                    end.set(t);
                }
            });
            require(started.await(60, TimeUnit.SECONDS), "the waiter started");
            ctx.close();
            waiter.join(60_000);
            require(!waiter.isAlive(), "the close woke the waiter");
            require(
                    end.get() instanceof IllegalStateException
                            && end.get().getMessage().endsWith("is closed"),
                    "waiter ended with " + end.get());
        });

        c.check("aPoolOfRegisteredBuffersCarriesDataAndAllocatesNothing", () -> {
            try (LoopbackPair p = new LoopbackPair(16, 0);
                    WorkCompletions wcs = new WorkCompletions(4);
                    RegisteredBufferPool pool = RegisteredBufferPool.create(p.pd, 8, 1000, Access.LOCAL_WRITE);
                    SendWorkRequest send = new SendWorkRequest(1).signaled(true).send();
                    RecvWorkRequest recv = new RecvWorkRequest(1)) {
                require(pool.bufferSize() == 1024 && pool.available() == 8, "8 buffers of 1024 bytes");
                RegisteredBufferPool.Buffer[] all = new RegisteredBufferPool.Buffer[8];
                for (int i = 0; i < 8; i++) {
                    all[i] = pool.take();
                    require(all[i] != null && all[i].address() == pool.region().address() + 1024L * i, "buffer " + i);
                }
                require(pool.take() == null, "an empty pool gives null");
                for (RegisteredBufferPool.Buffer b : all) {
                    pool.give(b);
                }
                expect(IllegalArgumentException.class, () -> pool.give(all[0]));
                var bean = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
                long tid = Thread.currentThread().threadId();
                long before = 0;
                for (int i = 0; i < 20_000; i++) {
                    if (i == 10_000) {
                        before = bean.getThreadAllocatedBytes(tid);
                    }
                    RegisteredBufferPool.Buffer in = pool.take();
                    RegisteredBufferPool.Buffer outb = pool.take();
                    outb.byteBuffer().putInt(0, i).putInt(996, ~i);
                    p.b.postRecv(recv.wrId(i).sge(in.region(), in.offset(), 1000));
                    p.a.postSend(send.wrId(i).sge(outb.region(), outb.offset(), 1000));
                    int got = 0;
                    while (got < 2) {
                        got += p.cqA.poll(wcs, 1, 20_000_000_000L);
                        got += p.cqB.poll(wcs, 1, 0);
                    }
                    if (in.byteBuffer().getInt(0) != i || in.byteBuffer().getInt(996) != ~i) {
                        throw new AssertionError("message " + i + " landed wrong");
                    }
                    pool.give(outb);
                    pool.give(in);
                }
                long allocated = bean.getThreadAllocatedBytes(tid) - before;
                require(allocated < 16 * 1024, "allocated " + allocated + " bytes over 10^4 pooled send/recv cycles");
                RegisteredBufferPool.Buffer kept = pool.take();
                pool.close();
                require(pool.region().isClosed(), "closing the pool closes its region");
                expect(IllegalStateException.class, () -> kept.segment().get(ValueLayout.JAVA_BYTE, 0));
                expect(IllegalStateException.class, pool::take);
            }
        });

        System.exit(c.finish());
    }
}
