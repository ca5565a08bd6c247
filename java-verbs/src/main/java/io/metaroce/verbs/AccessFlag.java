package io.metaroce.verbs;

import java.util.EnumSet;
import java.util.Set;

/**
 * One {@code enum ibv_access_flags} bit, for {@link EnumSet}s alongside the {@code int} masks of
 * {@link Access}: {@code pd.register(segment, EnumSet.of(AccessFlag.LOCAL_WRITE,
 * AccessFlag.REMOTE_WRITE))}. Immutable, thread-safe.
 */
public enum AccessFlag {
    /** The local HCA may write (receives, RDMA READ responses, atomics results). */
    LOCAL_WRITE(Abi.IBV_ACCESS_LOCAL_WRITE),
    /** Peers may RDMA WRITE (requires LOCAL_WRITE). */
    REMOTE_WRITE(Abi.IBV_ACCESS_REMOTE_WRITE),
    /** Peers may RDMA READ. */
    REMOTE_READ(Abi.IBV_ACCESS_REMOTE_READ),
    /** Peers may run atomics (requires LOCAL_WRITE). */
    REMOTE_ATOMIC(Abi.IBV_ACCESS_REMOTE_ATOMIC);

    private final int bit;

    AccessFlag(int bit) {
        this.bit = bit;
    }

    /** The C bit ({@code IBV_ACCESS_*}). */
    public int bit() {
        return bit;
    }

    /** The C mask of {@code flags}. */
    public static int toBits(Set<AccessFlag> flags) {
        int bits = 0;
        for (AccessFlag f : flags) {
            bits |= f.bit;
        }
        return bits;
    }

    /** The flags set in {@code bits}; bits this enum does not name are ignored. */
    public static EnumSet<AccessFlag> fromBits(int bits) {
        EnumSet<AccessFlag> set = EnumSet.noneOf(AccessFlag.class);
        for (AccessFlag f : values()) {
            if ((bits & f.bit) != 0) {
                set.add(f);
            }
        }
        return set;
    }
}
