package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class CmCodecTest {
    static final CmMessage.Endpoint EP =
            new CmMessage.Endpoint(0x12, 0x34, 4096, 256, 0xabcdef01, 0x5eed, new int[] {4794, 4795, 65535});

    static final byte[] GID = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, (byte) 198, 18, 0, 1};
    static final byte[] PD_MAX = new byte[CmMessage.SVC_PRIVATE_DATA_MAX];

    static {
        for (int i = 0; i < PD_MAX.length; i++) {
            PD_MAX[i] = (byte) (i * 37 + 1);
        }
    }

    static final List<CmMessage> ALL = List.of(
            new CmMessage.Hello(CmCodec.VERSION, 0, 0x1122334455667788L, 4793, 500, 0xc6120001),
            new CmMessage.Connect(7, EP),
            new CmMessage.Accept(7, EP),
            new CmMessage.Accept(7, new CmMessage.Endpoint(0x12, 0x34, 4096, 256, 1, 2, new int[] {1}, 9000)),
            new CmMessage.Reject(7, 0x34, 0x12, CmMessage.REASON_NO_QP),
            new CmMessage.Disconnect(0x12, 0x34, CmMessage.REASON_DESTROYED, 0x5eed),
            new CmMessage.Disconnect(
                    0x12, 0x34, CmMessage.REASON_DESTROYED, 0x5eed, CmMessage.Disconnect.FLAG_PLACED, 0xfffffff0),
            new CmMessage.Ping(99),
            new CmMessage.Pong(99),
            new CmMessage.SvcRequest(
                    8, 18515, 0x12, 0xabcdef, GID, "hello, service".getBytes(StandardCharsets.US_ASCII)),
            new CmMessage.SvcRequest(9, 0xffffffff, 0xffffff, 0, GID, new byte[0]),
            new CmMessage.SvcReply(8, 0x34, 0x123456, GID, PD_MAX),
            new CmMessage.SvcReject(8, CmMessage.SVC_REJECTED, "go away".getBytes(StandardCharsets.US_ASCII)),
            new CmMessage.SvcReject(9, CmMessage.SVC_NO_LISTENER, new byte[0]),
            new CmMessage.SvcReady(8),
            new CmMessage.SvcCancel(8, CmMessage.SVC_TIMEOUT),
            new CmMessage.AuthChallenge(java.util.Arrays.copyOf(GID, CmMessage.AuthChallenge.NONCE_BYTES)),
            new CmMessage.AuthProof(java.util.Arrays.copyOf(PD_MAX, CmMessage.AuthProof.MAC_BYTES)));

    @Test
    void everyMessageRoundTripsThroughTheChannelCodec() {
        EmbeddedChannel out = new EmbeddedChannel(CmCodec.Encoder.INSTANCE);
        EmbeddedChannel in = new EmbeddedChannel(new CmCodec.Decoder());
        for (CmMessage m : ALL) {
            assertThat(out.writeOutbound(m)).isTrue();
        }
        ByteBuf all = Unpooled.buffer();
        ByteBuf b;
        while ((b = out.readOutbound()) != null) {
            all.writeBytes(b);
            b.release();
        }
        // byte by byte: the decoder waits for whole frames
        while (all.isReadable()) {
            in.writeInbound(all.readRetainedSlice(1));
        }
        all.release();
        for (CmMessage m : ALL) {
            assertThat((Object) in.readInbound()).isEqualTo(m);
        }
        assertThat((Object) in.readInbound()).isNull();
    }

    @Test
    void helloLayoutIsAsSpecified() {
        ByteBuf b = Unpooled.buffer();
        CmCodec.encode(ALL.get(0), b);
        assertThat(b.readableBytes()).isEqualTo(CmCodec.HELLO_SIZE).isEqualTo(32);
        assertThat(b.getUnsignedShort(0)).isEqualTo(32);
        assertThat(b.getByte(2)).isEqualTo((byte) CmMessage.TYPE_HELLO);
        assertThat(b.getInt(4)).isEqualTo(0x4d52434d);
        assertThat(b.getLong(16)).isEqualTo(0x1122334455667788L);
        assertThat(b.getInt(28)).as("served address 198.18.0.1").isEqualTo(0xc6120001);
        b.release();
    }

    @Test
    void framesOfIgnorableTypesAreSkipped() {
        EmbeddedChannel in = new EmbeddedChannel(new CmCodec.Decoder());
        ByteBuf b = frame(CmCodec.FIRST_IGNORABLE_TYPE, 0);
        b.writeBytes(frame(255, 40).setByte(3, 0x80));
        CmCodec.encode(new CmMessage.Ping(5), b);
        in.writeInbound(b);
        assertThat((Object) in.readInbound()).isEqualTo(new CmMessage.Ping(5));
        assertThat((Object) in.readInbound()).isNull();
        assertThat(in.finish()).isFalse();
    }

    @Test
    void malformedFramesAreProtocolErrors() {
        assertBad(frame(CmMessage.TYPE_PING, 7), "payload"); // short ping
        assertBad(frame(13, 8), "unknown type");
        assertBad(frame(63, 8), "unknown type");
        ByteBuf flags = frame(CmMessage.TYPE_PING, 8);
        flags.setByte(3, 1);
        assertBad(flags, "flags");
        ByteBuf qpn = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Disconnect(1, 2, CmMessage.REASON_ERROR, 7), qpn);
        qpn.setInt(4, 0x01000000);
        assertBad(qpn, "QPN");
        ByteBuf linkMtu = Unpooled.buffer();
        CmCodec.encode(
                new CmMessage.Connect(1, new CmMessage.Endpoint(0x12, 0x34, 1024, 256, 1, 2, new int[] {1}, 500)),
                linkMtu);
        assertBad(linkMtu, "link mtu");
        ByteBuf unknownFlag = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Disconnect(1, 2, CmMessage.REASON_ERROR, 7, 2, 0), unknownFlag);
        assertBad(unknownFlag, "flags");
        ByteBuf paths = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Connect(1, EP), paths);
        paths.setShort(4 + 4 + 24, 4); // claims 4 paths, carries 3
        assertBad(paths, "paths");
        ByteBuf mtu = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Connect(1, EP), mtu);
        mtu.setInt(4 + 4 + 8, 1000);
        assertBad(mtu, "mtu");
        ByteBuf len = Unpooled.buffer().writeShort(2).writeShort(0);
        assertBad(len, "length");
    }

    @Test
    void serviceLayoutsAreAsSpecified() {
        ByteBuf b = Unpooled.buffer();
        CmCodec.encode(new CmMessage.SvcRequest(0x01020304, 7, 0x12, 0x345678, GID, new byte[] {9, 8, 7}), b);
        assertThat(b.readableBytes()).isEqualTo(4 + 36 + 3);
        assertThat(b.getByte(2)).isEqualTo((byte) 8);
        assertThat(b.getInt(4)).isEqualTo(0x01020304);
        assertThat(b.getInt(8)).isEqualTo(7);
        assertThat(b.getInt(12)).isEqualTo(0x12);
        assertThat(b.getInt(16)).isEqualTo(0x345678);
        assertThat(b.getByte(20 + 12)).isEqualTo((byte) 198);
        assertThat(b.getUnsignedShort(36)).isEqualTo(3);
        assertThat(b.getByte(40)).isEqualTo((byte) 9);
        b.clear();
        CmCodec.encode(new CmMessage.SvcReply(5, 0x34, 0x56, GID, PD_MAX), b);
        assertThat(b.readableBytes()).isEqualTo(4 + 32 + 192);
        assertThat(b.getUnsignedShort(32)).isEqualTo(192);
        b.clear();
        CmCodec.encode(new CmMessage.SvcReject(5, CmMessage.SVC_REJECTED, new byte[] {1, 2}), b);
        assertThat(b.readableBytes()).isEqualTo(4 + 8 + 2);
        assertThat(b.getUnsignedShort(8)).isEqualTo(1);
        assertThat(b.getUnsignedShort(10)).isEqualTo(2);
        b.clear();
        CmCodec.encode(new CmMessage.SvcCancel(5, CmMessage.SVC_CANCELLED), b);
        assertThat(b.readableBytes()).isEqualTo(12);
        b.release();
        assertThatThrownBy(() -> new CmMessage.SvcReply(1, 1, 1, GID, new byte[193]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("193");
    }

    @Test
    void malformedServiceFramesAreProtocolErrors() {
        ByteBuf len = Unpooled.buffer();
        CmCodec.encode(new CmMessage.SvcRequest(1, 2, 3, 4, GID, new byte[] {1, 2, 3}), len);
        len.setShort(36, 4); // claims 4 bytes of private data, carries 3
        assertBad(len, "private data length 4");
        ByteBuf big = Unpooled.buffer();
        CmCodec.encode(new CmMessage.SvcReply(1, 2, 3, GID, PD_MAX), big);
        big.setShort(32, 193);
        big.writeByte(0);
        big.setShort(0, big.readableBytes());
        assertBad(big, "private data length 193");
        ByteBuf service = Unpooled.buffer();
        CmCodec.encode(new CmMessage.SvcRequest(1, 2, 3, 4, GID, new byte[0]), service);
        service.setInt(8, 0);
        assertBad(service, "service id 0");
        ByteBuf psn = Unpooled.buffer();
        CmCodec.encode(new CmMessage.SvcReply(1, 2, 3, GID, new byte[0]), psn);
        psn.setInt(12, 0x01000000);
        assertBad(psn, "PSN");
        ByteBuf reason = Unpooled.buffer();
        CmCodec.encode(new CmMessage.SvcCancel(1, CmMessage.SVC_TIMEOUT), reason);
        reason.setShort(8, 7);
        assertBad(reason, "service reason 7");
        assertBad(frame(CmMessage.TYPE_SVC_READY, 5), "payload");
        assertBad(frame(CmMessage.TYPE_SVC_REJECT, 7), "at least 8");
    }

    private static ByteBuf frame(int type, int payload) {
        ByteBuf b = Unpooled.buffer();
        b.writeShort(CmCodec.HEADER + payload).writeByte(type).writeByte(0).writeZero(payload);
        return b;
    }

    private static void assertBad(ByteBuf frame, String what) {
        EmbeddedChannel ch = new EmbeddedChannel(new CmCodec.Decoder());
        assertThatThrownBy(() -> ch.writeInbound(frame))
                .isInstanceOf(DecoderException.class)
                .hasCauseInstanceOf(CmProtocolException.class)
                .cause()
                .hasMessageContaining(what);
        ch.finishAndReleaseAll();
    }
}
