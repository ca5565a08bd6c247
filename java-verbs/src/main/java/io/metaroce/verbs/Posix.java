package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The few libc calls the binding needs around completion channels: {@code poll},
 * {@code eventfd}, {@code read}/{@code write} of 8-byte counters, {@code fcntl} for
 * {@code O_NONBLOCK} and {@code close}. Each returns -errno on failure.
 */
final class Posix {

    private Posix() {}

    static final short POLLIN = 0x1;
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    static final int O_NONBLOCK = 0x800;
    private static final int EFD_NONBLOCK = 0x800;
    private static final int EFD_CLOEXEC = 0x80000;
    /** struct pollfd { int fd; short events; short revents; }. */
    static final long POLLFD_SIZE = 8;

    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final MethodHandle POLL =
            libc("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle EVENTFD = libc("eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle READ =
            libc("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle WRITE =
            libc("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle FCNTL = libc(
            "fcntl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), Linker.Option.firstVariadicArg(2));

    private static MethodHandle libc(String name, FunctionDescriptor fd, Linker.Option... extra) {
        Linker.Option[] options = new Linker.Option[extra.length + 1];
        options[0] = ERRNO;
        System.arraycopy(extra, 0, options, 1, extra.length);
        MemorySegment sym = Native.LINKER
                .defaultLookup()
                .find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libc symbol " + name + " not found"));
        return Native.LINKER.downcallHandle(sym, fd, options);
    }

    private static int fail(MemorySegment capture) {
        return -Native.capturedErrno(capture);
    }

    /** poll() on fds; returns the number ready, 0 on timeout, -errno on failure. */
    static int poll(MemorySegment fds, int nfds, int timeoutMs) {
        MemorySegment c = Native.captureSegment();
        try {
            int n = (int) POLL.invokeExact(c, fds, (long) nfds, timeoutMs);
            return n < 0 ? fail(c) : n;
        } catch (Throwable t) {
            throw CompletionQueue.rethrow(t);
        }
    }

    /** A non-blocking, close-on-exec eventfd, or -errno. */
    static int eventfd() {
        MemorySegment c = Native.captureSegment();
        try {
            int fd = (int) EVENTFD.invokeExact(c, 0, EFD_NONBLOCK | EFD_CLOEXEC);
            return fd < 0 ? fail(c) : fd;
        } catch (Throwable t) {
            throw CompletionQueue.rethrow(t);
        }
    }

    /** Adds {@code value} to an eventfd's counter; 0 or -errno. */
    static int writeCounter(int fd, long value) {
        MemorySegment c = Native.captureSegment();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(JAVA_LONG);
            buf.set(JAVA_LONG, 0, value);
            long n = (long) WRITE.invokeExact(c, fd, buf, 8L);
            return n == 8 ? 0 : fail(c);
        } catch (Throwable t) {
            throw CompletionQueue.rethrow(t);
        }
    }

    /** Reads (and so resets) an eventfd's counter; the value, or -errno (-EAGAIN: it was 0). */
    static long readCounter(int fd) {
        MemorySegment c = Native.captureSegment();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(JAVA_LONG);
            long n = (long) READ.invokeExact(c, fd, buf, 8L);
            return n == 8 ? buf.get(JAVA_LONG, 0) : fail(c);
        } catch (Throwable t) {
            throw CompletionQueue.rethrow(t);
        }
    }

    /** Sets O_NONBLOCK on fd; 0 or -errno. */
    static int setNonBlocking(int fd) {
        MemorySegment c = Native.captureSegment();
        try {
            int flags = (int) FCNTL.invokeExact(c, fd, F_GETFL, 0);
            if (flags < 0) {
                return fail(c);
            }
            int rc = (int) FCNTL.invokeExact(c, fd, F_SETFL, flags | O_NONBLOCK);
            return rc < 0 ? fail(c) : 0;
        } catch (Throwable t) {
            throw CompletionQueue.rethrow(t);
        }
    }

    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(Native.captureSegment(), fd);
        } catch (Throwable t) {
            throw CompletionQueue.rethrow(t);
        }
    }

    static void setPollFd(MemorySegment fds, int index, int fd) {
        fds.set(JAVA_INT, index * POLLFD_SIZE, fd);
        fds.set(JAVA_SHORT, index * POLLFD_SIZE + 4, POLLIN);
        fds.set(JAVA_SHORT, index * POLLFD_SIZE + 6, (short) 0);
    }

    static short revents(MemorySegment fds, int index) {
        return fds.get(JAVA_SHORT, index * POLLFD_SIZE + 6);
    }
}
