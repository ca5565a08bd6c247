package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_context_token} of mrce_abi.h: The first bytes of a context memfd. */
public final class ContextTokenDescriptor {
    public static final String C_NAME = "mrce_context_token";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("magic"), Layouts.u32("abi_version"), Layouts.bytes("dev_name", 16))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_MAGIC = Layouts.off(LAYOUT, "magic");
    public static final int OFF_ABI_VERSION = Layouts.off(LAYOUT, "abi_version");
    public static final int OFF_DEV_NAME = Layouts.off(LAYOUT, "dev_name");

    private ContextTokenDescriptor() {}
}
