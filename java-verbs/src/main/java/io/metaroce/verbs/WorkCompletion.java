package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * A flyweight over one {@code struct ibv_wc} slot of a {@link WorkCompletions} array: the
 * getters read native memory directly, nothing is copied or allocated. It shows the next poll's
 * completion once the array is polled again: keep one with {@link #snapshot()}, an immutable
 * copy. Constants name the {@code enum ibv_wc_status} and {@code enum ibv_wc_opcode} values.
 *
 * <p><b>Thread safety:</b> none; read it on the polling thread (a {@link Snapshot} may go anywhere).
 */
public final class WorkCompletion {

    // enum ibv_wc_status (the common ones)
    public static final int SUCCESS = Abi.IBV_WC_SUCCESS;
    public static final int LOC_LEN_ERR = Abi.IBV_WC_LOC_LEN_ERR;
    public static final int LOC_QP_OP_ERR = Abi.IBV_WC_LOC_QP_OP_ERR;
    public static final int LOC_PROT_ERR = Abi.IBV_WC_LOC_PROT_ERR;
    public static final int WR_FLUSH_ERR = Abi.IBV_WC_WR_FLUSH_ERR;
    public static final int REM_INV_REQ_ERR = Abi.IBV_WC_REM_INV_REQ_ERR;
    public static final int REM_ACCESS_ERR = Abi.IBV_WC_REM_ACCESS_ERR;
    public static final int REM_OP_ERR = Abi.IBV_WC_REM_OP_ERR;
    public static final int RETRY_EXC_ERR = Abi.IBV_WC_RETRY_EXC_ERR;
    public static final int RNR_RETRY_EXC_ERR = Abi.IBV_WC_RNR_RETRY_EXC_ERR;
    public static final int GENERAL_ERR = Abi.IBV_WC_GENERAL_ERR;

    // enum ibv_wc_opcode
    public static final int OP_SEND = Abi.IBV_WC_SEND;
    public static final int OP_RDMA_WRITE = Abi.IBV_WC_RDMA_WRITE;
    public static final int OP_RDMA_READ = Abi.IBV_WC_RDMA_READ;
    public static final int OP_COMP_SWAP = Abi.IBV_WC_COMP_SWAP;
    public static final int OP_FETCH_ADD = Abi.IBV_WC_FETCH_ADD;
    public static final int OP_RECV = Abi.IBV_WC_RECV;
    public static final int OP_RECV_RDMA_WITH_IMM = Abi.IBV_WC_RECV_RDMA_WITH_IMM;

    // wc_flags
    public static final int WITH_IMM = Abi.IBV_WC_WITH_IMM;
    public static final int GRH = Abi.IBV_WC_GRH;

    private static final Native.Verb WC_STATUS_STR =
            Native.verb("ibv_wc_status_str", FunctionDescriptor.of(ADDRESS, JAVA_INT));

    private static final java.lang.foreign.ValueLayout.OfInt IMM_BE = JAVA_INT.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private final MemorySegment s;

    WorkCompletion(MemorySegment slot) {
        this.s = slot;
    }

    /** The {@code wr_id} of the work request this completes. */
    public long wrId() {
        return s.get(JAVA_LONG, Abi.WC_WR_ID);
    }

    /** {@code enum ibv_wc_status}; {@link #SUCCESS} is 0. */
    public int status() {
        return s.get(JAVA_INT, Abi.WC_STATUS);
    }

    public boolean isSuccess() {
        return status() == SUCCESS;
    }

    /** The status as an enum (null for a value this binding does not name; {@link #status()} has it). */
    public WcStatus wcStatus() {
        return WcStatus.of(status());
    }

    /** The opcode as an enum (null for a value this binding does not name). Valid only on success. */
    public WcOpcode wcOpcode() {
        return WcOpcode.of(opcode());
    }

    /** {@code enum ibv_wc_opcode} ({@link #OP_SEND}, {@link #OP_RECV}, ...). Valid only on success. */
    public int opcode() {
        return s.get(JAVA_INT, Abi.WC_OPCODE);
    }

    public int vendorErr() {
        return s.get(JAVA_INT, Abi.WC_VENDOR_ERR);
    }

    /** Bytes received (receives) or transferred (RDMA READ, atomics). */
    public int byteLength() {
        return s.get(JAVA_INT, Abi.WC_BYTE_LEN);
    }

    /**
     * The immediate data in host order: {@code ntohl(wc.imm_data)}, the value the sender passed
     * to {@link SendWorkRequest#sendWithImm} (or a C sender to {@code htonl}).
     */
    public int immData() {
        return s.get(IMM_BE, Abi.WC_IMM_DATA);
    }

    /** The immediate data as stored ({@code __be32}: network byte order, not converted). */
    public int immDataRaw() {
        return s.get(JAVA_INT, Abi.WC_IMM_DATA);
    }

    /** True when {@link #immData()} is valid ({@code IBV_WC_WITH_IMM}). */
    public boolean hasImm() {
        return (flags() & WITH_IMM) != 0;
    }

    public int qpNum() {
        return s.get(JAVA_INT, Abi.WC_QP_NUM);
    }

    /** The sender's QP number (UD receives). */
    public int srcQp() {
        return s.get(JAVA_INT, Abi.WC_SRC_QP);
    }

    /** {@code wc_flags} ({@link #WITH_IMM}, {@link #GRH}). */
    public int flags() {
        return s.get(JAVA_INT, Abi.WC_WC_FLAGS);
    }

    public int pkeyIndex() {
        return s.get(JAVA_SHORT, Abi.WC_PKEY_INDEX) & 0xffff;
    }

    public int slid() {
        return s.get(JAVA_SHORT, Abi.WC_SLID) & 0xffff;
    }

    public int sl() {
        return s.get(JAVA_BYTE, Abi.WC_SL) & 0xff;
    }

    /**
     * Returns this completion when its status is SUCCESS, else throws a
     * {@link WorkCompletionException} naming the work request, opcode, QP and status.
     */
    public WorkCompletion check() {
        int status = status();
        if (status != SUCCESS) {
            throw new WorkCompletionException(wrId(), status, opcode(), qpNum(), vendorErr());
        }
        return this;
    }

    /** An immutable copy of this completion that survives the next poll (allocates one object). */
    public Snapshot snapshot() {
        return new Snapshot(
                wrId(),
                status(),
                opcode(),
                vendorErr(),
                byteLength(),
                immData(),
                qpNum(),
                srcQp(),
                flags(),
                pkeyIndex(),
                slid(),
                sl());
    }

    /**
     * An immutable copy of a {@link WorkCompletion}, from {@link WorkCompletion#snapshot()}:
     * valid after the next poll, on any thread. {@code immData} is in host order.
     */
    public record Snapshot(
            long wrId,
            int status,
            int opcode,
            int vendorErr,
            int byteLength,
            int immData,
            int qpNum,
            int srcQp,
            int flags,
            int pkeyIndex,
            int slid,
            int sl) {

        public boolean isSuccess() {
            return status == SUCCESS;
        }

        /** The status as an enum (null for a value this binding does not name). */
        public WcStatus wcStatus() {
            return WcStatus.of(status);
        }

        /** The opcode as an enum (null for a value this binding does not name). */
        public WcOpcode wcOpcode() {
            return WcOpcode.of(opcode);
        }

        /** True when {@link #immData()} is valid. */
        public boolean hasImm() {
            return (flags & WITH_IMM) != 0;
        }

        /** Returns this when its status is SUCCESS, else throws {@link WorkCompletionException}. */
        public Snapshot check() {
            if (status != SUCCESS) {
                throw new WorkCompletionException(wrId, status, opcode, qpNum, vendorErr);
            }
            return this;
        }

        @Override
        public String toString() {
            return "WorkCompletion[wrId=" + wrId + ", status=" + statusName(status) + ", opcode=" + opcodeName(opcode)
                    + ", byteLength=" + byteLength + ", qpNum=" + qpNum + "]";
        }
    }

    /** The C name without {@code IBV_WC_}, e.g. {@code "REM_ACCESS_ERR"}. */
    public static String statusName(int status) {
        WcStatus s = WcStatus.of(status);
        return s != null ? s.name() : "STATUS_" + status;
    }

    /** libibverbs' text for a status ({@code ibv_wc_status_str}), e.g. "remote access error". */
    public static String statusString(int status) {
        try {
            return Native.string((MemorySegment) WC_STATUS_STR.invoke(status));
        } catch (RuntimeException | UnsatisfiedLinkError e) {
            return statusName(status);
        }
    }

    /** The C name without {@code IBV_WC_}, e.g. {@code "RDMA_WRITE"}. */
    public static String opcodeName(int opcode) {
        WcOpcode o = WcOpcode.of(opcode);
        return o != null ? o.name() : "OPCODE_" + opcode;
    }

    @Override
    public String toString() {
        return "WorkCompletion[wrId=" + wrId() + ", status=" + statusName(status()) + ", opcode=" + opcodeName(opcode())
                + ", byteLength=" + byteLength() + ", qpNum=" + qpNum() + "]";
    }
}
