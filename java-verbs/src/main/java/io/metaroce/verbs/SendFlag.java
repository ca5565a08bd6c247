package io.metaroce.verbs;

import java.util.EnumSet;
import java.util.Set;

/**
 * One {@code enum ibv_send_flags} bit, for {@link EnumSet}s alongside the {@code FLAG_*} ints of
 * {@link SendWorkRequest}: {@code wr.flags(EnumSet.of(SendFlag.SIGNALED, SendFlag.INLINE))}.
 * Immutable, thread-safe.
 */
public enum SendFlag {
    /** Wait for earlier RDMA READs and atomics first. */
    FENCE(Abi.IBV_SEND_FENCE),
    /** The request produces a completion. */
    SIGNALED(Abi.IBV_SEND_SIGNALED),
    /** Raise a solicited event at the receiver. */
    SOLICITED(Abi.IBV_SEND_SOLICITED),
    /** The provider copies the data at post time. */
    INLINE(Abi.IBV_SEND_INLINE);

    private final int bit;

    SendFlag(int bit) {
        this.bit = bit;
    }

    /** The C bit ({@code IBV_SEND_*}). */
    public int bit() {
        return bit;
    }

    /** The C mask of {@code flags}. */
    public static int toBits(Set<SendFlag> flags) {
        int bits = 0;
        for (SendFlag f : flags) {
            bits |= f.bit;
        }
        return bits;
    }

    /** The flags set in {@code bits}; bits this enum does not name are ignored. */
    public static EnumSet<SendFlag> fromBits(int bits) {
        EnumSet<SendFlag> set = EnumSet.noneOf(SendFlag.class);
        for (SendFlag f : values()) {
            if ((bits & f.bit) != 0) {
                set.add(f);
            }
        }
        return set;
    }
}
