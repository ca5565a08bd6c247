package io.metaroce.control;

import java.nio.ByteBuffer;

/**
 * One provider connection (one {@code ibv_context}) on the local control socket, as seen by the
 * daemon. The peer credentials come from {@code SO_PEERCRED} when the connection is accepted.
 */
public interface LocalSession {

    /** A number unique to this connection for the daemon's lifetime. */
    long id();

    int pid();

    int uid();

    int gid();

    /**
     * The connection's socket descriptor, for {@code getsockopt} (e.g. {@code SO_PEERPIDFD}); -1
     * when there is none (a session not backed by a socket). Never read or write it.
     */
    default int socketFd() {
        return -1;
    }

    /**
     * Sends the response to a request: a {@code mrce_ctrl_hdr} with {@code op}, {@code seq} and
     * {@code status} (0 or a positive errno), the payload (little-endian, from its position to its
     * limit; may be empty), then each fd as SCM_RIGHTS on a single zero byte, in order. Thread-safe.
     * The fds are duplicated before this returns (the duplicates are closed once sent), so the
     * caller keeps ownership of its fds and may close them at once.
     */
    void respond(int op, int seq, int status, ByteBuffer payload, int... fds);

    /** Closes the connection, logging the reason once. */
    void close(String reason);
}
