package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/**
 * The golden packets of docs/spec/transport.md section 16 and the CRC32C definition of section 12:
 * each packet is built with {@link Wire} (as the engine builds it), compared byte for byte with
 * the hex the spec prints, and decoded back field by field. A change to the wire that breaks one
 * breaks interoperability with every implementation built from the spec.
 */
class GoldenPacketsTest {
    // The values every golden packet shares (spec section 16).
    static final int DST_QPN = 0x0a1b2c;
    static final int SRC_QPN = 0x03d4e5;
    static final int TOKEN = 0x5eed1234;
    static final int RKEY = 0x00c0ffee;
    static final int QKEY = 0x11111111;

    /** The golden packets by name, as the spec lists them (hex, no separators). */
    static final Map<String, String> GOLDEN = new LinkedHashMap<>();

    static {
        GOLDEN.put(
                "SEND",
                "0201000200000007000003e8000a1b2c0003d4e55eed12340000000500000000000000080000000012c5000012c8f21a4d657461526f4345");
        GOLDEN.put(
                "SEND_IMM",
                "0202030300000008000003e9000a1b2c0003d4e55eed1234000000060000000000000004deadbeef12c600003e23da7001020304");
        GOLDEN.put(
                "WRITE",
                "0203000200000009000003ea000a1b2c0003d4e55eed12340000000700001000000010080000000012c500002126df1900c0ffee0000000000007f00123450004d657461526f4345");
        GOLDEN.put(
                "WRITE_IMM",
                "020408020000000a000003eb000a1b2c0003d4e55eed12340000000700000000000000000000000112c500005c07757400000000000000000000000000000000");
        GOLDEN.put(
                "READ_REQ",
                "0205000400000001000003ec000a1b2c0003d4e55eed123400000008000000000000000c0000000c12c70000f21b415600c0ffee0000100000007f0012340000");
        GOLDEN.put(
                "READ_RESP",
                "0206000000000000000003ec0003d4e5000a1b2c5eed123400000000000000000000000c000000000000000009583ef9a0a1a2a3a4a5a6a7a8a9aaab");
        GOLDEN.put(
                "ATOMIC_CS",
                "0207000500000002000003ed000a1b2c0003d4e55eed12340000000800000000000000080000000012c80000027f0dae00c0ffee0000000000007f001234600000000000000000010000000000000002");
        GOLDEN.put(
                "ATOMIC_FA",
                "0208000500000003000003ee000a1b2c0003d4e55eed12340000000800000000000000080000000012c80000e298e6e500c0ffee0000000000007f001234600800000000000000100000000000000000");
        GOLDEN.put(
                "ATOMIC_RESP",
                "0209000000000000000003ed0003d4e5000a1b2c5eed123400000000000000000000000800000000000000000c956d6a0000000000000001");
        GOLDEN.put(
                "ACK",
                "0210000000000000000003e80003d4e5000a1b2c5eed12340000000500000000000000020000000000000100de703c230c0000000000000000000000000000000000000000000000000000000000000002010001000000090500000000000029");
        GOLDEN.put(
                "NAK",
                "0211000000000000000003e90003d4e5000a1b2c5eed1234000000060000000e000003e900000001000000005e52b577");
        GOLDEN.put(
                "PROBE",
                "021208060000000c00000000000a1b2c0003d4e55eed12340000000000000000000000000000000012c90000a40c0147");
        GOLDEN.put(
                "UD_SEND",
                "022000000000010000000000000a1b2c0003d4e511111111000000000000000000000006000000000040000002cf69db68656c6c6f21");
        GOLDEN.put(
                "UD_SEND_IMM",
                "022101000000010100000000000a1b2c0003d4e511111111000000000000000000000000cafef00db840000035fc1713");
        GOLDEN.put(
                "READ_REQ_RESEND",
                "0205100000000000000003ef000a1b2c0003d4e55eed1234000000080000100000010000000010000000000077f8d43a00c0ffee0000100000007f0012350000");
    }

    private static final byte[] PAYLOAD8 = "MetaRoCE".getBytes(StandardCharsets.US_ASCII);

    /** Builds the named golden packet with {@link Wire} and seals it with its CRC. */
    static byte[] build(String name) {
        int len = switch (name) {
            case "SEND" -> 48 + 8;
            case "SEND_IMM" -> 48 + 4;
            case "WRITE" -> 64 + 8;
            case "WRITE_IMM", "READ_REQ", "READ_REQ_RESEND" -> 64;
            case "READ_RESP" -> 48 + 12;
            case "ATOMIC_CS", "ATOMIC_FA" -> 80;
            case "ATOMIC_RESP" -> 56;
            case "ACK" -> 48 + 32 + 2 * 8;
            case "NAK", "PROBE" -> 48;
            case "UD_SEND" -> 48 + 6;
            case "UD_SEND_IMM" -> 48;
            default -> throw new IllegalArgumentException(name);
        };
        byte[] b = new byte[len];
        MemorySegment f = MemorySegment.ofArray(b);
        switch (name) {
            case "SEND" -> {
                // the only packet of an 8-byte SEND, MSN 5, on path 2 at PSN 7
                Wire.header(f, Wire.OP_SEND, 0, 2, 7, 1000, DST_QPN, SRC_QPN, TOKEN, 5, 0, 8, 0, 0x12c5, 0);
                MemorySegment.copy(PAYLOAD8, 0, f, ValueLayout.JAVA_BYTE, 48, 8);
            }
            case "SEND_IMM" -> {
                // a 4-byte SEND with immediate 0xdeadbeef, solicited, flagged as a retransmission
                Wire.header(
                        f,
                        Wire.OP_SEND_IMM,
                        Wire.FLAG_SOLICITED | Wire.FLAG_RETRANSMIT,
                        3,
                        8,
                        1001,
                        DST_QPN,
                        SRC_QPN,
                        TOKEN,
                        6,
                        0,
                        4,
                        0xdeadbeef,
                        0x12c6,
                        0);
                for (int i = 0; i < 4; i++) {
                    Wire.putU8(f, 48 + i, i + 1);
                }
            }
            case "WRITE" -> {
                // the last packet (8 bytes at offset 4096) of a 4104-byte WRITE
                Wire.header(f, Wire.OP_WRITE, 0, 2, 9, 1002, DST_QPN, SRC_QPN, TOKEN, 7, 4096, 4104, 0, 0x12c5, 0);
                reth(f, RKEY, 0, 0x00007f0012345000L);
                MemorySegment.copy(PAYLOAD8, 0, f, ValueLayout.JAVA_BYTE, 64, 8);
            }
            case "WRITE_IMM" -> {
                // a zero-length WRITE with immediate 1 (a doorbell): no key checked, consumes MSN 7
                Wire.header(
                        f,
                        Wire.OP_WRITE_IMM,
                        Wire.FLAG_ACK_NOW,
                        2,
                        10,
                        1003,
                        DST_QPN,
                        SRC_QPN,
                        TOKEN,
                        7,
                        0,
                        0,
                        0x00000001,
                        0x12c5,
                        0);
                reth(f, 0, 0, 0);
            }
            case "READ_REQ" -> {
                // a 12-byte READ, one segment, responses of up to 4096 bytes
                Wire.header(f, Wire.OP_READ_REQ, 0, 4, 1, 1004, DST_QPN, SRC_QPN, TOKEN, 8, 0, 12, 12, 0x12c7, 0);
                reth(f, RKEY, 4096, 0x00007f0012340000L);
            }
            case "READ_RESP" -> {
                // its only response: 12 bytes at offset 0; outside every PSN space
                Wire.header(f, Wire.OP_READ_RESP, 0, 0, 0, 1004, SRC_QPN, DST_QPN, TOKEN, 0, 0, 12, 0, 0, 0);
                for (int i = 0; i < 12; i++) {
                    Wire.putU8(f, 48 + i, 0xa0 + i);
                }
            }
            case "ATOMIC_CS" -> {
                Wire.header(f, Wire.OP_ATOMIC_CS, 0, 5, 2, 1005, DST_QPN, SRC_QPN, TOKEN, 8, 0, 8, 0, 0x12c8, 0);
                reth(f, RKEY, 0, 0x00007f0012346000L);
                Wire.putU64(f, Wire.OFF_COMPARE_ADD, 1);
                Wire.putU64(f, Wire.OFF_SWAP, 2);
            }
            case "ATOMIC_FA" -> {
                Wire.header(f, Wire.OP_ATOMIC_FA, 0, 5, 3, 1006, DST_QPN, SRC_QPN, TOKEN, 8, 0, 8, 0, 0x12c8, 0);
                reth(f, RKEY, 0, 0x00007f0012346008L);
                Wire.putU64(f, Wire.OFF_COMPARE_ADD, 0x10);
                Wire.putU64(f, Wire.OFF_SWAP, 0);
            }
            case "ATOMIC_RESP" -> {
                // the compare-and-swap's original value, 1 (it swapped)
                Wire.header(f, Wire.OP_ATOMIC_RESP, 0, 0, 0, 1005, SRC_QPN, DST_QPN, TOKEN, 0, 0, 8, 0, 0, 0);
                Wire.putU64(f, Wire.OFF_ORIGINAL, 1);
            }
            case "ACK" -> {
                // cumulative RSN 1000, RSNs 1002 and 1003 placed above it (SACK bits 2, 3), next MSN 5,
                // window 256; path 2 reports PSN 9 with one CE mark and one gap loss, path 5 PSN 41
                Wire.header(f, Wire.OP_ACK, 0, 0, 0, 1000, SRC_QPN, DST_QPN, TOKEN, 5, 0, 2, 0, 0, 256);
                Wire.putSackWord(f, 48, 0b1100L);
                Wire.putU8(f, 80, 2);
                Wire.putU8(f, 81, 1);
                Wire.putU16(f, 82, 1);
                Wire.putU32(f, 84, 9);
                Wire.putU8(f, 88, 5);
                Wire.putU8(f, 89, 0);
                Wire.putU16(f, 90, 0);
                Wire.putU32(f, 92, 41);
            }
            case "NAK" -> {
                // RNR for RSN 1001 (nothing posted for MSN 6), min_rnr_timer code 14 (1.92 ms),
                // cumulative RSN 1001
                Wire.header(f, Wire.OP_NAK, 0, 0, 0, 1001, SRC_QPN, DST_QPN, TOKEN, 6, 14, 1001, Wire.NAK_RNR, 0, 0);
            }
            case "PROBE" ->
                Wire.header(
                        f, Wire.OP_PROBE, Wire.FLAG_ACK_NOW, 6, 12, 0, DST_QPN, SRC_QPN, TOKEN, 0, 0, 0, 0, 0x12c9, 0);
            case "UD_SEND" -> {
                // 6 bytes to Q_Key 0x11111111, traffic class 0, hop limit 64, UD send counter 0x100
                Wire.header(f, UdWire.OP_UD_SEND, 0, 0, 0x100, 0, DST_QPN, SRC_QPN, QKEY, 0, 0, 6, 0, 0x0040, 0);
                byte[] hello = "hello!".getBytes(StandardCharsets.US_ASCII);
                MemorySegment.copy(hello, 0, f, ValueLayout.JAVA_BYTE, 48, 6);
            }
            case "UD_SEND_IMM" ->
                Wire.header(
                        f,
                        UdWire.OP_UD_SEND_IMM,
                        Wire.FLAG_SOLICITED,
                        0,
                        0x101,
                        0,
                        DST_QPN,
                        SRC_QPN,
                        QKEY,
                        0,
                        0,
                        0,
                        0xcafef00d,
                        0xb840,
                        0);
            case "READ_REQ_RESEND" -> {
                // a re-request of bytes [4096, 8192) of a 65536-byte READ whose request RSN 1007 was
                // acknowledged: no path, no PSN
                Wire.header(
                        f,
                        Wire.OP_READ_REQ,
                        Wire.FLAG_RESEND,
                        0,
                        0,
                        1007,
                        DST_QPN,
                        SRC_QPN,
                        TOKEN,
                        8,
                        4096,
                        65536,
                        4096,
                        0,
                        0);
                reth(f, RKEY, 4096, 0x00007f0012350000L);
            }
            default -> throw new IllegalArgumentException(name);
        }
        Wire.seal(new CRC32C(), f, ByteBuffer.wrap(b), len);
        return b;
    }

    private static void reth(MemorySegment f, int rkey, int unit, long va) {
        Wire.putU32(f, Wire.OFF_RKEY, rkey);
        Wire.putU32(f, Wire.OFF_RESP_UNIT, unit);
        Wire.putU64(f, Wire.OFF_VA, va);
    }

    private static byte[] golden(String name) {
        return HexFormat.of().parseHex(GOLDEN.get(name));
    }

    @Test
    void everyGoldenPacketIsWhatWireBuilds() {
        for (Map.Entry<String, String> g : GOLDEN.entrySet()) {
            assertThat(HexFormat.of().formatHex(build(g.getKey())))
                    .as(g.getKey())
                    .isEqualTo(g.getValue());
        }
    }

    /**
     * The hex blocks of docs/spec/transport.md section 16, in order: the spec prints exactly these
     * packets (a block is the lines "OFFSET  hex hex hex hex" between code fences).
     */
    @Test
    void theSpecPrintsTheseGoldenPackets() throws IOException {
        String spec = Files.readString(Path.of("..", "docs", "spec", "transport.md"));
        String section = spec.substring(spec.indexOf("## 16. Golden packets"), spec.indexOf("## 17."));
        List<String> blocks = new ArrayList<>();
        StringBuilder hex = null;
        for (String line : section.split("\n")) {
            if (line.equals("```")) {
                if (hex != null) {
                    blocks.add(hex.toString());
                    hex = null;
                } else {
                    hex = new StringBuilder();
                }
            } else if (hex != null) {
                String[] words = line.trim().split("\\s+");
                for (int i = 1; i < words.length; i++) {
                    hex.append(words[i]);
                }
            }
        }
        assertThat(blocks).containsExactlyElementsOf(GOLDEN.values());
    }

    @Test
    void everyOpcodeOfTheSpecHasAGoldenPacket() {
        Set<Integer> opcodes = new TreeSet<>();
        for (String name : GOLDEN.keySet()) {
            opcodes.add(golden(name)[1] & 0xff);
        }
        assertThat(opcodes)
                .containsExactly(
                        Wire.OP_SEND,
                        Wire.OP_SEND_IMM,
                        Wire.OP_WRITE,
                        Wire.OP_WRITE_IMM,
                        Wire.OP_READ_REQ,
                        Wire.OP_READ_RESP,
                        Wire.OP_ATOMIC_CS,
                        Wire.OP_ATOMIC_FA,
                        Wire.OP_ATOMIC_RESP,
                        Wire.OP_ACK,
                        Wire.OP_NAK,
                        Wire.OP_PROBE,
                        UdWire.OP_UD_SEND,
                        UdWire.OP_UD_SEND_IMM);
    }

    @Test
    void goldenPacketsDecodeBackWithWire() {
        for (String name : GOLDEN.keySet()) {
            byte[] b = golden(name);
            MemorySegment f = MemorySegment.ofArray(b);
            assertThat(Wire.u8(f, Wire.OFF_VERSION)).as(name).isEqualTo(Wire.VERSION);
            // the stored CRC is the CRC32C of the packet without its CRC field
            assertThat(Wire.u32(f, Wire.OFF_CRC))
                    .as(name)
                    .isEqualTo(Wire.crc(new CRC32C(), ByteBuffer.wrap(b), b.length))
                    .isEqualTo(referenceCrc32c(b, true));
            int op = Wire.u8(f, Wire.OFF_OPCODE);
            boolean toRequester =
                    op == Wire.OP_ACK || op == Wire.OP_NAK || op == Wire.OP_READ_RESP || op == Wire.OP_ATOMIC_RESP;
            assertThat(Wire.u32(f, Wire.OFF_DST_QPN)).as(name).isEqualTo(toRequester ? SRC_QPN : DST_QPN);
            assertThat(Wire.u32(f, Wire.OFF_SRC_QPN)).as(name).isEqualTo(toRequester ? DST_QPN : SRC_QPN);
            assertThat(Wire.u32(f, Wire.OFF_TOKEN)).as(name).isEqualTo(name.startsWith("UD") ? QKEY : TOKEN);
        }
        MemorySegment write = MemorySegment.ofArray(golden("WRITE"));
        assertThat(Wire.u8(write, Wire.OFF_OPCODE)).isEqualTo(Wire.OP_WRITE);
        assertThat(Wire.u8(write, Wire.OFF_PATH)).isEqualTo(2);
        assertThat(Wire.u32(write, Wire.OFF_PSN)).isEqualTo(9);
        assertThat(Wire.u32(write, Wire.OFF_RSN)).isEqualTo(1002);
        assertThat(Wire.u32(write, Wire.OFF_OFFSET)).isEqualTo(4096);
        assertThat(Wire.u32(write, Wire.OFF_MSG_LEN)).isEqualTo(4104);
        assertThat(Wire.u16(write, Wire.OFF_REPLY_ENTROPY)).isEqualTo(0x12c5);
        assertThat(Wire.u32(write, Wire.OFF_RKEY)).isEqualTo(RKEY);
        assertThat(Wire.u64(write, Wire.OFF_VA)).isEqualTo(0x00007f0012345000L);
        assertThat(write.asSlice(64).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(PAYLOAD8);

        MemorySegment read = MemorySegment.ofArray(golden("READ_REQ"));
        assertThat(Wire.u32(read, Wire.OFF_IMM)).isEqualTo(12);
        assertThat(Wire.u32(read, Wire.OFF_RESP_UNIT)).isEqualTo(4096);
        assertThat(Wire.isRequest(Wire.u8(read, Wire.OFF_OPCODE))).isTrue();

        MemorySegment cs = MemorySegment.ofArray(golden("ATOMIC_CS"));
        assertThat(Wire.u64(cs, Wire.OFF_COMPARE_ADD)).isEqualTo(1);
        assertThat(Wire.u64(cs, Wire.OFF_SWAP)).isEqualTo(2);

        MemorySegment ack = MemorySegment.ofArray(golden("ACK"));
        assertThat(Wire.u32(ack, Wire.OFF_RSN)).isEqualTo(1000);
        assertThat(Wire.u32(ack, Wire.OFF_MSN)).isEqualTo(5);
        assertThat(Wire.u32(ack, Wire.OFF_MSG_LEN)).isEqualTo(2);
        assertThat(Wire.u16(ack, Wire.OFF_RWND)).isEqualTo(256);
        assertThat(Wire.sackWord(ack, Wire.HEADER_SIZE)).isEqualTo(0b1100L);
        assertThat(Wire.u8(ack, Wire.OFF_REPORTS)).isEqualTo(2);
        assertThat(Wire.u8(ack, Wire.OFF_REPORTS + 1)).isEqualTo(1);
        assertThat(Wire.u16(ack, Wire.OFF_REPORTS + 2)).isEqualTo(1);
        assertThat(Wire.u32(ack, Wire.OFF_REPORTS + 4)).isEqualTo(9);
        assertThat(Wire.u8(ack, Wire.OFF_REPORTS + Wire.REPORT_SIZE)).isEqualTo(5);
        assertThat(Wire.u32(ack, Wire.OFF_REPORTS + Wire.REPORT_SIZE + 4)).isEqualTo(41);

        MemorySegment nak = MemorySegment.ofArray(golden("NAK"));
        assertThat(Wire.u32(nak, Wire.OFF_IMM)).isEqualTo(Wire.NAK_RNR);
        assertThat(Wire.u32(nak, Wire.OFF_OFFSET)).isEqualTo(14);
        assertThat(Wire.u32(nak, Wire.OFF_MSG_LEN)).isEqualTo(1001);

        MemorySegment ud = MemorySegment.ofArray(golden("UD_SEND_IMM"));
        assertThat(Wire.u32(ud, Wire.OFF_IMM)).isEqualTo(0xcafef00d);
        assertThat(Wire.u16(ud, Wire.OFF_REPLY_ENTROPY) >>> 8)
                .as("traffic class")
                .isEqualTo(0xb8);
        assertThat(Wire.u16(ud, Wire.OFF_REPLY_ENTROPY) & 0xff).as("hop limit").isEqualTo(0x40);

        MemorySegment resend = MemorySegment.ofArray(golden("READ_REQ_RESEND"));
        assertThat(Wire.u8(resend, Wire.OFF_FLAGS)).isEqualTo(Wire.FLAG_RESEND);
        assertThat(Wire.u32(resend, Wire.OFF_PSN)).isZero();
    }

    /** The check value and the iSCSI vectors of section 12 (RFC 3720 B.4), by the JDK and by the reference. */
    @Test
    void crc32cTestVectors() {
        byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
        byte[] zeros = new byte[32];
        byte[] ones = new byte[32];
        Arrays.fill(ones, (byte) 0xff);
        byte[] ascending = new byte[32];
        for (int i = 0; i < 32; i++) {
            ascending[i] = (byte) i;
        }
        assertThat(jdkCrc32c(check)).isEqualTo(0xe3069283);
        assertThat(jdkCrc32c(zeros)).isEqualTo(0x8a9136aa);
        assertThat(jdkCrc32c(ones)).isEqualTo(0x62a8ab43);
        assertThat(jdkCrc32c(ascending)).isEqualTo(0x46dd794e);
        for (byte[] v : new byte[][] {check, zeros, ones, ascending, new byte[0], PAYLOAD8}) {
            assertThat(referenceCrc32c(v, false)).isEqualTo(jdkCrc32c(v));
        }
    }

    private static int jdkCrc32c(byte[] b) {
        CRC32C c = new CRC32C();
        c.update(b);
        return (int) c.getValue();
    }

    /**
     * CRC-32C exactly as section 12 defines it, bit by bit: polynomial 0x1EDC6F41 (0x82F63B78
     * reflected), initial value 0xFFFFFFFF, input and output reflected, final XOR 0xFFFFFFFF; for a
     * packet, over bytes [0, 44) and [48, end).
     */
    static int referenceCrc32c(byte[] b, boolean packet) {
        int crc = 0xffffffff;
        for (int i = 0; i < b.length; i++) {
            if (packet && i >= 44 && i < 48) {
                continue;
            }
            crc ^= b[i] & 0xff;
            for (int k = 0; k < 8; k++) {
                crc = (crc & 1) != 0 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
            }
        }
        return ~crc;
    }
}
