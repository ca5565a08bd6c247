package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * A completion queue ({@code struct ibv_cq}), from {@link Context#createCompletionQueue}.
 * {@link #poll(WorkCompletions)} is the data path: it calls the provider's {@code poll_cq}
 * through {@code context->ops}, fills the native {@code ibv_wc} array of a reusable
 * {@link WorkCompletions} and allocates nothing. {@link #poll(WorkCompletions, int, long)}
 * waits for completions up to a timeout; {@link CompletionPoller} completes futures from it.
 *
 * <p><b>Thread safety:</b> one poller at a time per CQ is the usual verbs rule (libibverbs
 * providers lock, so several are safe but share the completions). A concurrent {@link #close()}
 * waits for a poll in flight or makes it throw IllegalStateException, never a crash.
 */
public final class CompletionQueue extends VerbsObject {

    static final Native.Verb DESTROY_CQ = Native.verb("ibv_destroy_cq", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Native.Verb ACK_CQ_EVENTS =
            Native.verb("ibv_ack_cq_events", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));

    private final Context context;
    private final CompletionChannel channel;
    final MemorySegment ptr;
    private final MemorySegment pollFn;
    private final MemorySegment notifyFn;
    private final int capacity;
    /** Events returned by the channel and not yet acknowledged. */
    final java.util.concurrent.atomic.AtomicInteger unackedEvents = new java.util.concurrent.atomic.AtomicInteger();

    CompletionQueue(Context context, CompletionChannel channel, MemorySegment ptr) {
        super(context, channel);
        this.context = context;
        this.channel = channel;
        this.ptr = ptr.reinterpret(Abi.CQ_CQE + 4);
        this.pollFn = context.opPollCq;
        this.notifyFn = context.opReqNotifyCq;
        this.capacity = this.ptr.get(JAVA_INT, Abi.CQ_CQE);
        attach();
        context.cqs.put(this.ptr.address(), this);
    }

    public Context context() {
        return context;
    }

    /** The channel this CQ signals, or null. */
    public CompletionChannel channel() {
        return channel;
    }

    /** The number of entries the provider gave the CQ ({@code cq->cqe}, at least what was asked). */
    public int capacity() {
        return capacity;
    }

    /** The native {@code struct ibv_cq *}. */
    public MemorySegment address() {
        return ptr;
    }

    /**
     * {@code ibv_poll_cq}: takes up to {@code wcs.capacity()} completions into {@code wcs} and
     * returns how many (0 when the CQ is empty). Allocation-free.
     *
     * @throws VerbsException naming ibv_poll_cq when the provider fails (e.g. EIO: the device is gone)
     */
    public int poll(WorkCompletions wcs) {
        return poll(wcs, wcs.capacity());
    }

    /** Like {@link #poll(WorkCompletions)}, taking at most {@code max} completions. */
    public int poll(WorkCompletions wcs, int max) {
        if (max > wcs.capacity() || max < 0) {
            throw new IllegalArgumentException("max " + max + " outside 0.." + wcs.capacity());
        }
        int n;
        acquire();
        try {
            n = (int) Native.OP_POLL_CQ.invokeExact(pollFn, ptr, max, wcs.segment);
        } catch (Throwable t) {
            throw rethrow(t);
        } finally {
            release();
        }
        if (n < 0) {
            wcs.count = 0;
            throw new VerbsException("ibv_poll_cq", -n);
        }
        wcs.count = n;
        return n;
    }

    /**
     * Polls until at least one completion arrives or {@code timeoutNs} nanoseconds pass; returns
     * how many it took (0: the timeout passed). It spins ({@link Thread#onSpinWait()}), then
     * yields between polls, so a virtual thread lets others run on its carrier; for a wait that
     * sleeps, arm the CQ and use its {@link CompletionChannel#await}. Allocation-free.
     */
    public int poll(WorkCompletions wcs, int max, long timeoutNs) {
        int n = poll(wcs, max);
        if (n != 0) {
            return n;
        }
        long deadline = System.nanoTime() + Math.max(0, timeoutNs);
        for (int spins = 0; ; spins++) {
            if (spins < 256) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
            n = poll(wcs, max);
            if (n != 0 || System.nanoTime() - deadline >= 0) {
                return n;
            }
        }
    }

    /** {@link #poll(WorkCompletions, int, long)} taking up to {@code wcs.capacity()}, with a Duration. */
    public int poll(WorkCompletions wcs, java.time.Duration timeout) {
        return poll(wcs, wcs.capacity(), timeout.toNanos());
    }

    /**
     * Waits (as {@link #poll(WorkCompletions, int, long)}) for one completion and returns its
     * flyweight, {@code wcs.get(0)}, unchecked; null when {@code timeout} passes first.
     */
    public WorkCompletion pollOne(WorkCompletions wcs, java.time.Duration timeout) {
        return poll(wcs, 1, timeout.toNanos()) == 0 ? null : wcs.get(0);
    }

    /**
     * {@code ibv_req_notify_cq}: arms the CQ so its next completion (only solicited ones when
     * {@code solicitedOnly}) raises an event on its channel.
     */
    public void requestNotify(boolean solicitedOnly) {
        int rc;
        acquire();
        try {
            rc = (int) Native.OP_REQ_NOTIFY_CQ.invokeExact(notifyFn, ptr, solicitedOnly ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        } finally {
            release();
        }
        if (rc != 0) {
            throw new VerbsException("ibv_req_notify_cq", rc);
        }
    }

    /** {@code ibv_ack_cq_events} for every event {@link CompletionChannel#awaitEvent()} returned for this CQ. */
    public void ackEvents() {
        acquire();
        try {
            int n = unackedEvents.getAndSet(0);
            if (n > 0) {
                ACK_CQ_EVENTS.invoke(ptr, n);
            }
        } finally {
            release();
        }
    }

    @Override
    public String describe() {
        return "CompletionQueue (" + capacity + " entries) of " + context.deviceName();
    }

    @Override
    void destroy() {
        int n = unackedEvents.getAndSet(0);
        if (n > 0) {
            ACK_CQ_EVENTS.invoke(ptr, n); // ibv_destroy_cq waits for every event's ack
        }
        DESTROY_CQ.check(ptr);
        context.cqs.remove(ptr.address());
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
