package io.metaroce.it;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;

/** A raw client of a daemon's local control socket, to feed it bad input. */
final class ControlSocket implements AutoCloseable {

    static final int HDR_SIZE = 16;
    static final int OP_HELLO = 1;

    private final SocketChannel ch;

    private ControlSocket(SocketChannel ch) {
        this.ch = ch;
    }

    static ControlSocket connect(Path socket) throws IOException {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(socket));
        return new ControlSocket(ch);
    }

    /** A mrce_ctrl_hdr: len u32 | op u16 | status u16 | seq u32 | nfds u16 | pad u16. */
    static ByteBuffer header(int len, int op, int seq) {
        return ByteBuffer.allocate(HDR_SIZE)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(len)
                .putShort((short) op)
                .putShort((short) 0)
                .putInt(seq)
                .putShort((short) 0)
                .putShort((short) 0)
                .flip();
    }

    /** Writes what it can; the daemon may close the connection part-way, which is fine. */
    void write(ByteBuffer... buffers) {
        try {
            for (ByteBuffer b : buffers) {
                while (b.hasRemaining()) {
                    ch.write(b);
                }
            }
        } catch (IOException closedByPeer) {
            // the daemon hung up on us: that is what the caller checks next
        }
    }

    /**
     * True when the daemon closes the connection within timeout (EOF or a reset), discarding
     * anything it sends first.
     */
    boolean closedByPeerWithin(Duration timeout) throws IOException {
        ch.configureBlocking(false);
        ByteBuffer sink = ByteBuffer.allocate(4096);
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Selector sel = Selector.open()) {
            ch.register(sel, SelectionKey.OP_READ);
            while (true) {
                long leftMs = (deadline - System.nanoTime()) / 1_000_000;
                if (leftMs <= 0) {
                    return false;
                }
                sel.select(leftMs);
                sel.selectedKeys().clear();
                try {
                    sink.clear();
                    if (ch.read(sink) < 0) {
                        return true;
                    }
                } catch (IOException reset) {
                    return true;
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        ch.close();
    }
}
