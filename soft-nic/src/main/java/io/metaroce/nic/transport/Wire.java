package io.metaroce.nic.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The MetaRoCE packet header (UDP payload), wire version 2; docs/spec/transport.md is the spec.
 * All fields are big-endian.
 *
 * <pre>
 *  0       1       2       3       4
 *  +-------+-------+-------+-------+
 *  |version|opcode | flags | path  |  0
 *  |           path psn            |  4
 *  |  rsn   (ACK: cumulative rsn)  |  8
 *  |            dst qpn            | 12
 *  |            src qpn            | 16
 *  |        connection token       | 20
 *  |   msn      (ACK: next msn)    | 24
 *  |  offset    (NAK: rnr timer)   | 28
 *  |  msg len   (ACK: reports)     | 32
 *  |  imm data  (NAK: syndrome)    | 36
 *  | reply entropy | rwnd (ACK)    | 40
 *  |            crc32c             | 44
 *  +-------------------------------+
 *  48: payload (SEND); ACK: 32-byte SACK bitmap, then 8-byte path reports
 *  48: WRITE, WRITE_IMM, READ_REQ: RETH | rkey | resp unit | va (8) | then WRITE payload
 *  48: ATOMIC_CS/FA: RETH, compare/add (8), swap (8); ATOMIC_RESP: original value (8)
 *  48: READ_RESP: payload
 * </pre>
 */
public final class Wire {
    public static final int VERSION = 2;
    public static final int HEADER_SIZE = 48;
    /** Bytes below the header on the wire: IPv4 (20) and UDP (8). */
    public static final int IP_UDP_OVERHEAD = 28;

    public static final int OP_SEND = 1;
    public static final int OP_SEND_IMM = 2;
    /** RDMA WRITE data: RETH (rkey, VA) after the header, then the payload. */
    public static final int OP_WRITE = 3;
    /** RDMA WRITE with immediate: as {@link #OP_WRITE}; consumes a receive (MSN) when whole. */
    public static final int OP_WRITE_IMM = 4;
    /** RDMA READ request (one RSN per segment): RETH, no payload. */
    public static final int OP_READ_REQ = 5;
    /** RDMA READ response: RSN of its request, byte offset in the read, payload. */
    public static final int OP_READ_RESP = 6;
    /** Atomic compare and swap request: atomic extension (RETH, compare, swap). */
    public static final int OP_ATOMIC_CS = 7;
    /** Atomic fetch and add request: atomic extension (RETH, add, 0). */
    public static final int OP_ATOMIC_FA = 8;
    /** Atomic response: RSN of its request, the original 8-byte value. */
    public static final int OP_ATOMIC_RESP = 9;

    public static final int OP_ACK = 16;
    public static final int OP_NAK = 17;
    public static final int OP_PROBE = 18;

    public static final int FLAG_SOLICITED = 1;
    public static final int FLAG_RETRANSMIT = 2;
    public static final int FLAG_GBN = 4;
    public static final int FLAG_ACK_NOW = 8;
    /**
     * A re-request (READ_REQ or atomic) sent outside the RSN stream and every path's PSN space:
     * it asks the responder to send again responses of a request it already executed.
     */
    public static final int FLAG_RESEND = 16;

    public static final int NAK_RNR = 1;
    public static final int NAK_INVALID_REQUEST = 2;
    public static final int NAK_REMOTE_OPERATIONAL = 3;
    public static final int NAK_SEQUENCE_ERROR = 4;
    /** Remote access error: bad rkey, PD, bounds or access rights (IB NAK code 2). */
    public static final int NAK_REMOTE_ACCESS = 5;

    public static final long OFF_VERSION = 0;
    public static final long OFF_OPCODE = 1;
    public static final long OFF_FLAGS = 2;
    public static final long OFF_PATH = 3;
    public static final long OFF_PSN = 4;
    public static final long OFF_RSN = 8;
    public static final long OFF_DST_QPN = 12;
    public static final long OFF_SRC_QPN = 16;
    public static final long OFF_TOKEN = 20;
    public static final long OFF_MSN = 24;
    public static final long OFF_OFFSET = 28;
    public static final long OFF_MSG_LEN = 32;
    public static final long OFF_IMM = 36;
    public static final long OFF_REPLY_ENTROPY = 40;
    public static final long OFF_RWND = 42;
    public static final long OFF_CRC = 44;

    /** RETH: rkey, response payload size (READ_REQ; 0 otherwise), virtual address. */
    public static final int RETH_SIZE = 16;

    public static final long OFF_RKEY = HEADER_SIZE;
    public static final long OFF_RESP_UNIT = HEADER_SIZE + 4;
    public static final long OFF_VA = HEADER_SIZE + 8;
    /** Atomic extension: RETH, then compare (CS) or add (FA), then swap (CS; 0 for FA). */
    public static final int ATOMIC_EXT_SIZE = RETH_SIZE + 16;

    public static final long OFF_COMPARE_ADD = HEADER_SIZE + RETH_SIZE;
    public static final long OFF_SWAP = HEADER_SIZE + RETH_SIZE + 8;
    /** ATOMIC_RESP payload: the original value at the target. */
    public static final long OFF_ORIGINAL = HEADER_SIZE;

    public static final int ATOMIC_RESP_SIZE = HEADER_SIZE + 8;
    /**
     * A responder keeps the results of at least its last this many atomics (to answer duplicates);
     * a requester never sends an atomic while one sent this many atomics earlier is unanswered.
     */
    public static final int ATOMIC_REPLAY_WINDOW = 64;

    /** ACK payload: the SACK bitmap (bit i = RSN cumulative + i), then the path reports. */
    public static final int SACK_BYTES = 32;

    public static final int REPORT_SIZE = 8;
    public static final long OFF_REPORTS = HEADER_SIZE + SACK_BYTES;

    private static final ValueLayout.OfShort BE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private Wire() {}

    public static int u8(MemorySegment f, long off) {
        return f.get(ValueLayout.JAVA_BYTE, off) & 0xff;
    }

    public static int u32(MemorySegment f, long off) {
        return f.get(BE_INT, off);
    }

    public static void putU8(MemorySegment f, long off, int v) {
        f.set(ValueLayout.JAVA_BYTE, off, (byte) v);
    }

    public static void putU32(MemorySegment f, long off, int v) {
        f.set(BE_INT, off, v);
    }

    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    public static long u64(MemorySegment f, long off) {
        return f.get(BE_LONG, off);
    }

    public static void putU64(MemorySegment f, long off, long v) {
        f.set(BE_LONG, off, v);
    }

    /** Requests the responder executes in RSN order (READ, atomics). */
    public static boolean isRequest(int opcode) {
        return opcode == OP_READ_REQ || opcode == OP_ATOMIC_CS || opcode == OP_ATOMIC_FA;
    }

    private static final ValueLayout.OfLong LE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** 64 bits of the SACK bitmap: byte k, bit j (LSB first) is bit 8k + j of the result. */
    public static long sackWord(MemorySegment f, long off) {
        return f.get(LE_LONG, off);
    }

    public static void putSackWord(MemorySegment f, long off, long v) {
        f.set(LE_LONG, off, v);
    }

    public static int u16(MemorySegment f, long off) {
        return f.get(BE_SHORT, off) & 0xffff;
    }

    public static void putU16(MemorySegment f, long off, int v) {
        f.set(BE_SHORT, off, (short) v);
    }

    /** Writes a header (CRC excluded: see {@link #seal}). */
    public static void header(
            MemorySegment f,
            int opcode,
            int flags,
            int path,
            int psn,
            int rsn,
            int dstQpn,
            int srcQpn,
            int token,
            int msn,
            int offset,
            int msgLen,
            int imm,
            int replyEntropy,
            int rwnd) {
        putU8(f, OFF_VERSION, VERSION);
        putU8(f, OFF_OPCODE, opcode);
        putU8(f, OFF_FLAGS, flags);
        putU8(f, OFF_PATH, path);
        putU32(f, OFF_PSN, psn);
        putU32(f, OFF_RSN, rsn);
        putU16(f, OFF_REPLY_ENTROPY, replyEntropy);
        putU16(f, OFF_RWND, rwnd);
        putU32(f, OFF_DST_QPN, dstQpn);
        putU32(f, OFF_SRC_QPN, srcQpn);
        putU32(f, OFF_TOKEN, token);
        putU32(f, OFF_MSN, msn);
        putU32(f, OFF_OFFSET, offset);
        putU32(f, OFF_MSG_LEN, msgLen);
        putU32(f, OFF_IMM, imm);
    }

    /**
     * CRC32C over bytes [0, 44) and [48, length): the whole packet but its own CRC field.
     * {@code view} covers the frame from offset 0; its position and limit are changed.
     */
    public static int crc(CRC32C crc, ByteBuffer view, int length) {
        crc.reset();
        view.limit((int) OFF_CRC).position(0);
        crc.update(view);
        view.limit(length).position(HEADER_SIZE);
        crc.update(view);
        return (int) crc.getValue();
    }

    /** Computes and stores the CRC of a frame of {@code length} bytes. */
    public static void seal(CRC32C crc, MemorySegment f, ByteBuffer view, int length) {
        putU32(f, OFF_CRC, crc(crc, view, length));
    }

    /** Largest SEND payload per packet for an enum-ibv_mtu path MTU on a netdev MTU. */
    public static int payloadPerPacket(int pathMtuBytes, int ifMtu) {
        return Math.min(pathMtuBytes, ifMtu - IP_UDP_OVERHEAD - HEADER_SIZE);
    }

    /** The frame (UDP payload) of an IBV_MTU_4096 RDMA WRITE packet: header, RETH, 4096 bytes. */
    public static final int IB_MAX_FRAME = HEADER_SIZE + RETH_SIZE + 4096;
    /**
     * Largest frame (UDP payload) a daemon sends or accepts: a jumbo RC data packet within two
     * 4 KiB AF_XDP chunks with Ethernet, IPv4 and UDP headers (8192 - 42 bytes).
     */
    public static final int MAX_FRAME = 8192 - 42;

    /**
     * The largest frame a daemon on a netdev of MTU {@code ifMtu} accepts and sends: what the link
     * carries, at least {@link #IB_MAX_FRAME} (as before jumbo packets), at most {@link #MAX_FRAME}.
     */
    public static int frameBytes(int ifMtu) {
        return Math.max(IB_MAX_FRAME, Math.min(MAX_FRAME, ifMtu - IP_UDP_OVERHEAD));
    }

    /**
     * Payload per RC data packet (SEND, WRITE, READ response) for an enum-ibv_mtu path MTU on a
     * netdev MTU: with a 4096-byte path MTU, as much as the link carries (a multiple of 64 bytes
     * whose packet, header and RETH included, fits {@link #frameBytes}), else the path MTU as
     * {@link #payloadPerPacket}. The receiver places each packet by its offset, so the packet
     * size need not be the path MTU (docs/spec/transport.md section 1).
     */
    public static int rcPayloadPerPacket(int pathMtuBytes, int ifMtu) {
        int ib = payloadPerPacket(pathMtuBytes, ifMtu);
        if (pathMtuBytes < 4096) {
            return ib;
        }
        int jumbo = (Math.min(MAX_FRAME, ifMtu - IP_UDP_OVERHEAD) - HEADER_SIZE - RETH_SIZE) & ~63;
        return Math.max(ib, jumbo);
    }
}
