package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_hello_req} of mrce_abi.h: HELLO request. */
public final class HelloReqDescriptor {
    public static final String C_NAME = "mrce_hello_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("abi_version"), Layouts.u32("flags"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_ABI_VERSION = Layouts.off(LAYOUT, "abi_version");
    public static final int OFF_FLAGS = Layouts.off(LAYOUT, "flags");

    private HelloReqDescriptor() {}
}
