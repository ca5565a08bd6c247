package io.metaroce.verbs;

/**
 * Memory region and QP access flags ({@code enum ibv_access_flags}) as {@code int} bits; combine
 * with {@code |}. {@link AccessFlag} names the same bits for {@link java.util.EnumSet}s; every
 * method that takes these ints has an overload taking a {@code Set<AccessFlag>}.
 *
 * <p>Constants only; thread-safe.
 */
public final class Access {
    private Access() {}

    /** The local HCA may write (needed for receives, RDMA READ responses, atomics results). */
    public static final int LOCAL_WRITE = Abi.IBV_ACCESS_LOCAL_WRITE;
    /** Peers may RDMA WRITE here (requires LOCAL_WRITE). */
    public static final int REMOTE_WRITE = Abi.IBV_ACCESS_REMOTE_WRITE;
    /** Peers may RDMA READ from here. */
    public static final int REMOTE_READ = Abi.IBV_ACCESS_REMOTE_READ;
    /** Peers may run atomics here (requires LOCAL_WRITE). */
    public static final int REMOTE_ATOMIC = Abi.IBV_ACCESS_REMOTE_ATOMIC;
    /** Everything above. */
    public static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
}
