package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_sge} of mrce_abi.h: One scatter/gather element of a WQE. */
public final class SgeDescriptor {
    public static final String C_NAME = "mrce_sge";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u64("addr"), Layouts.u32("length"), Layouts.u32("lkey"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_ADDR = Layouts.off(LAYOUT, "addr");
    public static final int OFF_LENGTH = Layouts.off(LAYOUT, "length");
    public static final int OFF_LKEY = Layouts.off(LAYOUT, "lkey");

    private SgeDescriptor() {}
}
