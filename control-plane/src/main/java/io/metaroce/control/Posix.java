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

/** The few libc calls the control server needs that neither the JDK nor Netty offers. */
final class Posix {

    private static final int F_DUPFD_CLOEXEC = 1030;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle FCNTL = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("fcntl"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CHMOD = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("chmod"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
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
                throw new IOException("chmod(" + path + ", 0" + Integer.toOctalString(mode) + ") failed: errno "
                        + errno(state));
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
