package io.metaroce.nic.transport;

import io.metaroce.abi.IpAddr;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The UD packets of the MetaRoCE header (docs/spec/transport.md, section "UD"): the 48-byte
 * header of {@link Wire} with its RC-only fields put to UD use. One message is one packet.
 *
 * <pre>
 *  opcode        UD_SEND (32) or UD_SEND_IMM (33)
 *  flags         SOLICITED as for RC; no other flag
 *  path, rsn     0
 *  path psn      the sender's UD send counter (from sq_psn; informational, never checked)
 *  dst/src qpn   destination and source QP numbers
 *  token         the Q_Key (checked against the receiving QP's qkey)
 *  msn, offset   0
 *  msg len       payload bytes (must equal the UDP payload minus the header)
 *  imm           immediate data (UD_SEND_IMM)
 *  reply entropy traffic class (high byte) and hop limit (low byte) of the sender's AH
 *  rwnd          0
 * </pre>
 *
 * The receiver writes a 40-byte GRH ({@link #putGrh}) in front of the payload.
 */
public final class UdWire {
    public static final int OP_UD_SEND = 32;
    public static final int OP_UD_SEND_IMM = 33;
    /** Bytes of the GRH at the start of every UD receive buffer. */
    public static final int GRH_SIZE = 40;
    /** GRH next header: the IBA transport (0x1b). */
    public static final int GRH_NEXT_HEADER = 0x1b;
    /** A WQE's remote Q_Key with this bit set means "the sending QP's own qkey" (IB spec 10.2.5). */
    public static final int QKEY_USE_QP = 0x80000000;

    private UdWire() {}

    public static boolean isUd(int opcode) {
        return opcode == OP_UD_SEND || opcode == OP_UD_SEND_IMM;
    }

    /**
     * Writes a GRH at {@code off} of {@code g}: IPv6-style version 6, traffic class, flow label 0,
     * payload length, next header 0x1b, hop limit, sgid and dgid the GIDs of {@code srcIp} and
     * {@code dstIp} ({@link IpAddr}: ::ffff:a.b.c.d for IPv4, the address itself for IPv6).
     */
    public static void putGrh(
            MemorySegment g, long off, int trafficClass, int payloadLen, int hopLimit, int srcIp, int dstIp) {
        g.set(ValueLayout.JAVA_BYTE, off, (byte) (0x60 | ((trafficClass >>> 4) & 0xf)));
        g.set(ValueLayout.JAVA_BYTE, off + 1, (byte) ((trafficClass & 0xf) << 4));
        g.set(ValueLayout.JAVA_BYTE, off + 2, (byte) 0);
        g.set(ValueLayout.JAVA_BYTE, off + 3, (byte) 0);
        Wire.putU16(g, off + 4, payloadLen);
        g.set(ValueLayout.JAVA_BYTE, off + 6, (byte) GRH_NEXT_HEADER);
        g.set(ValueLayout.JAVA_BYTE, off + 7, (byte) hopLimit);
        mappedGid(g, off + 8, srcIp);
        mappedGid(g, off + 24, dstIp);
    }

    private static final ValueLayout.OfLong BE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private static void mappedGid(MemorySegment g, long off, int ip) {
        if (IpAddr.isV6(ip)) {
            g.set(BE_LONG, off, IpAddr.hi(ip));
            g.set(BE_LONG, off + 8, IpAddr.lo(ip));
            return;
        }
        g.set(ValueLayout.JAVA_LONG_UNALIGNED, off, 0L);
        g.set(ValueLayout.JAVA_SHORT_UNALIGNED, off + 8, (short) 0);
        g.set(ValueLayout.JAVA_SHORT_UNALIGNED, off + 10, (short) -1);
        Wire.putU32(g, off + 12, ip);
    }
}
