package io.metaroce.nic.transport;

/**
 * What the engine tells the connection manager about RC QPs. Engine thread; implementations must
 * not block.
 */
public interface QpLifecycle {
    QpLifecycle NONE = new QpLifecycle() {};

    /** A QP is served by the engine (created). */
    default void onAdded(Qp qp) {}

    /** An RC QP entered RTR: its remote QPN and address are known. */
    default void onRtr(Qp qp) {}

    /** An RC QP went back to RESET (it is still served and may connect again). */
    default void onReset(Qp qp) {}

    /** A QP is no longer served: destroyed, or its owner gone. */
    default void onRemoved(Qp qp) {}
}
