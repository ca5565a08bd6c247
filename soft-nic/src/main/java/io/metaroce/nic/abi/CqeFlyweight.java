package io.metaroce.nic.abi;

import io.metaroce.abi.CqeDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Read/write view of one {@code struct mrce_cqe} slot. */
public final class CqeFlyweight {
    private MemorySegment segment = MemorySegment.NULL;
    private long base;

    public CqeFlyweight wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    /** Writes a whole CQE (reserved bytes zeroed). */
    public CqeFlyweight set(
            long wrId, int status, int opcode, int byteLen, int immData, int qpNum, int srcQp, int wcFlags) {
        segment.set(ValueLayout.JAVA_LONG, base + CqeDescriptor.OFF_WR_ID, wrId);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_STATUS, status);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_OPCODE, opcode);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_VENDOR_ERR, 0);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_BYTE_LEN, byteLen);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_IMM_DATA, immData);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_QP_NUM, qpNum);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_SRC_QP, srcQp);
        segment.set(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_WC_FLAGS, wcFlags);
        segment.set(ValueLayout.JAVA_LONG, base + CqeDescriptor.OFF_PKEY_INDEX, 0L);
        segment.set(ValueLayout.JAVA_LONG, base + 48, 0L);
        segment.set(ValueLayout.JAVA_LONG, base + 56, 0L);
        return this;
    }

    public long wrId() {
        return segment.get(ValueLayout.JAVA_LONG, base + CqeDescriptor.OFF_WR_ID);
    }

    public int status() {
        return segment.get(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_STATUS);
    }

    public int opcode() {
        return segment.get(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_OPCODE);
    }

    public int byteLen() {
        return segment.get(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_BYTE_LEN);
    }

    public int immData() {
        return segment.get(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_IMM_DATA);
    }

    public int qpNum() {
        return segment.get(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_QP_NUM);
    }

    public int srcQp() {
        return segment.get(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_SRC_QP);
    }

    public int wcFlags() {
        return segment.get(ValueLayout.JAVA_INT, base + CqeDescriptor.OFF_WC_FLAGS);
    }
}
