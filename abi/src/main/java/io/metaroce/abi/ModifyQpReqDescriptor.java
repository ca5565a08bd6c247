package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_modify_qp_req}: handle, ibv_qp_attr_mask, then a {@code mrce_qp_attr}. */
public final class ModifyQpReqDescriptor {
    public static final String C_NAME = "mrce_modify_qp_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"), Layouts.u32("attr_mask"), QpAttrDescriptor.LAYOUT.withName("attr"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_ATTR_MASK = Layouts.off(LAYOUT, "attr_mask");
    public static final int OFF_ATTR = Layouts.off(LAYOUT, "attr");

    private ModifyQpReqDescriptor() {}
}
