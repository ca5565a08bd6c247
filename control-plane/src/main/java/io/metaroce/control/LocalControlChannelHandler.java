package io.metaroce.control;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last inbound handler of a connection: hands validated requests to the daemon's
 * {@link LocalControlHandler}, turns protocol errors into a closed connection with one log line,
 * and reports the end of the session exactly once.
 */
final class LocalControlChannelHandler extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(LocalControlChannelHandler.class);

    private final ChannelSession session;
    private final LocalControlHandler handler;
    private final AtomicBoolean closed = new AtomicBoolean();

    LocalControlChannelHandler(ChannelSession session, LocalControlHandler handler) {
        this.session = session;
        this.handler = handler;
    }

    ChannelSession session() {
        return session;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ControlRequest request)) {
            ReferenceCountUtil.release(msg);
            session.close("unexpected inbound message " + msg.getClass().getName());
            return;
        }
        if (closed.get() || !ctx.channel().isActive()) {
            return; // bytes that arrived before the close: nobody is left to answer them
        }
        try {
            handler.onRequest(session, request.op(), request.seq(), request.payload());
        } catch (RuntimeException e) {
            LOG.error(
                    "the daemon failed on {} seq {} of {}",
                    ControlProtocol.opName(request.op()),
                    Integer.toUnsignedString(request.seq()),
                    session,
                    e);
            session.close("the daemon failed on " + ControlProtocol.opName(request.op()) + ": " + e);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable reason = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        if (reason instanceof ControlProtocolException
                || reason instanceof TooLongFrameException
                || reason instanceof DecoderException) {
            session.close("protocol error: " + reason.getMessage());
        } else if (reason instanceof IOException) {
            LOG.debug("{}: {}", session, reason.toString());
            session.closeQuietly();
        } else {
            session.close("unexpected error: " + reason);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        sessionClosed();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        sessionClosed();
    }

    private void sessionClosed() {
        if (closed.compareAndSet(false, true)) {
            try {
                handler.onSessionClosed(session);
            } catch (RuntimeException e) {
                LOG.error("the daemon failed to clean up {}", session, e);
            }
        }
    }
}
