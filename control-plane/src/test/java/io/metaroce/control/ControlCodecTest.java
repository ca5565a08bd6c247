package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.unix.FileDescriptor;
import io.netty.handler.codec.TooLongFrameException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ControlCodecTest {

    @Test
    void decodesAHelloRequest() {
        EmbeddedChannel ch = new EmbeddedChannel(new ControlRequestDecoder());
        ByteBuf in = Unpooled.wrappedBuffer(Frames.hello(7));
        assertThat(ch.writeInbound(in)).isTrue();
        ControlRequest request = ch.readInbound();
        assertThat(request.op()).isEqualTo(ControlProtocol.OP_HELLO);
        assertThat(request.seq()).isEqualTo(7);
        assertThat(request.payload().order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
        assertThat(request.payload().remaining()).isEqualTo(8);
        assertThat(request.payload().getInt(0)).isEqualTo(ControlProtocol.ABI_VERSION);
        assertThat(in.refCnt()).isZero();
        assertFalse(ch.finish());
    }

    @Test
    void showsTheWireBytesOfHello() {
        assertThat(ByteBufUtil.hexDump(Frames.hello(7)))
                .isEqualTo("18000000" + "0100" + "0000" + "07000000" + "0000" + "0000" + "0300000000000000");
    }

    @Test
    void reassemblesFramesSplitAnywhereAndSeparatesBackToBackFrames() {
        byte[] stream = Frames.concat(
                Frames.request(ControlProtocol.OP_REG_MR, 1),
                Frames.request(ControlProtocol.OP_ALLOC_PD, 2),
                Frames.request(ControlProtocol.OP_MODIFY_QP, 3));
        for (int cut = 1; cut < stream.length; cut += 5) {
            EmbeddedChannel ch = new EmbeddedChannel(new ControlRequestDecoder());
            ch.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(stream, 0, cut)));
            ch.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(stream, cut, stream.length)));
            int[] ops = {ControlProtocol.OP_REG_MR, ControlProtocol.OP_ALLOC_PD, ControlProtocol.OP_MODIFY_QP};
            for (int i = 0; i < 3; i++) {
                ControlRequest r = ch.readInbound();
                assertThat(r.op()).isEqualTo(ops[i]);
                assertThat(r.seq()).isEqualTo(i + 1);
                byte[] payload = new byte[r.payload().remaining()];
                r.payload().get(payload);
                assertThat(payload).isEqualTo(Frames.pattern(ControlProtocol.requestSize(ops[i]), i + 1));
            }
            assertThat((Object) ch.readInbound()).isNull();
            assertFalse(ch.finish());
        }
    }

    @Test
    void decodesTheOpsOfAbiVersion2WithTheirPayloadSizes() {
        int[] ops = {
            ControlProtocol.OP_CREATE_SRQ,
            ControlProtocol.OP_MODIFY_SRQ,
            ControlProtocol.OP_QUERY_SRQ,
            ControlProtocol.OP_DESTROY_SRQ,
            ControlProtocol.OP_GET_ASYNC_EVENT,
            ControlProtocol.OP_REREG_MR
        };
        int[] sizes = {16, 16, 8, 8, 0, 40};
        EmbeddedChannel ch = new EmbeddedChannel(new ControlRequestDecoder());
        for (int i = 0; i < ops.length; i++) {
            ch.writeInbound(Unpooled.wrappedBuffer(Frames.request(ops[i], 100 + i)));
        }
        for (int i = 0; i < ops.length; i++) {
            ControlRequest r = ch.readInbound();
            assertThat(r.op()).isEqualTo(ops[i]);
            assertThat(r.seq()).isEqualTo(100 + i);
            assertThat(r.payload().remaining())
                    .as(ControlProtocol.opName(ops[i]))
                    .isEqualTo(sizes[i]);
        }
        assertFalse(ch.finish());
    }

    @Test
    void rejectsEveryMalformedHeader() {
        byte[] hello = Frames.pattern(8, 0);
        assertRejected(Frames.frame(8, ControlProtocol.OP_HELLO, 0, 1, 0, new byte[0]), "shorter than");
        assertRejected(Frames.frame(15, ControlProtocol.OP_HELLO, 0, 1, 0, new byte[0]), "shorter than");
        assertRejected(Frames.frame(24, 0, 0, 1, 0, hello), "unknown op 0");
        assertRejected(
                Frames.frame(24, ControlProtocol.OP_MAX + 1, 0, 1, 0, hello),
                "unknown op " + (ControlProtocol.OP_MAX + 1));
        assertRejected(Frames.frame(24, 0xffff, 0, 1, 0, hello), "unknown op 65535");
        assertRejected(Frames.frame(24, ControlProtocol.OP_HELLO, 5, 1, 0, hello), "status 5");
        assertRejected(Frames.frame(24, ControlProtocol.OP_HELLO, 0, 1, 1, hello), "nfds 1");
        assertRejected(Frames.request(ControlProtocol.OP_HELLO, 1, new byte[12]), "payload of 12 bytes, expected 8");
        assertRejected(Frames.request(ControlProtocol.OP_ALLOC_PD, 1, new byte[8]), "expected 0");
        assertRejected(Frames.request(ControlProtocol.OP_MODIFY_QP, 1, new byte[96]), "expected 104");
        assertRejected(Frames.request(ControlProtocol.OP_REREG_MR, 1, new byte[32]), "expected 40");
        assertRejected(Frames.request(ControlProtocol.OP_GET_ASYNC_EVENT, 1, new byte[8]), "expected 0");
    }

    @Test
    void rejectsAnOversizedLengthAtOnce() {
        for (long len : new long[] {4097, 65536, 0xffffffffL}) {
            EmbeddedChannel ch = new EmbeddedChannel(new ControlRequestDecoder());
            ByteBuf in = Unpooled.buffer().writeIntLE((int) len).writeShortLE(1).writeZero(10);
            assertThatThrownBy(() -> ch.writeInbound(in)).isInstanceOf(TooLongFrameException.class);
            assertThat(in.refCnt()).isZero();
            // After the first error everything is discarded, even a valid frame.
            ch.writeInbound(Unpooled.wrappedBuffer(Frames.hello(1)));
            assertThat((Object) ch.readInbound()).isNull();
            assertFalse(ch.finish());
        }
    }

    @Test
    void acceptsTheLargestFrame() {
        // No op has a 4080-byte request, so a 4096-byte frame passes the length check and fails the size check.
        byte[] max = Frames.request(ControlProtocol.OP_HELLO, 1, new byte[ControlProtocol.MAX_FRAME - 16]);
        assertRejected(max, "payload of 4080 bytes");
    }

    @Test
    void encodesAResponseAndItsFds() {
        EmbeddedChannel ch = new EmbeddedChannel(ControlResponseEncoder.INSTANCE);
        ByteBuffer payload = ByteBuffer.allocate(8)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(3)
                .putInt(0)
                .flip();
        FileDescriptor a = new FileDescriptor(100);
        FileDescriptor b = new FileDescriptor(101);
        assertThat(ch.writeOutbound(
                        new ControlResponse(ControlProtocol.OP_ALLOC_PD, 7, 0, payload, new FileDescriptor[] {a, b})))
                .isTrue();
        ByteBuf frame = ch.readOutbound();
        assertThat(ByteBufUtil.hexDump(frame))
                .isEqualTo("18000000" + "0200" + "0000" + "07000000" + "0200" + "0000" + "0300000000000000");
        frame.release();
        assertThat((Object) ch.readOutbound()).isSameAs(a);
        assertThat((Object) ch.readOutbound()).isSameAs(b);
        assertThat(payload.remaining())
                .as("the payload's position is left alone")
                .isEqualTo(8);
        assertFalse(ch.finish());
    }

    @Test
    void encodesAnErrorResponseWithoutPayload() {
        EmbeddedChannel ch = new EmbeddedChannel(ControlResponseEncoder.INSTANCE);
        ch.writeOutbound(
                new ControlResponse(ControlProtocol.OP_REG_MR, -2, 22, ByteBuffer.allocate(0), new FileDescriptor[0]));
        ByteBuf frame = ch.readOutbound();
        assertThat(ByteBufUtil.hexDump(frame)).isEqualTo("10000000" + "0400" + "1600" + "feffffff" + "00000000");
        frame.release();
        assertFalse(ch.finish());
    }

    private static void assertRejected(byte[] frame, String reason) {
        EmbeddedChannel ch = new EmbeddedChannel(new ControlRequestDecoder());
        ByteBuf in = Unpooled.wrappedBuffer(frame);
        assertThatThrownBy(() -> ch.writeInbound(in))
                .isInstanceOf(ControlProtocolException.class)
                .hasMessageContaining(reason);
        assertThat(in.refCnt()).isZero();
        assertThat((Object) ch.readInbound()).isNull();
        assertFalse(ch.finish());
    }
}
