package io.metaroce.verbs;

/**
 * A verb failed. The message names the verb (the C function, e.g. {@code ibv_modify_qp} or
 * {@code ibv_post_send}) and its error number with the system's text, e.g.
 * {@code "ibv_create_qp failed: Invalid argument (errno 22)"}.
 *
 * <p>Immutable once thrown; safe to hand to another thread.
 */
public class VerbsException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String verb;
    private final int errno;

    public VerbsException(String verb, int errno) {
        this(verb, errno, null);
    }

    public VerbsException(String verb, int errno, String detail) {
        super(verb + " failed: " + Native.strerror(errno) + " (errno " + errno + ")"
                + (detail == null || detail.isEmpty() ? "" : "; " + detail));
        this.verb = verb;
        this.errno = errno;
    }

    /** The C verb that failed, e.g. {@code "ibv_post_send"}. */
    public String verb() {
        return verb;
    }

    /** The error number the verb returned or set in errno (e.g. 22 for EINVAL). */
    public int errno() {
        return errno;
    }
}
