package io.metaroce.control.cm;

/** A peer daemon broke the connection-manager protocol; its connection is closed. */
public final class CmProtocolException extends RuntimeException {
    public CmProtocolException(String message) {
        super(message, null, false, false);
    }
}
