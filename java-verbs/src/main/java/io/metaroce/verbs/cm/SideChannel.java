package io.metaroce.verbs.cm;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.function.UnaryOperator;

/**
 * The TCP side channel of ibv_rc_pingpong, for fixed-size messages:
 *
 * <ol>
 *   <li>the client connects and writes its message;
 *   <li>the server reads it, prepares (moves its QP to RTR/RTS), and writes its own message;
 *   <li>the client reads that and writes {@code "done"} plus NUL (5 bytes); the server reads it,
 *       and both close.
 * </ol>
 *
 * The server accepts one connection on the port (SO_REUSEADDR, any address) and then stops
 * listening, as the C program does.
 *
 * <p><b>Thread safety:</b> one exchange per instance, driven by one thread; the static helpers are stateless.
 */
public final class SideChannel {

    /** {@code "done"} with its NUL, the client's final message. */
    static final byte[] DONE = {'d', 'o', 'n', 'e', 0};

    private SideChannel() {}

    /**
     * Client side: connects to {@code host:port} (retrying until {@code connectTimeoutMs} while
     * the server is not listening yet), sends {@code local}, returns the server's message.
     */
    public static byte[] client(String host, int port, byte[] local, int connectTimeoutMs) throws IOException {
        long deadline = System.nanoTime() + connectTimeoutMs * 1_000_000L;
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), Math.max(1, connectTimeoutMs));
                s.setSoTimeout(60_000);
                OutputStream out = s.getOutputStream();
                out.write(local);
                out.flush();
                byte[] remote = readFully(s.getInputStream(), local.length, "the server's address");
                out.write(DONE);
                out.flush();
                return remote;
            } catch (java.net.ConnectException e) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("Couldn't connect to " + host + ":" + port + ": " + e.getMessage(), e);
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while connecting to " + host + ":" + port, ie);
                }
            }
        }
    }

    /**
     * Server side: accepts one client on {@code port}, reads its message of {@code size} bytes,
     * calls {@code prepare} with it (connect the QP there) to get the reply, sends the reply and
     * waits for the client's {@code "done"}. Returns the client's message.
     */
    public static byte[] server(int port, int size, UnaryOperator<byte[]> prepare) throws IOException {
        try (ServerSocket ss = listen(port, 1)) {
            return serve(ss, size, prepare);
        }
    }

    /** A listening socket on {@code port} (any address, SO_REUSEADDR) with {@code backlog}. */
    static ServerSocket listen(int port, int backlog) throws IOException {
        ServerSocket ss = new ServerSocket();
        try {
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(port), backlog);
            return ss;
        } catch (IOException | RuntimeException e) {
            ss.close();
            throw e;
        }
    }

    /**
     * The server side on a listening socket: accepts one client (within the socket's
     * {@code SO_TIMEOUT}, if set) and exchanges as {@link #server}; the socket stays open.
     */
    static byte[] serve(ServerSocket ss, int size, UnaryOperator<byte[]> prepare) throws IOException {
        int port = ss.getLocalPort();
        Socket accepted = ss.accept(); // a SocketTimeoutException here is the accept's own timeout
        try {
            try (Socket s = accepted) {
                s.setSoTimeout(60_000);
                byte[] remote = readFully(s.getInputStream(), size, "the client's address");
                byte[] reply = prepare.apply(remote);
                OutputStream out = s.getOutputStream();
                out.write(reply);
                out.flush();
                byte[] done = readFully(s.getInputStream(), DONE.length, "the client's \"done\"");
                if (!new String(done, StandardCharsets.US_ASCII).startsWith("done")) {
                    throw new IOException(
                            "expected \"done\" from the client, got " + new String(done, StandardCharsets.US_ASCII));
                }
                return remote;
            }
        } catch (SocketTimeoutException e) {
            throw new IOException("side channel on port " + port + ": the peer went silent", e);
        }
    }

    private static byte[] readFully(InputStream in, int n, String what) throws IOException {
        byte[] b = new byte[n];
        int got = 0;
        while (got < n) {
            int r = in.read(b, got, n - got);
            if (r < 0) {
                throw new EOFException(
                        "Couldn't read " + what + ": " + got + "/" + n + " bytes before the peer closed");
            }
            got += r;
        }
        return b;
    }
}
