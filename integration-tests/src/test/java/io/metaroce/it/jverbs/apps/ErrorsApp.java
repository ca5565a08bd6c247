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
import io.metaroce.verbs.WorkCompletionException;
import io.metaroce.verbs.WorkCompletions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The binding's errors on mrce0, one PASS/FAIL line each and "N passed, M failed" (exit 0 iff
 * none failed): refused posts name the verb and errno, closed and double-closed objects, closing
 * a parent with live children, a bad lkey surfacing as a completion error, bad attributes.
 */
public final class ErrorsApp {

    private ErrorsApp() {}

    public static void main(String[] args) {
        Checks c = new Checks();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(8192, 4096);

            c.check("postSendBeforeRtsNamesTheVerbAndErrno", () -> {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain();
                        CompletionQueue cq = ctx.createCompletionQueue(8);
                        QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq));
                        MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                        SendWorkRequest wr =
                                new SendWorkRequest(1).wrId(9).send().sge(mr, 0, 64)) {
                    qp.toInit(1, 0);
                    VerbsException e = expect(VerbsException.class, () -> qp.postSend(wr));
                    require(e.verb().equals("ibv_post_send"), "verb " + e.verb());
                    require(e.errno() == 22, "errno " + e.errno());
                    require(
                            e.getMessage().contains("Invalid argument")
                                    && e.getMessage().contains("in state INIT")
                                    && e.getMessage().contains("wr_id 9"),
                            e.getMessage());
                }
            });

            c.check("postRecvInResetNamesTheVerb", () -> {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain();
                        CompletionQueue cq = ctx.createCompletionQueue(8);
                        QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq));
                        MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                        RecvWorkRequest wr = new RecvWorkRequest(1).wrId(3).sge(mr, 0, 64)) {
                    VerbsException e = expect(VerbsException.class, () -> qp.postRecv(wr));
                    require(e.verb().equals("ibv_post_recv") && e.errno() == 22, e.getMessage());
                }
            });

            c.check("closedQueuePairIsAClearError", () -> {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain();
                        CompletionQueue cq = ctx.createCompletionQueue(8);
                        MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                        SendWorkRequest wr = new SendWorkRequest(1).send().sge(mr, 0, 64);
                        RecvWorkRequest rwr = new RecvWorkRequest(1).sge(mr, 0, 64)) {
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq));
                    String name = qp.describe();
                    qp.close();
                    IllegalStateException e = expect(IllegalStateException.class, () -> qp.postSend(wr));
                    require(e.getMessage().equals(name + " is closed"), e.getMessage());
                    expect(IllegalStateException.class, () -> qp.postRecv(rwr));
                    expect(IllegalStateException.class, () -> qp.toInit(1, 0));
                    expect(IllegalStateException.class, qp::state);
                }
            });

            c.check("doubleCloseIsANoOp", () -> {
                Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain();
                CompletionQueue cq = ctx.createCompletionQueue(8);
                QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq));
                MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                for (int i = 0; i < 2; i++) {
                    qp.close();
                    mr.close();
                    cq.close();
                    pd.close();
                    ctx.close();
                }
                require(ctx.isClosed() && qp.isClosed(), "closed");
            });

            c.check("closingAProtectionDomainWithALiveMemoryRegionFails", () -> {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain()) {
                    MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                    IllegalStateException e = expect(IllegalStateException.class, pd::close);
                    require(
                            e.getMessage().startsWith("cannot close ProtectionDomain")
                                    && e.getMessage().contains("MemoryRegion lkey")
                                    && e.getMessage().contains("close them first"),
                            e.getMessage());
                    require(!pd.isClosed(), "the PD stays open");
                    try (MemoryRegion again = pd.register(buf, Access.LOCAL_WRITE)) {
                        require(again.lkey() != 0 || mr.lkey() != again.lkey(), "the PD still works");
                    }
                    mr.close();
                }
            });

            c.check("closingACompletionQueueUnderAQueuePairFails", () -> {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain()) {
                    CompletionQueue cq = ctx.createCompletionQueue(8);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq));
                    IllegalStateException e = expect(IllegalStateException.class, cq::close);
                    require(e.getMessage().contains(qp.describe()), e.getMessage());
                    IllegalStateException e2 = expect(IllegalStateException.class, ctx::close);
                    require(
                            e2.getMessage().contains("ProtectionDomain")
                                    && e2.getMessage().contains("CompletionQueue"),
                            e2.getMessage());
                    qp.close();
                    cq.close();
                }
            });

            c.check("heapMemoryCannotBeRegistered", () -> {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain()) {
                    expect(
                            IllegalArgumentException.class,
                            () -> pd.register(MemorySegment.ofArray(new byte[64]), Access.LOCAL_WRITE));
                }
            });

            c.check("badModifyNamesIbvModifyQp", () -> {
                try (Context ctx = Device.open("mrce0");
                        ProtectionDomain pd = ctx.allocateProtectionDomain();
                        CompletionQueue cq = ctx.createCompletionQueue(8);
                        QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq))) {
                    // RESET -> RTS skips INIT and RTR: the verbs' state machine refuses it
                    VerbsException e = expect(VerbsException.class, () -> qp.toRts(1));
                    require(e.verb().equals("ibv_modify_qp") && e.getMessage().contains("to RTS"), e.getMessage());
                }
            });

            c.check("unknownDeviceIsNamed", () -> {
                VerbsException e = expect(VerbsException.class, () -> Device.open("mrce9"));
                require(e.getMessage().contains("no RDMA device named mrce9"), e.getMessage());
            });

            c.check("badLkeyCompletesWithAnErrorStatus", () -> {
                try (LoopbackPair p = new LoopbackPair(8, 0);
                        MemoryRegion mr = p.pd.register(buf, Access.LOCAL_WRITE);
                        SendWorkRequest wr = new SendWorkRequest(1)
                                .wrId(41)
                                .send()
                                .signaled(true)
                                .addSge(mr.address(), 64, mr.lkey() ^ 0x5a5a00);
                        RecvWorkRequest rwr = new RecvWorkRequest(1).wrId(42).sge(mr, 4096, 64);
                        WorkCompletions wcs = new WorkCompletions(4)) {
                    p.b.postRecv(rwr);
                    p.a.postSend(wr);
                    WorkCompletion wc = LoopbackPair.awaitOne(p.cqA, wcs);
                    require(!wc.isSuccess(), "a bad lkey must not succeed: " + wc);
                    require(wc.wrId() == 41, "wr_id " + wc.wrId());
                    WorkCompletionException e = expect(WorkCompletionException.class, wc::check);
                    require(e.wrId() == 41 && e.getMessage().contains("work request 41"), e.getMessage());
                }
            });
        }
        System.exit(c.finish());
    }
}
