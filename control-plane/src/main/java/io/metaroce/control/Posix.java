package io.metaroce.control;

import io.metaroce.abi.Errno;
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

/** The few libc calls the control server needs that neither the JDK nor Netty offers. */
final class Posix {

    private static final int F_DUPFD_CLOEXEC = 1030;
    private static final int EINTR = 4;
    private static final int SOL_SOCKET = 1;
    private static final int SCM_RIGHTS = 1;
    private static final int MSG_DONTWAIT = 0x40;
    private static final int MSG_NOSIGNAL = 0x4000;
    // x86-64 / aarch64 (LP64) layouts: struct msghdr, struct iovec, struct cmsghdr.
    private static final int MSGHDR_SIZE = 56;
    private static final int MSGHDR_IOV = 16;
    private static final int MSGHDR_IOVLEN = 24;
    private static final int MSGHDR_CONTROL = 32;
    private static final int MSGHDR_CONTROLLEN = 40;
    private static final int IOVEC_SIZE = 16;
    private static final int CMSG_HDR_SIZE = 16;
    private static final int CMSG_LEN_ONE_FD = CMSG_HDR_SIZE + 4;
    private static final int CMSG_SPACE_ONE_FD = 24;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle FCNTL = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("fcntl"),
            FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            CAPTURE_ERRNO,
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CHMOD = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("chmod"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
            CAPTURE_ERRNO);
    private static final MethodHandle SENDMSG = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("sendmsg"),
            FunctionDescriptor.of(
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
            CAPTURE_ERRNO);
    private static final MethodHandle CLOSE = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

    private Posix() {}

    /** A close-on-exec duplicate of {@code fd}; the caller owns it. */
    static int dup(int fd) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int dup = (int) FCNTL.invokeExact(state, fd, F_DUPFD_CLOEXEC, 0);
            if (dup < 0) {
                throw new IOException("fcntl(" + fd + ", F_DUPFD_CLOEXEC) failed: errno " + errno(state));
            }
            return dup;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** chmod(2), which unlike the JDK can set the sticky bit. */
    static void chmod(String path, int mode) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int rc = (int) CHMOD.invokeExact(state, arena.allocateFrom(path), mode);
            if (rc != 0) {
                throw new IOException(
                        "chmod(" + path + ", 0" + Integer.toOctalString(mode) + ") failed: errno " + errno(state));
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Sends one zero byte carrying {@code fd} in an SCM_RIGHTS control message on the stream socket
     * {@code socketFd}, without blocking (the kernel duplicates {@code fd} into the message; the
     * caller keeps its own).
     *
     * @return true when sent, false when the socket's send buffer is full (EAGAIN): try again once
     *     the socket is writable
     * @throws IOException on any other error (the peer went away, too many fds in flight, ...)
     */
    static boolean sendFd(int socketFd, int fd) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment data = arena.allocate(1); // zeroed
            MemorySegment iov = arena.allocate(IOVEC_SIZE, 8);
            iov.set(ValueLayout.ADDRESS, 0, data);
            iov.set(ValueLayout.JAVA_LONG, 8, 1L);
            MemorySegment control = arena.allocate(CMSG_SPACE_ONE_FD, 8);
            control.set(ValueLayout.JAVA_LONG, 0, CMSG_LEN_ONE_FD);
            control.set(ValueLayout.JAVA_INT, 8, SOL_SOCKET);
            control.set(ValueLayout.JAVA_INT, 12, SCM_RIGHTS);
            control.set(ValueLayout.JAVA_INT, CMSG_HDR_SIZE, fd);
            MemorySegment msg = arena.allocate(MSGHDR_SIZE, 8);
            msg.set(ValueLayout.ADDRESS, MSGHDR_IOV, iov);
            msg.set(ValueLayout.JAVA_LONG, MSGHDR_IOVLEN, 1L);
            msg.set(ValueLayout.ADDRESS, MSGHDR_CONTROL, control);
            msg.set(ValueLayout.JAVA_LONG, MSGHDR_CONTROLLEN, CMSG_SPACE_ONE_FD);
            while (true) {
                long n = (long) SENDMSG.invokeExact(state, socketFd, msg, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n == 1) {
                    return true;
                }
                int errno = errno(state);
                if (n < 0 && errno == EINTR) {
                    continue;
                }
                if (n < 0 && errno == Errno.EAGAIN) {
                    return false;
                }
                throw new IOException("sendmsg(SCM_RIGHTS fd " + fd + ") returned " + n + ": errno " + errno);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Closes {@code fd}, ignoring errors (used on fds this class handed out). */
    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }
}
