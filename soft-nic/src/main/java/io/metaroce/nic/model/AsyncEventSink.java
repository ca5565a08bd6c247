package io.metaroce.nic.model;

/**
 * Where the engine reports the asynchronous events of a connection's objects (what the
 * application reads with {@code ibv_get_async_event}). Implementations are thread-safe and never
 * block: the engine thread calls them.
 */
@FunctionalInterface
public interface AsyncEventSink {
    /** Discards events (objects made in tests without a control connection). */
    AsyncEventSink NONE = (eventType, element) -> {};

    /**
     * Queues one event.
     *
     * @param eventType enum ibv_event_type ({@code Ibv.EVENT_*})
     * @param element the handle of the QP, CQ or SRQ concerned, or the port number
     */
    void post(int eventType, int element);
}
