package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_hello_resp} of mrce_abi.h: HELLO response: device identity and limits. */
public final class HelloRespDescriptor {
    public static final String C_NAME = "mrce_hello_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("abi_version"),
                    Layouts.u32("daemon_pid"),
                    Layouts.bytes("gid", 16),
                    Layouts.bytes("dev_name", 16),
                    Layouts.bytes("ifname", 16),
                    Layouts.u64("node_guid"),
                    Layouts.u32("if_mtu"),
                    Layouts.u32("active_mtu"),
                    Layouts.u32("max_mtu"),
                    Layouts.u32("udp_port"),
                    Layouts.u32("max_qp"),
                    Layouts.u32("max_qp_wr"),
                    Layouts.u32("max_sge"),
                    Layouts.u32("max_cq"),
                    Layouts.u32("max_cqe"),
                    Layouts.u32("max_mr"),
                    Layouts.u64("max_mr_size"),
                    Layouts.u32("max_pd"),
                    Layouts.u32("max_inline"),
                    Layouts.u32("max_qp_rd_atom"),
                    Layouts.u32("max_comp_channel"),
                    Layouts.u32("vendor_id"),
                    Layouts.u32("vendor_part_id"),
                    Layouts.u32("hw_ver"),
                    Layouts.u32("link_up"),
                    Layouts.u32("speed_mbps"),
                    Layouts.u32("max_srq"),
                    Layouts.u32("max_srq_wr"),
                    Layouts.u32("max_srq_sge"),
                    Layouts.u32("max_qp_init_rd_atom"),
                    Layouts.u32("atomic_cap"),
                    Layouts.u32("max_ah"),
                    Layouts.pad("pad", 4))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_ABI_VERSION = Layouts.off(LAYOUT, "abi_version");
    public static final int OFF_DAEMON_PID = Layouts.off(LAYOUT, "daemon_pid");
    public static final int OFF_GID = Layouts.off(LAYOUT, "gid");
    public static final int OFF_DEV_NAME = Layouts.off(LAYOUT, "dev_name");
    public static final int OFF_IFNAME = Layouts.off(LAYOUT, "ifname");
    public static final int OFF_NODE_GUID = Layouts.off(LAYOUT, "node_guid");
    public static final int OFF_IF_MTU = Layouts.off(LAYOUT, "if_mtu");
    public static final int OFF_ACTIVE_MTU = Layouts.off(LAYOUT, "active_mtu");
    public static final int OFF_MAX_MTU = Layouts.off(LAYOUT, "max_mtu");
    public static final int OFF_UDP_PORT = Layouts.off(LAYOUT, "udp_port");
    public static final int OFF_MAX_QP = Layouts.off(LAYOUT, "max_qp");
    public static final int OFF_MAX_QP_WR = Layouts.off(LAYOUT, "max_qp_wr");
    public static final int OFF_MAX_SGE = Layouts.off(LAYOUT, "max_sge");
    public static final int OFF_MAX_CQ = Layouts.off(LAYOUT, "max_cq");
    public static final int OFF_MAX_CQE = Layouts.off(LAYOUT, "max_cqe");
    public static final int OFF_MAX_MR = Layouts.off(LAYOUT, "max_mr");
    public static final int OFF_MAX_MR_SIZE = Layouts.off(LAYOUT, "max_mr_size");
    public static final int OFF_MAX_PD = Layouts.off(LAYOUT, "max_pd");
    public static final int OFF_MAX_INLINE = Layouts.off(LAYOUT, "max_inline");
    public static final int OFF_MAX_QP_RD_ATOM = Layouts.off(LAYOUT, "max_qp_rd_atom");
    public static final int OFF_MAX_COMP_CHANNEL = Layouts.off(LAYOUT, "max_comp_channel");
    public static final int OFF_VENDOR_ID = Layouts.off(LAYOUT, "vendor_id");
    public static final int OFF_VENDOR_PART_ID = Layouts.off(LAYOUT, "vendor_part_id");
    public static final int OFF_HW_VER = Layouts.off(LAYOUT, "hw_ver");
    public static final int OFF_LINK_UP = Layouts.off(LAYOUT, "link_up");
    public static final int OFF_SPEED_MBPS = Layouts.off(LAYOUT, "speed_mbps");
    public static final int OFF_MAX_SRQ = Layouts.off(LAYOUT, "max_srq");
    public static final int OFF_MAX_SRQ_WR = Layouts.off(LAYOUT, "max_srq_wr");
    public static final int OFF_MAX_SRQ_SGE = Layouts.off(LAYOUT, "max_srq_sge");
    public static final int OFF_MAX_QP_INIT_RD_ATOM = Layouts.off(LAYOUT, "max_qp_init_rd_atom");
    public static final int OFF_ATOMIC_CAP = Layouts.off(LAYOUT, "atomic_cap");
    public static final int OFF_MAX_AH = Layouts.off(LAYOUT, "max_ah");

    private HelloRespDescriptor() {}
}
