package io.metaroce.control.cm;

/** A connection request failed: rejected by the peer, timed out, or its peer daemon was lost. */
public final class CmRejectedException extends RuntimeException {
    private final int reason;

    public CmRejectedException(int reason, String message) {
        super(message, null, false, false);
        this.reason = reason;
    }

    /** {@code CmMessage.REASON_*}. */
    public int reason() {
        return reason;
    }
}
