package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * A completion channel ({@code struct ibv_comp_channel}): a file descriptor on which armed
 * completion queues ({@link CompletionQueue#requestNotify}) signal their next completion.
 * {@link #awaitEvent()} blocks for one event and returns its CQ; events are acknowledged by
 * {@link CompletionQueue#ackEvents()} (and at the latest when the CQ is closed).
 */
public final class CompletionChannel extends VerbsObject {

    static final Native.Verb DESTROY_COMP_CHANNEL = Native.verb("ibv_destroy_comp_channel",
            FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Native.Verb GET_CQ_EVENT = Native.verb("ibv_get_cq_event",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));

    private final Context context;
    final MemorySegment ptr;

    CompletionChannel(Context context, MemorySegment ptr) {
        super(context);
        this.context = context;
        this.ptr = ptr.reinterpret(16);
        attach();
    }

    /** The channel's file descriptor (to poll/epoll; make it non-blocking for EAGAIN instead of waits). */
    public int fd() {
        return ptr.get(JAVA_INT, Abi.COMP_CHANNEL_FD);
    }

    /**
     * {@code ibv_get_cq_event}: blocks until an armed CQ of this channel completes and returns
     * it. Re-arm it with {@link CompletionQueue#requestNotify} before polling it empty.
     */
    public CompletionQueue awaitEvent() {
        ensureOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cqOut = a.allocate(ADDRESS);
            MemorySegment ctxOut = a.allocate(ADDRESS);
            GET_CQ_EVENT.check(ptr, cqOut, ctxOut);
            long addr = cqOut.get(ADDRESS, 0).address();
            CompletionQueue cq = context.cqs.get(addr);
            if (cq == null) {
                throw new IllegalStateException(String.format("completion event for an unknown CQ at 0x%x", addr));
            }
            cq.unackedEvents.incrementAndGet();
            return cq;
        }
    }

    @Override
    public String describe() {
        return "CompletionChannel fd " + ptr.get(JAVA_INT, Abi.COMP_CHANNEL_FD) + " of " + context.deviceName();
    }

    @Override
    void destroy() {
        DESTROY_COMP_CHANNEL.check(ptr);
    }
}
