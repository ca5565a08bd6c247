package io.metaroce.verbs.cm;

import java.net.ConnectException;

/**
 * The peer's application rejected the connection request; {@link #privateData()} is what it said.
 *
 * <p>Immutable once thrown (its private data is copied out); safe to hand to another thread.
 */
public final class ConnectionRejectedException extends ConnectException {
    private static final long serialVersionUID = 1L;
    private final byte[] privateData;

    public ConnectionRejectedException(String message, byte[] privateData) {
        super(message);
        this.privateData = privateData.clone();
    }

    /** The rejecter's private data (a copy; may be empty). */
    public byte[] privateData() {
        return privateData.clone();
    }
}
