package io.metaroce.control;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A provider-side client for tests, written against libc with FFM the way the C provider talks to
 * the daemon: socket/connect, send, and recvmsg with SCM_RIGHTS. Plus eventfd/memfd helpers.
 */
final class UnixClient implements AutoCloseable {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE = Linker.Option.captureCallState("errno");

    private static final int AF_UNIX = 1;
    private static final int SOCK_STREAM = 1;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int SOL_SOCKET = 1;
    private static final int SCM_RIGHTS = 1;
    private static final int MSG_CMSG_CLOEXEC = 0x40000000;
    private static final int MSG_NOSIGNAL = 0x4000;
    private static final int SOCKADDR_UN_SIZE = 110;
    private static final int MSGHDR_SIZE = 56;
    private static final int CMSG_HDR_SIZE = 16;
    private static final int CMSG_SPACE_ONE_FD = 24;

    private static final MethodHandle SOCKET =
            fn("socket", ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
    private static final MethodHandle SETSOCKOPT = fn(
            "setsockopt",
            ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS,
            ValueLayout.JAVA_INT);
    private static final MethodHandle CONNECT =
            fn("connect", ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
    private static final MethodHandle SEND = fn(
            "send",
            ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS,
            ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT);
    private static final MethodHandle RECVMSG =
            fn("recvmsg", ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
    private static final MethodHandle READ =
            fn("read", ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);
    private static final MethodHandle WRITE =
            fn("write", ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);
    private static final MethodHandle PREAD = fn(
            "pread",
            ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS,
            ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG);
    private static final MethodHandle CLOSE = fn("close", ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
    private static final MethodHandle EVENTFD =
            fn("eventfd", ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
    private static final MethodHandle MEMFD_CREATE =
            fn("memfd_create", ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
    private static final MethodHandle FCNTL = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("fcntl"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            CAPTURE,
            Linker.Option.firstVariadicArg(2));

    /** A received frame: header fields, payload, and the fds that followed it. */
    record Frame(int len, int op, int status, int seq, int nfds, ByteBuffer payload, int[] fds, byte[] fdBytes) {}

    private final int fd;

    private UnixClient(int fd) {
        this.fd = fd;
    }

    static UnixClient connect(Path path) throws IOException {
        int fd = check("socket", (int) call(SOCKET, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment addr = arena.allocate(SOCKADDR_UN_SIZE);
            addr.set(ValueLayout.JAVA_SHORT, 0, (short) AF_UNIX);
            byte[] bytes = path.toString().getBytes(StandardCharsets.UTF_8);
            MemorySegment.copy(bytes, 0, addr, ValueLayout.JAVA_BYTE, 2, bytes.length);
            check("connect " + path, (int) call(CONNECT, fd, addr, SOCKADDR_UN_SIZE));
            // SO_RCVTIMEO 10 s: a test that waits for a reply that never comes fails instead of hanging.
            MemorySegment timeval = arena.allocate(16, 8);
            timeval.set(ValueLayout.JAVA_LONG, 0, 10L);
            check("setsockopt SO_RCVTIMEO", (int) call(SETSOCKOPT, fd, SOL_SOCKET, 20, timeval, 16));
        } catch (IOException e) {
            closeFd(fd);
            throw e;
        }
        return new UnixClient(fd);
    }

    void send(byte[] bytes) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
            long off = 0;
            while (off < bytes.length) {
                long n = (long) call(SEND, fd, buf.asSlice(off), (long) bytes.length - off, MSG_NOSIGNAL);
                if (n < 0) {
                    throw new IOException("send failed: errno " + lastErrno());
                }
                off += n;
            }
        }
    }

    /** Reads one response frame and its fds. Returns null on EOF before a header. */
    Frame readFrame() throws IOException {
        byte[] header = new byte[ControlProtocol.HEADER_SIZE];
        if (!recvExact(header)) {
            return null;
        }
        ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        int len = h.getInt(0);
        int op = Short.toUnsignedInt(h.getShort(4));
        int status = Short.toUnsignedInt(h.getShort(6));
        int seq = h.getInt(8);
        int nfds = Short.toUnsignedInt(h.getShort(12));
        byte[] payload = new byte[len - ControlProtocol.HEADER_SIZE];
        if (!recvExact(payload)) {
            throw new IOException("EOF inside a frame");
        }
        int[] fds = new int[nfds];
        byte[] fdBytes = new byte[nfds];
        for (int i = 0; i < nfds; i++) {
            long both = recvFdByte();
            fdBytes[i] = (byte) (both >>> 32);
            fds[i] = (int) both;
        }
        return new Frame(
                len, op, status, seq, nfds, ByteBuffer.wrap(payload).order(ByteOrder.LITTLE_ENDIAN), fds, fdBytes);
    }

    /** True when the daemon closed the connection (read returns 0 or ECONNRESET). */
    boolean readsEof() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(1);
            long n = (long) call(READ, fd, buf, 1L);
            if (n < 0 && lastErrno() == 11) {
                throw new IOException("no EOF within the receive timeout");
            }
            return n == 0 || (n < 0 && lastErrno() == 104);
        }
    }

    private boolean recvExact(byte[] into) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Math.max(1, into.length));
            int off = 0;
            while (off < into.length) {
                long n = (long) call(READ, fd, buf.asSlice(off), (long) into.length - off);
                if (n == 0 || (n < 0 && lastErrno() == 104)) {
                    if (off == 0) {
                        return false;
                    }
                    throw new IOException("EOF after " + off + " of " + into.length + " bytes");
                }
                if (n < 0) {
                    throw new IOException("read failed: errno " + lastErrno());
                }
                off += (int) n;
            }
            MemorySegment.copy(buf, ValueLayout.JAVA_BYTE, 0, into, 0, into.length);
            return true;
        }
    }

    /** recvmsg of the one data byte that carries an fd; returns (byte << 32) | fd. */
    private long recvFdByte() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(1);
            MemorySegment iov = arena.allocate(16, 8);
            iov.set(ValueLayout.ADDRESS, 0, data);
            iov.set(ValueLayout.JAVA_LONG, 8, 1L);
            MemorySegment control = arena.allocate(CMSG_SPACE_ONE_FD, 8);
            MemorySegment msg = arena.allocate(MSGHDR_SIZE, 8);
            msg.set(ValueLayout.ADDRESS, 16, iov);
            msg.set(ValueLayout.JAVA_LONG, 24, 1L);
            msg.set(ValueLayout.ADDRESS, 32, control);
            msg.set(ValueLayout.JAVA_LONG, 40, (long) CMSG_SPACE_ONE_FD);
            long n = (long) call(RECVMSG, fd, msg, MSG_CMSG_CLOEXEC);
            if (n != 1) {
                throw new IOException("recvmsg for an fd returned " + n + " (errno " + lastErrno() + ")");
            }
            long controlLen = msg.get(ValueLayout.JAVA_LONG, 40);
            if (controlLen < CMSG_HDR_SIZE + 4
                    || control.get(ValueLayout.JAVA_INT, 8) != SOL_SOCKET
                    || control.get(ValueLayout.JAVA_INT, 12) != SCM_RIGHTS
                    || control.get(ValueLayout.JAVA_LONG, 0) != CMSG_HDR_SIZE + 4) {
                throw new IOException("no SCM_RIGHTS with the fd byte (controllen " + controlLen + ")");
            }
            int received = control.get(ValueLayout.JAVA_INT, CMSG_HDR_SIZE);
            return ((long) (data.get(ValueLayout.JAVA_BYTE, 0) & 0xff) << 32) | (received & 0xffffffffL);
        }
    }

    @Override
    public void close() {
        closeFd(fd);
    }

    // ---- fd helpers for tests ----

    static int eventfd(int initialValue) throws IOException {
        return check("eventfd", (int) call(EVENTFD, initialValue, 0x80000 /* EFD_CLOEXEC */));
    }

    static int memfd(String name, byte[] content) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            int fd = check("memfd_create", (int) call(MEMFD_CREATE, arena.allocateFrom(name), 1 /* MFD_CLOEXEC */));
            MemorySegment buf = arena.allocateFrom(ValueLayout.JAVA_BYTE, content);
            if ((long) call(WRITE, fd, buf, (long) content.length) != content.length) {
                throw new IOException("memfd write failed");
            }
            return fd;
        }
    }

    static long readEventfd(int fd) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(8);
            if ((long) call(READ, fd, buf, 8L) != 8) {
                throw new IOException("eventfd read failed: errno " + lastErrno());
            }
            return buf.get(ValueLayout.JAVA_LONG, 0);
        }
    }

    static byte[] pread(int fd, int length) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(length);
            long n = (long) call(PREAD, fd, buf, (long) length, 0L);
            if (n < 0) {
                throw new IOException("pread failed: errno " + lastErrno());
            }
            return buf.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /** True when {@code fd} is an open descriptor of this process. */
    static boolean isOpen(int fd) {
        return (int) call(FCNTL, fd, 1 /* F_GETFD */) >= 0;
    }

    static void closeFd(int fd) {
        call(CLOSE, fd);
    }

    // ---- FFM plumbing ----

    /** errno of this thread's last call (per thread: handlers call memfd() while a test thread reads). */
    private static final ThreadLocal<int[]> LAST_ERRNO = ThreadLocal.withInitial(() -> new int[1]);

    private static MethodHandle fn(String name, ValueLayout result, ValueLayout... args) {
        return LINKER.downcallHandle(
                LINKER.defaultLookup().findOrThrow(name), FunctionDescriptor.of(result, args), CAPTURE);
    }

    private static int lastErrno() {
        return LAST_ERRNO.get()[0];
    }

    /** Calls {@code handle} with a fresh errno capture (tests only, so a generic invoke is fine). */
    private static Object call(MethodHandle handle, Object... args) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            Object[] full = new Object[args.length + 1];
            full[0] = state;
            System.arraycopy(args, 0, full, 1, args.length);
            Object result = handle.invokeWithArguments(full);
            LAST_ERRNO.get()[0] = (int) ERRNO.get(state, 0L);
            return result;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static int check(String what, int rc) throws IOException {
        if (rc < 0) {
            throw new IOException(what + " failed: errno " + lastErrno());
        }
        return rc;
    }
}
