package io.metaroce.control;

import io.metaroce.abi.CtrlHdrDescriptor;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Cuts the byte stream from a provider into request frames and checks each header before anyone
 * sees it. One instance per connection.
 *
 * <pre>
 *  0         4       6           8         12       14       16
 *  +---------+-------+-----------+---------+--------+--------+--------------------------+
 *  | len u32 | op u16| status u16| seq u32 |nfds u16| pad u16| request struct of op     |
 *  +---------+-------+-----------+---------+--------+--------+--------------------------+
 *  e.g. HELLO seq 7:  18 00 00 00  01 00  00 00  07 00 00 00  00 00  00 00  01 00 00 00 00 00 00 00
 * </pre>
 *
 * Rejected, each with a {@link ControlProtocolException} (or Netty's TooLongFrameException for
 * len &gt; 4096) that closes the connection: len outside [16, 4096], op outside 1..13, status or
 * nfds not 0, payload size other than the op's request size. After the first error the decoder
 * discards everything, so one bad frame yields one error.
 */
final class ControlRequestDecoder extends LengthFieldBasedFrameDecoder {

    private boolean failed;

    ControlRequestDecoder() {
        // len at offset 0, 4 bytes, counts the whole frame: adjust by -4 to get the bytes after it.
        super(ByteOrder.LITTLE_ENDIAN, ControlProtocol.MAX_FRAME, CtrlHdrDescriptor.OFF_LEN, 4, -4, 0, true);
    }

    @Override
    protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
        if (failed) {
            in.skipBytes(in.readableBytes());
            return null;
        }
        ByteBuf frame;
        try {
            frame = (ByteBuf) super.decode(ctx, in);
        } catch (Exception e) {
            fail(in);
            throw e;
        }
        if (frame == null) {
            return null;
        }
        try {
            return toRequest(frame);
        } catch (ControlProtocolException e) {
            fail(in);
            throw e;
        } finally {
            frame.release();
        }
    }

    private void fail(ByteBuf in) {
        failed = true;
        in.skipBytes(in.readableBytes());
    }

    private static ControlRequest toRequest(ByteBuf frame) {
        int base = frame.readerIndex();
        long len = frame.getUnsignedIntLE(base + CtrlHdrDescriptor.OFF_LEN);
        if (len < ControlProtocol.HEADER_SIZE) {
            throw new ControlProtocolException("frame len " + len + " is shorter than the 16-byte header");
        }
        int op = frame.getUnsignedShortLE(base + CtrlHdrDescriptor.OFF_OP);
        int status = frame.getUnsignedShortLE(base + CtrlHdrDescriptor.OFF_STATUS);
        int seq = frame.getIntLE(base + CtrlHdrDescriptor.OFF_SEQ);
        int nfds = frame.getUnsignedShortLE(base + CtrlHdrDescriptor.OFF_NFDS);
        if (!ControlProtocol.isKnownOp(op)) {
            throw new ControlProtocolException("unknown op " + op + " (seq " + Integer.toUnsignedString(seq) + ")");
        }
        if (status != 0) {
            throw new ControlProtocolException(
                    ControlProtocol.opName(op) + " request with status " + status + " (must be 0)");
        }
        if (nfds != 0) {
            throw new ControlProtocolException(
                    ControlProtocol.opName(op) + " request with nfds " + nfds + " (requests carry no fds)");
        }
        int payloadSize = (int) len - ControlProtocol.HEADER_SIZE;
        if (payloadSize != ControlProtocol.requestSize(op)) {
            throw new ControlProtocolException(ControlProtocol.opName(op) + " request payload of " + payloadSize
                    + " bytes, expected " + ControlProtocol.requestSize(op));
        }
        ByteBuffer payload = ByteBuffer.allocate(payloadSize).order(ByteOrder.LITTLE_ENDIAN);
        frame.getBytes(base + ControlProtocol.HEADER_SIZE, payload);
        payload.flip();
        return new ControlRequest(op, seq, payload);
    }
}
