package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_cqe} of mrce_abi.h: Completion queue entry (struct ibv_wc fields), 64 bytes. */
public final class CqeDescriptor {
    public static final String C_NAME = "mrce_cqe";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u64("wr_id"),
                    Layouts.u32("status"),
                    Layouts.u32("opcode"),
                    Layouts.u32("vendor_err"),
                    Layouts.u32("byte_len"),
                    Layouts.u32("imm_data"),
                    Layouts.u32("qp_num"),
                    Layouts.u32("src_qp"),
                    Layouts.u32("wc_flags"),
                    Layouts.u16("pkey_index"),
                    Layouts.u16("slid"),
                    Layouts.u8("sl"),
                    Layouts.u8("dlid_path_bits"),
                    Layouts.bytes("reserved", 18))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_WR_ID = Layouts.off(LAYOUT, "wr_id");
    public static final int OFF_STATUS = Layouts.off(LAYOUT, "status");
    public static final int OFF_OPCODE = Layouts.off(LAYOUT, "opcode");
    public static final int OFF_VENDOR_ERR = Layouts.off(LAYOUT, "vendor_err");
    public static final int OFF_BYTE_LEN = Layouts.off(LAYOUT, "byte_len");
    public static final int OFF_IMM_DATA = Layouts.off(LAYOUT, "imm_data");
    public static final int OFF_QP_NUM = Layouts.off(LAYOUT, "qp_num");
    public static final int OFF_SRC_QP = Layouts.off(LAYOUT, "src_qp");
    public static final int OFF_WC_FLAGS = Layouts.off(LAYOUT, "wc_flags");
    public static final int OFF_PKEY_INDEX = Layouts.off(LAYOUT, "pkey_index");
    public static final int OFF_SLID = Layouts.off(LAYOUT, "slid");
    public static final int OFF_SL = Layouts.off(LAYOUT, "sl");
    public static final int OFF_DLID_PATH_BITS = Layouts.off(LAYOUT, "dlid_path_bits");
    public static final int OFF_RESERVED = Layouts.off(LAYOUT, "reserved");

    private CqeDescriptor() {}
}
