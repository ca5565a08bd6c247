package io.metaroce.verbs.endpoint;

/**
 * An endpoint can no longer carry messages: it was closed here, or its connection broke (the
 * peer went away, its daemon or the path died, or a work request failed, which in RC moves the
 * queue pair to the error state). Futures of the endpoint complete exceptionally with it; calls
 * on a closed endpoint throw it. {@link #getCause()} holds what broke the connection, if known.
 *
 * <p>Immutable once thrown; safe to hand to another thread.
 */
public final class EndpointClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final boolean local;

    public EndpointClosedException(String message, boolean local, Throwable cause) {
        super(message, cause);
        this.local = local;
    }

    /** True when this side closed the endpoint; false when the connection broke (the peer went away). */
    public boolean isLocal() {
        return local;
    }
}
