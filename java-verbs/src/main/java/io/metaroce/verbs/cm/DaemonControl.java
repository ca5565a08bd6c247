package io.metaroce.verbs.cm;

import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One connection to the MetaRoCE daemon of this network namespace on its local control socket
 * (docs/spec/control-protocol.md), for the CM_* ops (20..25): HELLO first, then requests matched
 * to their responses by seq by a reader thread, so a long poll (CM_GET_REQUEST) and an accept can
 * be outstanding at once. Frames are little-endian: a 16-byte header ({@code len, op, status, seq,
 * nfds, pad}) and the op's fixed-size payload. HELLO's response carries two fds; read without a
 * control buffer, the kernel closes them (this client needs neither).
 */
final class DaemonControl implements AutoCloseable {
    static final int ABI_VERSION = 3;
    static final int HEADER = 16;
    static final int MAX_FRAME = 4096;
    static final int OP_HELLO = 1;
    static final int OP_CM_LISTEN = 20;
    static final int OP_CM_UNLISTEN = 21;
    static final int OP_CM_CONNECT = 22;
    static final int OP_CM_GET_REQUEST = 23;
    static final int OP_CM_ACCEPT = 24;
    static final int OP_CM_REJECT = 25;
    static final int HELLO_REQ_SIZE = 8;
    static final int HELLO_RESP_GID = 8;

    // struct layouts (mrce_abi.h), each checked against the C compiler by DaemonControlAbiTest
    static final int LISTEN_SIZE = 8;
    static final int LISTEN_SERVICE = 0;
    static final int LISTEN_BACKLOG = 4;
    static final int GET_REQUEST_SIZE = 8;
    static final int GET_REQUEST_TIMEOUT = 0;
    // the four CM structs share qpn 8, psn 12, gid 16, len 36, data 40; connect_resp and accept_req
    // are 232 bytes, connect_req and request 248 (their peer_ipv6 follows at 232)
    static final int CM_STRUCT = 232;
    static final int CM_STRUCT_V6 = 248;
    static final int QPN = 8;
    static final int PSN = 12;
    static final int GID = 16;
    static final int PD_LEN = 36;
    static final int PD = 40;
    static final int CONNECT_PEER = 0;
    static final int CONNECT_SERVICE = 4;
    static final int CONNECT_TIMEOUT = 32;
    /** connect_req's and request's IPv6 peer, used when their IPv4 peer (offset 0, 32) is 0. */
    static final int PEER_IPV6 = 232;

    static final int RESP_RESULT = 0;
    static final int REQUEST_HANDLE = 0;
    static final int REQUEST_SERVICE = 4;
    static final int REQUEST_PEER = 32;
    static final int ACCEPT_HANDLE = 0;
    static final int REJECT_SIZE = 200;
    static final int REJECT_HANDLE = 0;
    static final int REJECT_PD_LEN = 4;
    static final int REJECT_PD = 8;
    static final int CM_ACCEPTED = 0;
    static final int CM_REJECTED = 1;

    /** A response: status 0 with the op's payload, or an errno with none. */
    record Response(int op, int status, ByteBuffer payload) {}

    private final SocketChannel ch;
    private final Path path;
    private final byte[] localGid;
    private final Map<Integer, CompletableFuture<Response>> calls = new ConcurrentHashMap<>();
    private final AtomicInteger seq = new AtomicInteger(1);
    private final Object writeLock = new Object();
    private final Thread reader;
    private volatile IOException failure;

    private DaemonControl(SocketChannel ch, Path path, byte[] localGid) {
        this.ch = ch;
        this.path = path;
        this.localGid = localGid;
        this.reader = Thread.ofPlatform().daemon().name("mrce-cm-client").unstarted(this::readLoop);
    }

    /** {@code $METAROCE_SOCK}, or /tmp/metaroce/nicd-&lt;inode of /proc/self/ns/net&gt;.sock, as the provider finds it. */
    static Path defaultSocketPath() throws IOException {
        String env = System.getenv("METAROCE_SOCK");
        if (env != null && !env.isEmpty()) {
            return Path.of(env);
        }
        long ino = (Long) Files.getAttribute(Path.of("/proc/self/ns/net"), "unix:ino");
        return Path.of("/tmp/metaroce", "nicd-" + ino + ".sock");
    }

    /** Connects and says HELLO. */
    static DaemonControl open(Path path) throws IOException {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            ch.connect(UnixDomainSocketAddress.of(path));
        } catch (IOException e) {
            ch.close();
            throw new IOException(
                    "no MetaRoCE daemon answers on " + path + " (" + e.getMessage()
                            + "); is mrce-nicd running in this network namespace? ($METAROCE_SOCK names another socket)",
                    e);
        }
        try {
            ByteBuffer hello = ByteBuffer.allocate(HELLO_REQ_SIZE)
                    .order(ByteOrder.LITTLE_ENDIAN)
                    .putInt(0, ABI_VERSION);
            write(ch, OP_HELLO, 0, hello);
            Response r = readFrame(ch);
            if (r.op() != OP_HELLO || r.status() != 0) {
                throw new IOException("the daemon on " + path + " refused HELLO (abi " + ABI_VERSION + "): "
                        + Errnos.name(r.status()));
            }
            byte[] gid = new byte[16];
            r.payload().get(HELLO_RESP_GID, gid);
            DaemonControl c = new DaemonControl(ch, path, gid);
            c.reader.start();
            return c;
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** The daemon's GID index 0 (::ffff:its IPv4 address). */
    byte[] localGid() {
        return localGid.clone();
    }

    Path path() {
        return path;
    }

    /** Sends a request; the future completes with its response, or with an IOException when the connection ends. */
    CompletableFuture<Response> send(int op, ByteBuffer payload) {
        CompletableFuture<Response> f = new CompletableFuture<>();
        int s = seq.getAndIncrement();
        calls.put(s, f);
        IOException dead = failure;
        if (dead != null) {
            calls.remove(s);
            f.completeExceptionally(dead);
            return f;
        }
        try {
            synchronized (writeLock) {
                write(ch, op, s, payload);
            }
        } catch (IOException e) {
            calls.remove(s);
            f.completeExceptionally(e);
        }
        return f;
    }

    /** Sends a request and waits for its response. */
    Response call(int op, ByteBuffer payload) throws IOException {
        try {
            return send(op, payload).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted waiting for the daemon");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw new IOException(io.getMessage(), io);
            }
            throw new IOException(e.getCause());
        }
    }

    private void readLoop() {
        IOException end;
        try {
            while (true) {
                ByteBuffer h = readFully(ch, HEADER);
                int len = h.getInt(0);
                int op = Short.toUnsignedInt(h.getShort(4));
                int status = Short.toUnsignedInt(h.getShort(6));
                int s = h.getInt(8);
                int nfds = Short.toUnsignedInt(h.getShort(12));
                if (len < HEADER || len > MAX_FRAME) {
                    throw new IOException("bad frame length " + len + " from the daemon");
                }
                ByteBuffer payload = readFully(ch, len - HEADER);
                if (nfds > 0) {
                    readFully(ch, nfds); // one byte per fd; the kernel closes fds nobody receives
                }
                CompletableFuture<Response> f = calls.remove(s);
                if (f != null) {
                    f.complete(new Response(op, status, payload));
                }
            }
        } catch (IOException e) {
            end = e;
        }
        IOException closed =
                new IOException("the connection to the daemon on " + path + " ended: " + end.getMessage(), end);
        failure = closed;
        for (Integer s : calls.keySet()) {
            CompletableFuture<Response> f = calls.remove(s);
            if (f != null) {
                f.completeExceptionally(closed);
            }
        }
    }

    private static void write(SocketChannel ch, int op, int seq, ByteBuffer payload) throws IOException {
        int n = payload.remaining();
        ByteBuffer b = ByteBuffer.allocate(HEADER + n).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(HEADER + n)
                .putShort((short) op)
                .putShort((short) 0)
                .putInt(seq)
                .putShort((short) 0)
                .putShort((short) 0);
        b.put(payload.duplicate()).flip();
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    private static Response readFrame(SocketChannel ch) throws IOException {
        ByteBuffer h = readFully(ch, HEADER);
        int len = h.getInt(0);
        if (len < HEADER || len > MAX_FRAME) {
            throw new IOException("bad frame length " + len + " from the daemon");
        }
        ByteBuffer payload = readFully(ch, len - HEADER);
        int nfds = Short.toUnsignedInt(h.getShort(12));
        if (nfds > 0) {
            readFully(ch, nfds);
        }
        return new Response(Short.toUnsignedInt(h.getShort(4)), Short.toUnsignedInt(h.getShort(6)), payload);
    }

    private static ByteBuffer readFully(SocketChannel ch, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new EOFException("the daemon closed the connection");
            }
        }
        return b.flip();
    }

    @Override
    public void close() {
        try {
            ch.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    /** Names of the errno values the service answers. */
    static final class Errnos {
        static final int ENOENT = 2;
        static final int EAGAIN = 11;
        static final int EBUSY = 16;
        static final int EINVAL = 22;
        static final int EPROTO = 71;
        static final int EOPNOTSUPP = 95;
        static final int EADDRINUSE = 98;
        static final int ECONNABORTED = 103;
        static final int ECONNRESET = 104;
        static final int ENOBUFS = 105;
        static final int ESHUTDOWN = 108;
        static final int ETIMEDOUT = 110;
        static final int ECONNREFUSED = 111;
        static final int ECANCELED = 125;

        private Errnos() {}

        static String name(int e) {
            String n = switch (e) {
                case ENOENT -> "ENOENT";
                case EAGAIN -> "EAGAIN";
                case EBUSY -> "EBUSY";
                case EINVAL -> "EINVAL";
                case EPROTO -> "EPROTO";
                case EOPNOTSUPP -> "EOPNOTSUPP";
                case EADDRINUSE -> "EADDRINUSE";
                case ECONNABORTED -> "ECONNABORTED";
                case ECONNRESET -> "ECONNRESET";
                case ENOBUFS -> "ENOBUFS";
                case ESHUTDOWN -> "ESHUTDOWN";
                case ETIMEDOUT -> "ETIMEDOUT";
                case ECONNREFUSED -> "ECONNREFUSED";
                case ECANCELED -> "ECANCELED";
                default -> "errno";
            };
            return n + " (" + e + ")";
        }
    }
}
