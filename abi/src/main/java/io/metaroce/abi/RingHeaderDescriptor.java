package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_ring_header} of mrce_abi.h: Header of every SQ/RQ/CQ ring; indices each on their own cache line. */
public final class RingHeaderDescriptor {
    public static final String C_NAME = "mrce_ring_header";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("magic"),
                    Layouts.u16("version"),
                    Layouts.u16("kind"),
                    Layouts.u32("slot_size"),
                    Layouts.u32("slot_count"),
                    Layouts.pad("pad0", 48),
                    Layouts.u32("producer"),
                    Layouts.pad("pad1", 60),
                    Layouts.u32("consumer"),
                    Layouts.pad("pad2", 60),
                    Layouts.u32("flags"),
                    Layouts.u32("arm"),
                    Layouts.u32("notify_count"),
                    Layouts.u32("notify_seq"),
                    Layouts.pad("pad3", 48))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_MAGIC = Layouts.off(LAYOUT, "magic");
    public static final int OFF_VERSION = Layouts.off(LAYOUT, "version");
    public static final int OFF_KIND = Layouts.off(LAYOUT, "kind");
    public static final int OFF_SLOT_SIZE = Layouts.off(LAYOUT, "slot_size");
    public static final int OFF_SLOT_COUNT = Layouts.off(LAYOUT, "slot_count");
    public static final int OFF_PRODUCER = Layouts.off(LAYOUT, "producer");
    public static final int OFF_CONSUMER = Layouts.off(LAYOUT, "consumer");
    public static final int OFF_FLAGS = Layouts.off(LAYOUT, "flags");
    public static final int OFF_ARM = Layouts.off(LAYOUT, "arm");
    public static final int OFF_NOTIFY_COUNT = Layouts.off(LAYOUT, "notify_count");
    public static final int OFF_NOTIFY_SEQ = Layouts.off(LAYOUT, "notify_seq");

    private RingHeaderDescriptor() {}
}
