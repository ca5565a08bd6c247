package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct mrce_ctrl_hdr} of mrce_abi.h: the 16-byte header of every control frame.
 *
 * <pre>
 *  0 len u32 (header included) | 4 op u16 | 6 status u16 (errno, responses) | 8 seq u32 |
 * 12 nfds u16 (fds after a response) | 14 pad u16
 * </pre>
 */
public final class CtrlHdrDescriptor {
    public static final String C_NAME = "mrce_ctrl_hdr";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("len"),
                    Layouts.u16("op"),
                    Layouts.u16("status"),
                    Layouts.u32("seq"),
                    Layouts.u16("nfds"),
                    Layouts.pad("pad", 2))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_LEN = Layouts.off(LAYOUT, "len");
    public static final int OFF_OP = Layouts.off(LAYOUT, "op");
    public static final int OFF_STATUS = Layouts.off(LAYOUT, "status");
    public static final int OFF_SEQ = Layouts.off(LAYOUT, "seq");
    public static final int OFF_NFDS = Layouts.off(LAYOUT, "nfds");

    private CtrlHdrDescriptor() {}
}
