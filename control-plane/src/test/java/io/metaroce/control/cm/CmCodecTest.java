package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import java.util.List;
import org.junit.jupiter.api.Test;

class CmCodecTest {
    static final CmMessage.Endpoint EP = new CmMessage.Endpoint(0x12, 0x34, 4096, 256, 0xabcdef01, 0x5eed, new int[] {4794, 4795, 65535});

    static final List<CmMessage> ALL = List.of(
            new CmMessage.Hello(CmCodec.VERSION, 0, 0x1122334455667788L, 4793, 500),
            new CmMessage.Connect(7, EP),
            new CmMessage.Accept(7, EP),
            new CmMessage.Reject(7, 0x34, 0x12, CmMessage.REASON_NO_QP),
            new CmMessage.Disconnect(0x12, 0x34, CmMessage.REASON_DESTROYED),
            new CmMessage.Ping(99),
            new CmMessage.Pong(99));

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
        assertThat(b.readableBytes()).isEqualTo(CmCodec.HELLO_SIZE).isEqualTo(28);
        assertThat(b.getUnsignedShort(0)).isEqualTo(28);
        assertThat(b.getByte(2)).isEqualTo((byte) CmMessage.TYPE_HELLO);
        assertThat(b.getInt(4)).isEqualTo(0x4d52434d);
        assertThat(b.getLong(16)).isEqualTo(0x1122334455667788L);
        b.release();
    }

    @Test
    void malformedFramesAreProtocolErrors() {
        assertBad(frame(CmMessage.TYPE_PING, 7), "payload");                    // short ping
        assertBad(frame(99, 8), "unknown type");
        ByteBuf flags = frame(CmMessage.TYPE_PING, 8);
        flags.setByte(3, 1);
        assertBad(flags, "flags");
        ByteBuf qpn = Unpooled.buffer();
        CmCodec.encode(new CmMessage.Disconnect(1, 2, CmMessage.REASON_ERROR), qpn);
        qpn.setInt(4, 0x01000000);
        assertBad(qpn, "QPN");
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

    private static ByteBuf frame(int type, int payload) {
        ByteBuf b = Unpooled.buffer();
        b.writeShort(CmCodec.HEADER + payload).writeByte(type).writeByte(0).writeZero(payload);
        return b;
    }

    private static void assertBad(ByteBuf frame, String what) {
        EmbeddedChannel ch = new EmbeddedChannel(new CmCodec.Decoder());
        assertThatThrownBy(() -> ch.writeInbound(frame)).isInstanceOf(DecoderException.class)
                .hasCauseInstanceOf(CmProtocolException.class).cause().hasMessageContaining(what);
        ch.finishAndReleaseAll();
    }
}
