package io.metaroce.control;

import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.FileRegion;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.UnixChannel;
import io.netty.util.AbstractReferenceCounted;
import java.io.IOException;
import java.nio.channels.WritableByteChannel;

/**
 * Sends each outbound Netty {@link FileDescriptor} (from {@link ControlResponseEncoder}) as one zero
 * byte with the fd in an SCM_RIGHTS control message, and waits for the socket to drain when its
 * send buffer is full, exactly as Netty does for frame bytes.
 *
 * <p>Why not Netty's own fd writes: in Netty 4.2 {@code EpollDomainSocketChannel} sends a
 * {@code FileDescriptor} with {@code sendFd}, and when that gets EAGAIN (the client has not read
 * yet and the socket buffer is full, which a burst of responses to a busy provider reaches easily)
 * it falls through to a path that throws {@code Error("Unexpected message type")}; the channel then
 * shuts its output down and the session is closed, so the client sees ECONNRESET. Here each fd
 * travels as a one-byte {@link FileRegion}: the epoll channel keeps it in order in its outbound
 * buffer, and when {@link FileRegion#transferTo} sends nothing it arms EPOLLOUT and retries later.
 *
 * <p>The fd is only borrowed: whoever wrote it ({@link ChannelSession}) closes it once the write
 * completes or fails. On a non-Unix channel (tests on an {@code EmbeddedChannel}) messages pass
 * through unchanged. Stateless: one shared instance serves every connection.
 */
@Sharable
final class FdSendHandler extends ChannelOutboundHandlerAdapter {

    static final FdSendHandler INSTANCE = new FdSendHandler();

    private FdSendHandler() {}

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof FileDescriptor fd && ctx.channel() instanceof UnixChannel unix) {
            ctx.write(new FdRegion(unix.fd(), fd.intValue()), promise);
        } else {
            ctx.write(msg, promise);
        }
    }

    /** One data byte plus one fd; {@link #transferTo} ignores Netty's byte channel and uses sendmsg. */
    static final class FdRegion extends AbstractReferenceCounted implements FileRegion {

        private final FileDescriptor socket;
        private final int fd;
        private long transferred;

        FdRegion(FileDescriptor socket, int fd) {
            this.socket = socket;
            this.fd = fd;
        }

        @Override
        public long transferTo(WritableByteChannel target, long position) throws IOException {
            if (transferred > 0) {
                return 0;
            }
            if (!Posix.sendFd(socket.intValue(), fd)) {
                return 0; // EAGAIN: the channel waits for EPOLLOUT and calls again
            }
            transferred = 1;
            return 1;
        }

        @Override
        public long position() {
            return 0;
        }

        @Override
        @Deprecated
        public long transfered() {
            return transferred;
        }

        @Override
        public long transferred() {
            return transferred;
        }

        @Override
        public long count() {
            return 1;
        }

        @Override
        public FdRegion retain() {
            super.retain();
            return this;
        }

        @Override
        public FdRegion retain(int increment) {
            super.retain(increment);
            return this;
        }

        @Override
        public FdRegion touch() {
            return this;
        }

        @Override
        public FdRegion touch(Object hint) {
            return this;
        }

        @Override
        protected void deallocate() {
            // The fd belongs to the writer, which closes it when the write's promise completes.
        }

        @Override
        public String toString() {
            return "FdRegion(fd " + fd + ")";
        }
    }
}
