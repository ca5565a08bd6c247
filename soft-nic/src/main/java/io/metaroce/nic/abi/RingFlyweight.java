package io.metaroce.nic.abi;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.RingHeaderDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A view over one SQ, RQ or CQ ring ({@code struct mrce_ring_header} plus its slots) in shared
 * memory. Index fields are read with acquire and written with release semantics; the other side of
 * every ring is another process, so nothing here is cached except the geometry.
 */
public final class RingFlyweight {
    /**
     * Coordinates (MemorySegment, long offset), exact: a call with an int offset fails at once
     * instead of taking the generic path (an asType adaptation per access, never inlined; with the
     * generated descriptors' int offsets every index access of the engine went that way).
     */
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle().withInvokeExactBehavior();

    private static final long PRODUCER = RingHeaderDescriptor.OFF_PRODUCER;
    private static final long CONSUMER = RingHeaderDescriptor.OFF_CONSUMER;
    private static final long FLAGS = RingHeaderDescriptor.OFF_FLAGS;
    private static final long ARM = RingHeaderDescriptor.OFF_ARM;
    private static final long NOTIFY_COUNT = RingHeaderDescriptor.OFF_NOTIFY_COUNT;
    private static final long NOTIFY_SEQ = RingHeaderDescriptor.OFF_NOTIFY_SEQ;

    private MemorySegment segment = MemorySegment.NULL;
    private int slotSize;
    private int mask;

    /** Bytes a ring of {@code slotCount} slots of {@code slotSize} bytes needs. */
    public static long byteSize(int slotSize, int slotCount) {
        return AbiConstants.MRCE_RING_SLOTS_OFF + (long) slotSize * slotCount;
    }

    /** Writes a fresh header (zero indices) and wraps the ring. */
    public RingFlyweight init(MemorySegment ring, int kind, int slotSize, int slotCount) {
        if (Integer.bitCount(slotCount) != 1) {
            throw new IllegalArgumentException("slot_count must be a power of two: " + slotCount);
        }
        MemorySegment s = ring.asSlice(0, byteSize(slotSize, slotCount));
        s.asSlice(0, RingHeaderDescriptor.SIZE).fill((byte) 0);
        s.set(ValueLayout.JAVA_INT, RingHeaderDescriptor.OFF_MAGIC, AbiConstants.MRCE_RING_MAGIC);
        s.set(ValueLayout.JAVA_SHORT, RingHeaderDescriptor.OFF_VERSION, (short) AbiConstants.MRCE_RING_VERSION);
        s.set(ValueLayout.JAVA_SHORT, RingHeaderDescriptor.OFF_KIND, (short) kind);
        s.set(ValueLayout.JAVA_INT, RingHeaderDescriptor.OFF_SLOT_SIZE, slotSize);
        s.set(ValueLayout.JAVA_INT, RingHeaderDescriptor.OFF_SLOT_COUNT, slotCount);
        VarHandle.fullFence();
        return wrap(s);
    }

    /** Wraps an existing ring after checking magic, version and geometry. */
    public RingFlyweight wrap(MemorySegment ring) {
        int magic = ring.get(ValueLayout.JAVA_INT, RingHeaderDescriptor.OFF_MAGIC);
        int version = ring.get(ValueLayout.JAVA_SHORT, RingHeaderDescriptor.OFF_VERSION);
        int size = ring.get(ValueLayout.JAVA_INT, RingHeaderDescriptor.OFF_SLOT_SIZE);
        int count = ring.get(ValueLayout.JAVA_INT, RingHeaderDescriptor.OFF_SLOT_COUNT);
        if (magic != AbiConstants.MRCE_RING_MAGIC
                || version != AbiConstants.MRCE_RING_VERSION
                || Integer.bitCount(count) != 1
                || size <= 0
                || ring.byteSize() < byteSize(size, count)) {
            throw new IllegalArgumentException(
                    "not a valid mrce ring: magic 0x" + Integer.toHexString(magic) + " version " + version);
        }
        this.segment = ring;
        this.slotSize = size;
        this.mask = count - 1;
        return this;
    }

    public MemorySegment segment() {
        return segment;
    }

    public int kind() {
        return segment.get(ValueLayout.JAVA_SHORT, RingHeaderDescriptor.OFF_KIND);
    }

    public int slotCount() {
        return mask + 1;
    }

    public int slotSize() {
        return slotSize;
    }

    /** Byte offset of the slot that free-running index {@code index} maps to. */
    public long slotOffset(int index) {
        return AbiConstants.MRCE_RING_SLOTS_OFF + (long) (index & mask) * slotSize;
    }

    public int producerAcquire() {
        return (int) INT.getAcquire(segment, PRODUCER);
    }

    public void producerRelease(int value) {
        INT.setRelease(segment, PRODUCER, value);
    }

    public int consumerAcquire() {
        return (int) INT.getAcquire(segment, CONSUMER);
    }

    public void consumerRelease(int value) {
        INT.setRelease(segment, CONSUMER, value);
    }

    /** Whether NEED_WAKEUP is set (the provider's read after it published a post). */
    public boolean needWakeup() {
        return ((int) INT.getVolatile(segment, FLAGS) & AbiConstants.MRCE_RING_NEED_WAKEUP) != 0;
    }

    /** Sets NEED_WAKEUP (only the daemon writes flags). */
    public void setNeedWakeup(boolean on) {
        INT.setVolatile(segment, FLAGS, on ? AbiConstants.MRCE_RING_NEED_WAKEUP : 0);
    }

    /** Atomically takes the CQ arm (the provider writes it, the daemon clears it). */
    public int exchangeArm(int value) {
        return (int) INT.getAndSet(segment, ARM, value);
    }

    public int armVolatile() {
        return (int) INT.getVolatile(segment, ARM);
    }

    public int notifyCount() {
        return (int) INT.getAcquire(segment, NOTIFY_COUNT);
    }

    /** The channel's number of this CQ's latest notification (written before notify_count). */
    public void notifySeq(int seq) {
        INT.setRelease(segment, NOTIFY_SEQ, seq);
    }

    /** Only the daemon writes notify_count: a plain increment published with release. */
    public void incrementNotifyCount() {
        INT.setRelease(segment, NOTIFY_COUNT, notifyCount() + 1);
    }
}
