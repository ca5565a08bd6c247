package io.metaroce.nic.abi;

import io.metaroce.abi.SgeDescriptor;
import io.metaroce.abi.WqeDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Read/write view of one {@code struct mrce_wqe} slot. */
public final class WqeFlyweight {
    private MemorySegment segment = MemorySegment.NULL;
    private long base;

    public WqeFlyweight wrap(MemorySegment segment, long offset) {
        this.segment = segment;
        this.base = offset;
        return this;
    }

    public long wrId() {
        return segment.get(ValueLayout.JAVA_LONG, base + WqeDescriptor.OFF_WR_ID);
    }

    public WqeFlyweight wrId(long v) {
        segment.set(ValueLayout.JAVA_LONG, base + WqeDescriptor.OFF_WR_ID, v);
        return this;
    }

    public int opcode() {
        return segment.get(ValueLayout.JAVA_BYTE, base + WqeDescriptor.OFF_OPCODE) & 0xff;
    }

    public WqeFlyweight opcode(int v) {
        segment.set(ValueLayout.JAVA_BYTE, base + WqeDescriptor.OFF_OPCODE, (byte) v);
        return this;
    }

    public int sendFlags() {
        return segment.get(ValueLayout.JAVA_BYTE, base + WqeDescriptor.OFF_SEND_FLAGS) & 0xff;
    }

    public WqeFlyweight sendFlags(int v) {
        segment.set(ValueLayout.JAVA_BYTE, base + WqeDescriptor.OFF_SEND_FLAGS, (byte) v);
        return this;
    }

    public int numSge() {
        return segment.get(ValueLayout.JAVA_SHORT, base + WqeDescriptor.OFF_NUM_SGE) & 0xffff;
    }

    public WqeFlyweight numSge(int v) {
        segment.set(ValueLayout.JAVA_SHORT, base + WqeDescriptor.OFF_NUM_SGE, (short) v);
        return this;
    }

    /** imm_data exactly as stored (network order bytes, read little-endian). */
    public int immData() {
        return segment.get(ValueLayout.JAVA_INT, base + WqeDescriptor.OFF_IMM_DATA);
    }

    public WqeFlyweight immData(int v) {
        segment.set(ValueLayout.JAVA_INT, base + WqeDescriptor.OFF_IMM_DATA, v);
        return this;
    }

    public int length() {
        return segment.get(ValueLayout.JAVA_INT, base + WqeDescriptor.OFF_LENGTH);
    }

    public WqeFlyweight length(int v) {
        segment.set(ValueLayout.JAVA_INT, base + WqeDescriptor.OFF_LENGTH, v);
        return this;
    }

    public long sgeAddr(int i) {
        return segment.get(ValueLayout.JAVA_LONG, sgeBase(i) + SgeDescriptor.OFF_ADDR);
    }

    public int sgeLength(int i) {
        return segment.get(ValueLayout.JAVA_INT, sgeBase(i) + SgeDescriptor.OFF_LENGTH);
    }

    public int sgeLkey(int i) {
        return segment.get(ValueLayout.JAVA_INT, sgeBase(i) + SgeDescriptor.OFF_LKEY);
    }

    public WqeFlyweight sge(int i, long addr, int length, int lkey) {
        long b = sgeBase(i);
        segment.set(ValueLayout.JAVA_LONG, b + SgeDescriptor.OFF_ADDR, addr);
        segment.set(ValueLayout.JAVA_INT, b + SgeDescriptor.OFF_LENGTH, length);
        segment.set(ValueLayout.JAVA_INT, b + SgeDescriptor.OFF_LKEY, lkey);
        return this;
    }

    /** Offset (in the wrapped segment) of the inline payload. */
    public long inlineDataOffset() {
        return base + WqeDescriptor.OFF_DATA;
    }

    public MemorySegment segment() {
        return segment;
    }

    private long sgeBase(int i) {
        return base + WqeDescriptor.OFF_DATA + (long) i * SgeDescriptor.SIZE;
    }
}
