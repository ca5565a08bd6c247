package io.metaroce.control;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.unix.FileDescriptor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A {@link LocalSession} over one Netty channel. */
final class ChannelSession implements LocalSession {

    private static final Logger LOG = LoggerFactory.getLogger(ChannelSession.class);
    private static final FileDescriptor[] NO_FDS = new FileDescriptor[0];

    private final long id;
    private final int pid;
    private final int uid;
    private final int gid;
    private final Channel channel;
    private final AtomicBoolean closing = new AtomicBoolean();

    ChannelSession(long id, int pid, int uid, int gid, Channel channel) {
        this.id = id;
        this.pid = pid;
        this.uid = uid;
        this.gid = gid;
        this.channel = channel;
    }

    @Override
    public long id() {
        return id;
    }

    @Override
    public int pid() {
        return pid;
    }

    @Override
    public int uid() {
        return uid;
    }

    @Override
    public int gid() {
        return gid;
    }

    @Override
    public int socketFd() {
        return channel instanceof io.netty.channel.epoll.EpollDomainSocketChannel ch && ch.isOpen()
                ? ch.fd().intValue()
                : -1;
    }

    @Override
    public void respond(int op, int seq, int status, ByteBuffer payload, int... fds) {
        int payloadSize = payload == null ? 0 : payload.remaining();
        if (op < 0 || op > 0xffff || status < 0 || status > 0xffff) {
            throw new IllegalArgumentException("op " + op + " / status " + status + " do not fit in a u16");
        }
        if (ControlProtocol.HEADER_SIZE + payloadSize > ControlProtocol.MAX_FRAME) {
            throw new IllegalArgumentException("response payload of " + payloadSize + " bytes exceeds the frame limit");
        }
        if (fds.length > 0xffff) {
            throw new IllegalArgumentException(fds.length + " fds do not fit in nfds");
        }
        // Copy what the caller lends us, so it may reuse the buffer and close its fds on return.
        ByteBuffer copy = ByteBuffer.allocate(payloadSize).order(ByteOrder.LITTLE_ENDIAN);
        if (payloadSize > 0) {
            copy.put(payload.duplicate()).flip();
        }
        FileDescriptor[] dups = fds.length == 0 ? NO_FDS : new FileDescriptor[fds.length];
        for (int i = 0; i < fds.length; i++) {
            try {
                dups[i] = new FileDescriptor(Posix.dup(fds[i]));
            } catch (IOException e) {
                closeAll(dups, i);
                close("cannot duplicate fd " + fds[i] + " for the " + ControlProtocol.opName(op) + " response: "
                        + e.getMessage());
                return;
            }
        }
        // One message per response keeps the frame and its fds together when threads race.
        channel.writeAndFlush(new ControlResponse(op, seq, status, copy, dups)).addListener((ChannelFutureListener)
                future -> {
                    closeAll(dups, dups.length);
                    if (!future.isSuccess() && channel.isActive()) {
                        Throwable cause = future.cause();
                        close("writing the " + ControlProtocol.opName(op) + " response failed: " + cause
                                + (cause.getCause() != null ? " (" + cause.getCause() + ")" : ""));
                    }
                });
    }

    @Override
    public void close(String reason) {
        if (closing.compareAndSet(false, true)) {
            LOG.warn("closing local control connection {} of pid {}: {}", id, pid, reason);
        }
        channel.close();
    }

    /** Closes without a log line: the peer went away or the daemon shuts down. */
    void closeQuietly() {
        closing.set(true);
        channel.close();
    }

    @Override
    public String toString() {
        return "session " + id + " (pid " + pid + ", uid " + uid + ")";
    }

    private static void closeAll(FileDescriptor[] fds, int count) {
        for (int i = 0; i < count; i++) {
            try {
                fds[i].close();
            } catch (IOException e) {
                LOG.debug("closing duplicated fd {} failed", fds[i].intValue(), e);
            }
        }
    }
}
