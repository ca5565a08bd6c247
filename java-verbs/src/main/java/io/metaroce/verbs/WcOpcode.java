package io.metaroce.verbs;

/**
 * {@code enum ibv_wc_opcode}: what a work completion completed, alongside the {@code OP_*} ints of
 * {@link WorkCompletion} ({@link WorkCompletion#wcOpcode()}). Immutable, thread-safe.
 */
public enum WcOpcode {
    SEND(Abi.IBV_WC_SEND),
    RDMA_WRITE(Abi.IBV_WC_RDMA_WRITE),
    RDMA_READ(Abi.IBV_WC_RDMA_READ),
    COMP_SWAP(Abi.IBV_WC_COMP_SWAP),
    FETCH_ADD(Abi.IBV_WC_FETCH_ADD),
    RECV(Abi.IBV_WC_RECV),
    RECV_RDMA_WITH_IMM(Abi.IBV_WC_RECV_RDMA_WITH_IMM);

    private final int value;

    WcOpcode(int value) {
        this.value = value;
    }

    /** The C value ({@code IBV_WC_*}). */
    public int value() {
        return value;
    }

    /** The opcode of C value {@code value}, or null for one this binding does not name. */
    public static WcOpcode of(int value) {
        return switch (value) {
            case Abi.IBV_WC_SEND -> SEND;
            case Abi.IBV_WC_RDMA_WRITE -> RDMA_WRITE;
            case Abi.IBV_WC_RDMA_READ -> RDMA_READ;
            case Abi.IBV_WC_COMP_SWAP -> COMP_SWAP;
            case Abi.IBV_WC_FETCH_ADD -> FETCH_ADD;
            case Abi.IBV_WC_RECV -> RECV;
            case Abi.IBV_WC_RECV_RDMA_WITH_IMM -> RECV_RDMA_WITH_IMM;
            default -> null;
        };
    }
}
