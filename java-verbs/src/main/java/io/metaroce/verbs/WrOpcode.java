package io.metaroce.verbs;

/**
 * {@code enum ibv_wr_opcode}: what a {@link SendWorkRequest} does, alongside the {@code int}
 * constants of {@link SendWorkRequest} ({@link SendWorkRequest#wrOpcode()}). Immutable,
 * thread-safe.
 */
public enum WrOpcode {
    RDMA_WRITE(Abi.IBV_WR_RDMA_WRITE),
    RDMA_WRITE_WITH_IMM(Abi.IBV_WR_RDMA_WRITE_WITH_IMM),
    SEND(Abi.IBV_WR_SEND),
    SEND_WITH_IMM(Abi.IBV_WR_SEND_WITH_IMM),
    RDMA_READ(Abi.IBV_WR_RDMA_READ),
    ATOMIC_CMP_AND_SWP(Abi.IBV_WR_ATOMIC_CMP_AND_SWP),
    ATOMIC_FETCH_AND_ADD(Abi.IBV_WR_ATOMIC_FETCH_AND_ADD);

    private static final WrOpcode[] BY_VALUE = new WrOpcode[7];

    static {
        for (WrOpcode o : values()) {
            BY_VALUE[o.value] = o;
        }
    }

    private final int value;

    WrOpcode(int value) {
        this.value = value;
    }

    /** The C value ({@code IBV_WR_*}). */
    public int value() {
        return value;
    }

    /** The opcode of C value {@code value}, or null for one this binding does not name. */
    public static WrOpcode of(int value) {
        return value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
    }
}
