package io.metaroce.verbs;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Completes {@link CompletableFuture}s of posted work requests from one completion queue: a
 * platform thread per poller polls the CQ, snapshots each completion and completes the future
 * registered for its {@code wr_id}: normally with the {@link WorkCompletion.Snapshot} on
 * success, exceptionally with a {@link WorkCompletionException} on an error status (a QP that
 * went to the error state flushes every outstanding request that way).
 *
 * <pre>{@code
 * try (CompletionPoller poller = CompletionPoller.start(cq)) {
 *     CompletableFuture<WorkCompletion.Snapshot> recv = poller.postRecv(qp, recvWr.wrId(7));
 *     CompletableFuture<WorkCompletion.Snapshot> sent = poller.postSend(qp, sendWr.wrId(8).signaled(true));
 *     sent.get(5, TimeUnit.SECONDS);       // a virtual thread parks here
 *     int bytes = recv.join().byteLength();
 * }
 * }</pre>
 *
 * <p>wr_ids must be unique among the requests in flight on this CQ. Futures complete on the
 * poller thread: use the {@code *Async} stages for work that takes time. When idle, the thread
 * spins, then yields, then parks for up to {@link #MAX_IDLE_PARK_NS}; a new registration wakes
 * it. A CQ made with a completion channel of its own ({@link #start(CompletionQueue)} uses it;
 * no other CQ may use that channel) is instead armed when idle and the thread sleeps on the
 * channel (at most {@link #MAX_IDLE_PARK_NS} at a time), so a completion wakes it at once. Closing the poller (or its CQ failing) completes the futures still pending exceptionally
 * with an IllegalStateException. This path allocates (a future and a snapshot per request); the
 * raw {@link CompletionQueue#poll} stays allocation-free.
 *
 * <p><b>Thread safety:</b> safe to share; any thread may post through it or register.
 */
public final class CompletionPoller implements AutoCloseable {

    /** The longest the idle poller parks between polls (a registration wakes it earlier). */
    public static final long MAX_IDLE_PARK_NS = 1_000_000;

    private final CompletionQueue cq;
    private final Map<Long, CompletableFuture<WorkCompletion.Snapshot>> pending = new ConcurrentHashMap<>();
    private final AtomicLong unmatched = new AtomicLong();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Throwable failure;

    private CompletionPoller(CompletionQueue cq, int batch) {
        this.cq = cq;
        this.thread = Thread.ofPlatform()
                .daemon()
                .name("jverbs-poller-" + cq.describe())
                .unstarted(() -> run(batch));
    }

    /** Starts a poller thread on {@code cq} (polling up to 32 completions at a time). */
    public static CompletionPoller start(CompletionQueue cq) {
        cq.ensureOpen();
        CompletionPoller p = new CompletionPoller(cq, 32);
        p.thread.start();
        return p;
    }

    public CompletionQueue completionQueue() {
        return cq;
    }

    /**
     * The future of the work request {@code wrId}, registered now: call it before posting the
     * request (or use {@link #postSend}/{@link #postRecv}, which do both).
     *
     * @throws IllegalStateException when the poller is closed or a request with this wr_id is pending
     */
    public CompletableFuture<WorkCompletion.Snapshot> expect(long wrId) {
        CompletableFuture<WorkCompletion.Snapshot> f = new CompletableFuture<>();
        if (pending.putIfAbsent(wrId, f) != null) {
            throw new IllegalStateException("a request with wr_id " + wrId + " is already pending on " + cq.describe());
        }
        if (!running) {
            pending.remove(wrId, f);
            throw closed();
        }
        LockSupport.unpark(thread);
        return f;
    }

    /**
     * Registers the future of {@code wr} (its wr_id; it must be signaled, or the QP signal-all)
     * and posts it on {@code qp}, whose send CQ must be this poller's.
     */
    public CompletableFuture<WorkCompletion.Snapshot> postSend(QueuePair qp, SendWorkRequest wr) {
        CompletableFuture<WorkCompletion.Snapshot> f = expect(wr.wrId());
        try {
            qp.postSend(wr);
        } catch (RuntimeException e) {
            pending.remove(wr.wrId(), f);
            throw e;
        }
        return f;
    }

    /** Registers the future of {@code wr} and posts it on {@code qp}, whose receive CQ must be this poller's. */
    public CompletableFuture<WorkCompletion.Snapshot> postRecv(QueuePair qp, RecvWorkRequest wr) {
        CompletableFuture<WorkCompletion.Snapshot> f = expect(wr.wrId());
        try {
            qp.postRecv(wr);
        } catch (RuntimeException e) {
            pending.remove(wr.wrId(), f);
            throw e;
        }
        return f;
    }

    /**
     * Completes the future of {@code wrId} exceptionally with {@code cause} and forgets it (a
     * completion that arrives for it later counts as unmatched): for an owner that destroyed the
     * queue pair of the request, whose flush may never reach this CQ.
     *
     * @return whether a future was pending for it
     */
    public boolean fail(long wrId, Throwable cause) {
        CompletableFuture<WorkCompletion.Snapshot> f = pending.remove(wrId);
        return f != null && f.completeExceptionally(cause);
    }

    /** Requests registered and not yet completed. */
    public int pendingCount() {
        return pending.size();
    }

    /** Completions that arrived with no future registered for their wr_id (they are dropped). */
    public long unmatchedCount() {
        return unmatched.get();
    }

    private void run(int batch) {
        CompletionChannel channel = cq.channel();
        int idle = 0;
        try (WorkCompletions wcs = new WorkCompletions(batch)) {
            while (running) {
                int n = cq.poll(wcs);
                for (int i = 0; i < n; i++) {
                    complete(wcs.get(i));
                }
                if (n > 0) {
                    idle = 0;
                } else if (++idle < 200) {
                    Thread.onSpinWait();
                } else if (idle < 400) {
                    Thread.yield();
                } else if (channel != null) {
                    sleepOnChannel(channel, wcs);
                } else {
                    LockSupport.parkNanos(this, Math.min(MAX_IDLE_PARK_NS, 1000L << Math.min(10, idle - 400)));
                }
            }
        } catch (Throwable t) {
            failure = t;
            running = false;
        }
        failPending();
    }

    /** Arms the CQ, polls once more (a completion may have come before the arm), then waits for its event. */
    private void sleepOnChannel(CompletionChannel channel, WorkCompletions wcs) {
        cq.requestNotify(false);
        int n = cq.poll(wcs);
        for (int i = 0; i < n; i++) {
            complete(wcs.get(i));
        }
        if (n > 0 || !running) {
            return;
        }
        try {
            CompletionQueue got = channel.await(java.time.Duration.ofNanos(MAX_IDLE_PARK_NS));
            if (got != null) {
                got.ackEvents();
            }
        } catch (InterruptedException e) {
            // close() interrupts nothing; a stray interrupt just ends this wait
        }
    }

    private void complete(WorkCompletion wc) {
        WorkCompletion.Snapshot s = wc.snapshot();
        if (!s.isSuccess()) {
            CompletionErrorEvent.emit(s, cq); // also for requests whose future was failed or forgotten before
        }
        CompletableFuture<WorkCompletion.Snapshot> f = pending.remove(s.wrId());
        if (f == null) {
            unmatched.incrementAndGet();
        } else if (s.isSuccess()) {
            f.complete(s);
        } else {
            f.completeExceptionally(
                    new WorkCompletionException(s.wrId(), s.status(), s.opcode(), s.qpNum(), s.vendorErr()));
        }
    }

    private IllegalStateException closed() {
        Throwable why = failure;
        return why == null
                ? new IllegalStateException("the completion poller of " + cq.describe() + " is closed")
                : new IllegalStateException("the completion poller of " + cq.describe() + " stopped: " + why, why);
    }

    private void failPending() {
        for (Long id : pending.keySet()) {
            CompletableFuture<WorkCompletion.Snapshot> f = pending.remove(id);
            if (f != null) {
                f.completeExceptionally(closed());
            }
        }
    }

    /**
     * Stops the poller thread (waiting for it) and completes the futures still pending
     * exceptionally. Close it before its CQ. Double close: no-op.
     */
    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        if (Thread.currentThread() != thread) {
            boolean interrupted = false;
            while (thread.isAlive()) {
                try {
                    thread.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        failPending();
    }
}
