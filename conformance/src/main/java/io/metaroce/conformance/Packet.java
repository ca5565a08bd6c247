package io.metaroce.conformance;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.zip.CRC32C;

/**
 * One MetaRoCE packet (the UDP payload), encoded and decoded from docs/spec/transport.md §2, §2a
 * and §6 alone: this suite's own codec, independent of the reference daemon's {@code Wire} (a
 * unit test checks the two agree on every field).
 *
 * <pre>
 *  0 version | opcode | flags | path id      4 path PSN        8 RSN
 * 12 destination QPN  16 source QPN          20 connection token
 * 24 MSN              28 byte offset         32 message length  36 immediate
 * 40 reply entropy u16 | receive window u16  44 CRC32C          48 RETH / payload
 * </pre>
 */
public final class Packet {
    public static final int VERSION = 2;
    public static final int HEADER = 48;
    public static final int RETH = 16;
    public static final int ATOMIC_EXT = 32;
    public static final int SACK_BYTES = 32;
    public static final int REPORT_BYTES = 8;

    public static final int OP_SEND = 1,
            OP_SEND_IMM = 2,
            OP_WRITE = 3,
            OP_WRITE_IMM = 4,
            OP_READ_REQ = 5,
            OP_READ_RESP = 6,
            OP_ATOMIC_CS = 7,
            OP_ATOMIC_FA = 8,
            OP_ATOMIC_RESP = 9,
            OP_ACK = 16,
            OP_NAK = 17,
            OP_PROBE = 18,
            OP_UD_SEND = 32,
            OP_UD_SEND_IMM = 33;
    public static final int FLAG_SOLICITED = 1, FLAG_RETRANSMIT = 2, FLAG_GBN = 4, FLAG_ACK_NOW = 8, FLAG_RESEND = 16;
    public static final int NAK_RNR = 1,
            NAK_INVALID_REQUEST = 2,
            NAK_REMOTE_OPERATIONAL = 3,
            NAK_SEQUENCE_ERROR = 4,
            NAK_REMOTE_ACCESS = 5;

    public int version = VERSION;
    public int opcode;
    public int flags;
    public int pathId;
    public int psn;
    public int rsn;
    public int dstQpn;
    public int srcQpn;
    public int token;
    public int msn;
    public int offset;
    public int msgLen;
    public int imm;
    public int replyEntropy;
    public int rwnd;
    /** The CRC as carried (decode) or to be forced (encode, with {@link #badCrc}). */
    public int crc;
    /** Encode: store {@code crc ^ 1} instead of the right CRC. */
    public boolean badCrc;
    // RETH (WRITE, WRITE_IMM, READ_REQ, atomics)
    public int rkey;
    public int unit;
    public long va;
    // atomics
    public long compareAdd;
    public long swap;
    /** SEND, WRITE, READ_RESP, UD payload; ATOMIC_RESP: the 8-byte original value; ACK: SACK + reports. */
    public byte[] payload = new byte[0];

    public static boolean hasReth(int op) {
        return op == OP_WRITE || op == OP_WRITE_IMM || op == OP_READ_REQ || op == OP_ATOMIC_CS || op == OP_ATOMIC_FA;
    }

    public static boolean isAtomic(int op) {
        return op == OP_ATOMIC_CS || op == OP_ATOMIC_FA;
    }

    /** CRC-32C (Castagnoli, reflected, init and final XOR 0xffffffff) of bytes [0, 44) and [48, len). */
    public static int crc(byte[] b, int len) {
        CRC32C c = new CRC32C();
        c.update(b, 0, 44);
        c.update(b, HEADER, len - HEADER);
        return (int) c.getValue();
    }

    public byte[] encode() {
        int ext = hasReth(opcode) ? (isAtomic(opcode) ? ATOMIC_EXT : RETH) : 0;
        ByteBuffer b = ByteBuffer.allocate(HEADER + ext + payload.length);
        b.put((byte) version).put((byte) opcode).put((byte) flags).put((byte) pathId);
        b.putInt(psn)
                .putInt(rsn)
                .putInt(dstQpn)
                .putInt(srcQpn)
                .putInt(token)
                .putInt(msn)
                .putInt(offset)
                .putInt(msgLen)
                .putInt(imm)
                .putShort((short) replyEntropy)
                .putShort((short) rwnd)
                .putInt(0);
        if (ext > 0) {
            b.putInt(rkey).putInt(unit).putLong(va);
            if (ext == ATOMIC_EXT) {
                b.putLong(compareAdd).putLong(swap);
            }
        }
        b.put(payload);
        byte[] out = b.array();
        int c = crc(out, out.length);
        ByteBuffer.wrap(out).putInt(44, badCrc ? c ^ 1 : c);
        return out;
    }

    /** Decodes a datagram; null when shorter than the header. */
    public static Packet decode(byte[] d, int len) {
        if (len < HEADER) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(d, 0, len);
        Packet p = new Packet();
        p.version = b.get(0) & 0xff;
        p.opcode = b.get(1) & 0xff;
        p.flags = b.get(2) & 0xff;
        p.pathId = b.get(3) & 0xff;
        p.psn = b.getInt(4);
        p.rsn = b.getInt(8);
        p.dstQpn = b.getInt(12);
        p.srcQpn = b.getInt(16);
        p.token = b.getInt(20);
        p.msn = b.getInt(24);
        p.offset = b.getInt(28);
        p.msgLen = b.getInt(32);
        p.imm = b.getInt(36);
        p.replyEntropy = b.getShort(40) & 0xffff;
        p.rwnd = b.getShort(42) & 0xffff;
        p.crc = b.getInt(44);
        p.badCrc = p.crc != crc(d, len);
        int at = HEADER;
        if (hasReth(p.opcode) && len >= HEADER + RETH) {
            p.rkey = b.getInt(48);
            p.unit = b.getInt(52);
            p.va = b.getLong(56);
            at += RETH;
            if (isAtomic(p.opcode) && len >= HEADER + ATOMIC_EXT) {
                p.compareAdd = b.getLong(64);
                p.swap = b.getLong(72);
                at += 16;
            }
        }
        p.payload = Arrays.copyOfRange(d, at, len);
        return p;
    }

    // ---- ACK payload (§6) ----

    /** ACK: SACK bit i (RSN c + i placed). */
    public boolean sack(int i) {
        return payload.length >= SACK_BYTES && (payload[i >>> 3] & (1 << (i & 7))) != 0;
    }

    /** ACK: the number of path reports the payload holds. */
    public int reportCount() {
        return Math.max(0, (payload.length - SACK_BYTES) / REPORT_BYTES);
    }

    /** ACK: path report k as {path id, CE count, gap losses, highest PSN}. */
    public int[] report(int k) {
        ByteBuffer b = ByteBuffer.wrap(payload);
        int o = SACK_BYTES + REPORT_BYTES * k;
        return new int[] {b.get(o) & 0xff, b.get(o + 1) & 0xff, b.getShort(o + 2) & 0xffff, b.getInt(o + 4)};
    }

    /** ACK: the report of path {@code path}, or null. */
    public int[] reportOf(int path) {
        for (int k = 0; k < reportCount(); k++) {
            int[] r = report(k);
            if (r[0] == path) {
                return r;
            }
        }
        return null;
    }

    /** Builds an ACK payload: SACK bits and reports {path, ce, gap, highest PSN}. */
    public static byte[] ackPayload(int[] sackBits, int[][] reports) {
        ByteBuffer b = ByteBuffer.allocate(SACK_BYTES + REPORT_BYTES * reports.length);
        byte[] a = b.array();
        for (int i : sackBits) {
            a[i >>> 3] |= (byte) (1 << (i & 7));
        }
        b.position(SACK_BYTES);
        for (int[] r : reports) {
            b.put((byte) r[0]).put((byte) r[1]).putShort((short) r[2]).putInt(r[3]);
        }
        return a;
    }

    public static String opName(int op) {
        return switch (op) {
            case OP_SEND -> "SEND";
            case OP_SEND_IMM -> "SEND_IMM";
            case OP_WRITE -> "WRITE";
            case OP_WRITE_IMM -> "WRITE_IMM";
            case OP_READ_REQ -> "READ_REQ";
            case OP_READ_RESP -> "READ_RESP";
            case OP_ATOMIC_CS -> "ATOMIC_CS";
            case OP_ATOMIC_FA -> "ATOMIC_FA";
            case OP_ATOMIC_RESP -> "ATOMIC_RESP";
            case OP_ACK -> "ACK";
            case OP_NAK -> "NAK";
            case OP_PROBE -> "PROBE";
            case OP_UD_SEND -> "UD_SEND";
            case OP_UD_SEND_IMM -> "UD_SEND_IMM";
            default -> "op" + op;
        };
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder(opName(opcode));
        s.append(" v")
                .append(version)
                .append(" flags=")
                .append(flags)
                .append(" path=")
                .append(pathId)
                .append(" psn=")
                .append(psn)
                .append(" rsn=")
                .append(Integer.toUnsignedString(rsn))
                .append(" dst=")
                .append(dstQpn)
                .append(" src=")
                .append(srcQpn)
                .append(" token=")
                .append(Integer.toHexString(token))
                .append(" msn=")
                .append(msn)
                .append(" off=")
                .append(offset)
                .append(" len=")
                .append(msgLen)
                .append(" imm=")
                .append(imm);
        if (opcode == OP_ACK) {
            s.append(" rwnd=").append(rwnd).append(" sack=");
            for (int i = 0; i < 256; i++) {
                if (sack(i)) {
                    s.append(i).append(',');
                }
            }
            for (int k = 0; k < reportCount(); k++) {
                s.append(" report").append(Arrays.toString(report(k)));
            }
        } else if (payload.length > 0) {
            s.append(" payload=").append(payload.length).append('B');
            if (payload.length <= 16) {
                s.append(' ').append(HexFormat.of().formatHex(payload));
            }
        }
        if (badCrc) {
            s.append(" BAD-CRC");
        }
        return s.toString();
    }
}
