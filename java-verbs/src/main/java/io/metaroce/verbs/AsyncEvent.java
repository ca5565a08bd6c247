package io.metaroce.verbs;

/**
 * An asynchronous event of a device ({@code struct ibv_async_event}), from
 * {@link Context#awaitAsyncEvent}: already acknowledged ({@code ibv_ack_async_event}) when the
 * binding returns it, so it is a plain immutable value. {@link #element()} is the binding's
 * object the event is about (a {@link QueuePair}, {@link CompletionQueue} or
 * {@link SharedReceiveQueue}; null for port and device events, or when the object was created
 * outside the binding), {@link #port()} the port of port events.
 *
 * @param type the event, or null for a value this binding does not name
 * @param rawType {@code enum ibv_event_type} as the provider gave it
 * @param element the QP, CQ or SRQ the event is about, or null
 * @param port the port number of a port event, else 0
 */
public record AsyncEvent(Type type, int rawType, VerbsObject element, int port) {

    /** {@code enum ibv_event_type}, in verbs.h's order. Immutable, thread-safe. */
    public enum Type {
        CQ_ERR,
        QP_FATAL,
        QP_REQ_ERR,
        QP_ACCESS_ERR,
        COMM_EST,
        SQ_DRAINED,
        PATH_MIG,
        PATH_MIG_ERR,
        DEVICE_FATAL,
        PORT_ACTIVE,
        PORT_ERR,
        LID_CHANGE,
        PKEY_CHANGE,
        SM_CHANGE,
        SRQ_ERR,
        SRQ_LIMIT_REACHED,
        QP_LAST_WQE_REACHED,
        CLIENT_REREGISTER,
        GID_CHANGE,
        WQ_FATAL;

        /** The C value ({@code IBV_EVENT_*}). */
        public int value() {
            return ordinal();
        }

        /** The type of C value {@code value}, or null for one this binding does not name. */
        public static Type of(int value) {
            Type[] all = values();
            return value >= 0 && value < all.length ? all[value] : null;
        }

        boolean isQp() {
            return this == QP_FATAL
                    || this == QP_REQ_ERR
                    || this == QP_ACCESS_ERR
                    || this == COMM_EST
                    || this == SQ_DRAINED
                    || this == PATH_MIG
                    || this == PATH_MIG_ERR
                    || this == QP_LAST_WQE_REACHED;
        }

        boolean isSrq() {
            return this == SRQ_ERR || this == SRQ_LIMIT_REACHED;
        }

        boolean isPort() {
            return this == PORT_ACTIVE
                    || this == PORT_ERR
                    || this == LID_CHANGE
                    || this == PKEY_CHANGE
                    || this == SM_CHANGE
                    || this == CLIENT_REREGISTER
                    || this == GID_CHANGE;
        }
    }

    @Override
    public String toString() {
        return "AsyncEvent[" + (type == null ? "EVENT_" + rawType : type)
                + (element != null ? " on " + element.describe() : port != 0 ? " on port " + port : "") + "]";
    }
}
