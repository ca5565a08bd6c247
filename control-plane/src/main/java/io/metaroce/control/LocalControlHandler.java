package io.metaroce.control;

import java.nio.ByteBuffer;

/**
 * What the daemon implements to serve the local control protocol (see {@code mrce_abi.h}). The
 * server has already checked the frame header: {@code op} is known and the payload has exactly the
 * size that op's request struct has.
 */
public interface LocalControlHandler {

    /**
     * Handles one request. The payload is a little-endian buffer positioned at the request struct.
     * The handler must eventually call {@link LocalSession#respond} exactly once with the same op and
     * seq, from any thread.
     */
    void onRequest(LocalSession session, int op, int seq, ByteBuffer payload);

    /** The connection is gone (closed by the peer, by a protocol error, or by the daemon). */
    void onSessionClosed(LocalSession session);
}
