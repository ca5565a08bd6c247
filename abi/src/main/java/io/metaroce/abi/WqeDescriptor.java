package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct mrce_wqe}: one SQ/RQ slot, 256 bytes.
 *
 * <pre>
 *  0 wr_id u64 | 8 opcode u8 | 9 send_flags u8 | 10 num_sge u16 | 12 imm_data u32 |
 * 16 length u32 | 20 rkey u32 | 24 remote_addr u64 | 32 compare_add u64 | 40 swap u64 |
 * 48 ud_remote_qpn u32 | 52 ud_remote_qkey u32 | 56 ud_dest_ipv4 u32 (network order) |
 * 60 ud_traffic_class u8 | 61 ud_hop_limit u8 | 62 reserved u16 |
 * 64 data: sge[12] (16 bytes each) or inline_data[192]
 * </pre>
 */
public final class WqeDescriptor {
    public static final String C_NAME = "mrce_wqe";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u64("wr_id"),
                    Layouts.u8("opcode"),
                    Layouts.u8("send_flags"),
                    Layouts.u16("num_sge"),
                    Layouts.u32("imm_data"),
                    Layouts.u32("length"),
                    Layouts.u32("rkey"),
                    Layouts.u64("remote_addr"),
                    Layouts.u64("compare_add"),
                    Layouts.u64("swap"),
                    Layouts.u32("ud_remote_qpn"),
                    Layouts.u32("ud_remote_qkey"),
                    Layouts.u32("ud_dest_ipv4"),
                    Layouts.u8("ud_traffic_class"),
                    Layouts.u8("ud_hop_limit"),
                    Layouts.u16("reserved"),
                    MemoryLayout.unionLayout(
                                    MemoryLayout.sequenceLayout(AbiConstants.MRCE_MAX_SGE, SgeDescriptor.LAYOUT)
                                            .withName("sge"),
                                    Layouts.bytes("inline_data", AbiConstants.MRCE_MAX_INLINE))
                            .withName("data"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_WR_ID = Layouts.off(LAYOUT, "wr_id");
    public static final int OFF_OPCODE = Layouts.off(LAYOUT, "opcode");
    public static final int OFF_SEND_FLAGS = Layouts.off(LAYOUT, "send_flags");
    public static final int OFF_NUM_SGE = Layouts.off(LAYOUT, "num_sge");
    public static final int OFF_IMM_DATA = Layouts.off(LAYOUT, "imm_data");
    public static final int OFF_LENGTH = Layouts.off(LAYOUT, "length");
    public static final int OFF_RKEY = Layouts.off(LAYOUT, "rkey");
    public static final int OFF_REMOTE_ADDR = Layouts.off(LAYOUT, "remote_addr");
    public static final int OFF_COMPARE_ADD = Layouts.off(LAYOUT, "compare_add");
    public static final int OFF_SWAP = Layouts.off(LAYOUT, "swap");
    public static final int OFF_UD_REMOTE_QPN = Layouts.off(LAYOUT, "ud_remote_qpn");
    public static final int OFF_UD_REMOTE_QKEY = Layouts.off(LAYOUT, "ud_remote_qkey");
    public static final int OFF_UD_DEST_IPV4 = Layouts.off(LAYOUT, "ud_dest_ipv4");
    /**
     * On a UD SQ, bytes 32..47 (where RC atomics have compare_add and swap) hold the address
     * handle's dgid, {@code ud_dgid[16]} in C; {@code ud_dest_ipv4} is 0 when it is an IPv6 GID.
     */
    public static final int OFF_UD_DGID = OFF_COMPARE_ADD;

    public static final int OFF_UD_TRAFFIC_CLASS = Layouts.off(LAYOUT, "ud_traffic_class");
    public static final int OFF_UD_HOP_LIMIT = Layouts.off(LAYOUT, "ud_hop_limit");
    public static final int OFF_DATA = Layouts.off(LAYOUT, "data");

    private WqeDescriptor() {}
}
