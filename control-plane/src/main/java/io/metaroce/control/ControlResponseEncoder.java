package io.metaroce.control;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.unix.FileDescriptor;
import io.netty.handler.codec.MessageToMessageEncoder;
import java.util.List;

/**
 * Writes a {@link ControlResponse} as one frame followed by one Netty {@link FileDescriptor}
 * message per fd; {@link FdSendHandler}, nearer the socket, sends each of those as a zero byte with
 * the fd in an SCM_RIGHTS control message, waiting for the socket to drain when it is full (it does
 * not close the fd).
 *
 * <pre>
 *  e.g. ALLOC_PD seq 7, status 0, handle 3:
 *  18 00 00 00  02 00  00 00  07 00 00 00  00 00  00 00  03 00 00 00 00 00 00 00
 *  e.g. CREATE_CQ seq 8 with its ring memfd:   [32-byte frame, nfds 01 00] then [1 byte + SCM_RIGHTS]
 * </pre>
 *
 * Stateless: one shared instance serves every connection.
 */
@Sharable
final class ControlResponseEncoder extends MessageToMessageEncoder<ControlResponse> {

    static final ControlResponseEncoder INSTANCE = new ControlResponseEncoder();

    private ControlResponseEncoder() {
        super(ControlResponse.class);
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, ControlResponse response, List<Object> out) {
        int payloadSize = response.payload().remaining();
        int len = ControlProtocol.HEADER_SIZE + payloadSize;
        ByteBuf frame = ctx.alloc().buffer(len);
        frame.writeIntLE(len)
                .writeShortLE(response.op())
                .writeShortLE(response.status())
                .writeIntLE(response.seq())
                .writeShortLE(response.fds().length)
                .writeShortLE(0)
                .writeBytes(response.payload().duplicate());
        out.add(frame);
        for (FileDescriptor fd : response.fds()) {
            out.add(fd);
        }
    }
}
