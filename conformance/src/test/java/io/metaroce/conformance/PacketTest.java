package io.metaroce.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.transport.Wire;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** The suite's own codec against the spec's CRC definition and the reference daemon's Wire. */
class PacketTest {

    @Test
    void crc32cIsCastagnoliWithTheStandardCheckValue() {
        CRC32C c = new CRC32C();
        c.update("123456789".getBytes(StandardCharsets.US_ASCII));
        assertThat((int) c.getValue()).isEqualTo(0xe3069283);
    }

    @Test
    void everyHeaderAndRethFieldSitsWhereWireReadsIt() {
        Packet p = new Packet();
        p.opcode = Packet.OP_ATOMIC_CS;
        p.flags = Packet.FLAG_ACK_NOW | Packet.FLAG_RETRANSMIT;
        p.pathId = 7;
        p.psn = 0x01020304;
        p.rsn = 0xfffffffe;
        p.dstQpn = 0xabcdef;
        p.srcQpn = 0x123456;
        p.token = 0xdeadbeef;
        p.msn = 9;
        p.offset = 0;
        p.msgLen = 8;
        p.imm = 0x55aa;
        p.replyEntropy = 0xfedc;
        p.rwnd = 0;
        p.rkey = 0x11223344;
        p.unit = 0;
        p.va = 0x7f00_0000_1000L;
        p.compareAdd = 100;
        p.swap = 200;
        byte[] b = p.encode();
        MemorySegment f = MemorySegment.ofArray(b);
        assertThat(b).hasSize(Wire.HEADER_SIZE + Wire.ATOMIC_EXT_SIZE);
        assertThat(Wire.u8(f, Wire.OFF_VERSION)).isEqualTo(Wire.VERSION);
        assertThat(Wire.u8(f, Wire.OFF_OPCODE)).isEqualTo(Wire.OP_ATOMIC_CS);
        assertThat(Wire.u8(f, Wire.OFF_FLAGS)).isEqualTo(Wire.FLAG_ACK_NOW | Wire.FLAG_RETRANSMIT);
        assertThat(Wire.u8(f, Wire.OFF_PATH)).isEqualTo(7);
        assertThat(Wire.u32(f, Wire.OFF_PSN)).isEqualTo(0x01020304);
        assertThat(Wire.u32(f, Wire.OFF_RSN)).isEqualTo(0xfffffffe);
        assertThat(Wire.u32(f, Wire.OFF_DST_QPN)).isEqualTo(0xabcdef);
        assertThat(Wire.u32(f, Wire.OFF_SRC_QPN)).isEqualTo(0x123456);
        assertThat(Wire.u32(f, Wire.OFF_TOKEN)).isEqualTo(0xdeadbeef);
        assertThat(Wire.u32(f, Wire.OFF_MSN)).isEqualTo(9);
        assertThat(Wire.u32(f, Wire.OFF_MSG_LEN)).isEqualTo(8);
        assertThat(Wire.u32(f, Wire.OFF_IMM)).isEqualTo(0x55aa);
        assertThat(Wire.u16(f, Wire.OFF_REPLY_ENTROPY)).isEqualTo(0xfedc);
        assertThat(Wire.u32(f, Wire.OFF_RKEY)).isEqualTo(0x11223344);
        assertThat(Wire.u64(f, Wire.OFF_VA)).isEqualTo(0x7f00_0000_1000L);
        assertThat(Wire.u64(f, Wire.OFF_COMPARE_ADD)).isEqualTo(100);
        assertThat(Wire.u64(f, Wire.OFF_SWAP)).isEqualTo(200);
        assertThat(Wire.crc(new CRC32C(), ByteBuffer.wrap(b), b.length)).isEqualTo(Wire.u32(f, Wire.OFF_CRC));

        Packet back = Packet.decode(b, b.length);
        assertThat(back.badCrc).isFalse();
        assertThat(back.toString()).isEqualTo(p.toString());
        p.badCrc = true;
        byte[] bad = p.encode();
        assertThat(Packet.decode(bad, bad.length).badCrc).isTrue();
    }

    @Test
    void ackPayloadBitsAndReportsAreLsbFirstAndBigEndian() {
        byte[] pl = Packet.ackPayload(new int[] {1, 8, 255}, new int[][] {{3, 1, 2, 0x01020304}});
        assertThat(pl).hasSize(Wire.SACK_BYTES + Wire.REPORT_SIZE);
        assertThat(pl[0]).isEqualTo((byte) 0x02);
        assertThat(pl[1]).isEqualTo((byte) 0x01);
        assertThat(pl[31]).isEqualTo((byte) 0x80);
        Packet ack = new Packet();
        ack.opcode = Packet.OP_ACK;
        ack.payload = pl;
        byte[] b = ack.encode();
        MemorySegment f = MemorySegment.ofArray(b);
        assertThat(Wire.u8(f, Wire.OFF_REPORTS)).isEqualTo(3);
        assertThat(Wire.u16(f, Wire.OFF_REPORTS + 2)).isEqualTo(2);
        assertThat(Wire.u32(f, Wire.OFF_REPORTS + 4)).isEqualTo(0x01020304);
        Packet back = Packet.decode(b, b.length);
        assertThat(back.sack(1)).isTrue();
        assertThat(back.sack(2)).isFalse();
        assertThat(back.reportOf(3)).containsExactly(3, 1, 2, 0x01020304);
    }
}
