package io.metaroce.it.jverbs.apps;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.QpEndpoint;
import io.metaroce.verbs.cm.RcConnector;

/**
 * Two RC queue pairs of one process on mrce0, connected to each other through the daemon
 * (GID index 0: the daemon's own address). Close order is handled by {@link #close()}.
 */
final class LoopbackPair implements AutoCloseable {

    final Context ctx;
    final ProtectionDomain pd;
    final CompletionQueue cqA;
    final CompletionQueue cqB;
    final QueuePair a;
    final QueuePair b;

    LoopbackPair(int depth, int maxInline) {
        ctx = Device.open("mrce0");
        pd = ctx.allocateProtectionDomain();
        cqA = ctx.createCompletionQueue(2 * depth + 4);
        cqB = ctx.createCompletionQueue(2 * depth + 4);
        a = pd.createQueuePair(QueuePair.rc(cqA, cqA)
                .maxSendWr(depth)
                .maxRecvWr(depth)
                .maxSendSge(2)
                .maxRecvSge(2)
                .maxInlineData(maxInline));
        b = pd.createQueuePair(QueuePair.rc(cqB, cqB)
                .maxSendWr(depth)
                .maxRecvWr(depth)
                .maxSendSge(2)
                .maxRecvSge(2)
                .maxInlineData(maxInline));
        ConnectOptions oa = ConnectOptions.defaults(0);
        ConnectOptions ob = ConnectOptions.defaults(0);
        a.toInit(1, Access.ALL);
        b.toInit(1, Access.ALL);
        QpEndpoint ea = RcConnector.localEndpoint(a, oa);
        QpEndpoint eb = RcConnector.localEndpoint(b, ob);
        RcConnector.connect(a, oa, eb);
        RcConnector.connect(b, ob, ea);
    }

    /** Polls {@code cq} until one completion arrives (within 20 s) and returns it (unchecked). */
    static WorkCompletion awaitOne(CompletionQueue cq, WorkCompletions wcs) {
        WorkCompletion wc = cq.pollOne(wcs, java.time.Duration.ofSeconds(20));
        if (wc == null) {
            throw new IllegalStateException("no completion within 20 s on " + cq.describe());
        }
        return wc;
    }

    @Override
    public void close() {
        a.close();
        b.close();
        cqA.close();
        cqB.close();
        pd.close();
        ctx.close();
    }
}
