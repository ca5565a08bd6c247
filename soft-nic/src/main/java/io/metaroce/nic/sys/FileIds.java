package io.metaroce.nic.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Which file an fd is, and taking an fd out of another process: what the daemon needs to tell a
 * context memfd it issued (ibv_import_device) from any other file, whatever the fd's number.
 */
public final class FileIds {
    /** struct stat of x86_64 / aarch64 glibc: 144 / 128 bytes; st_dev at 0, st_ino at 8. */
    private static final long STAT_SIZE = 256;

    private static final MethodHandle FSTAT = LibC.link("fstat", JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle PIDFD_GETFD = LibC.link("pidfd_getfd", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);

    private FileIds() {}

    /** A file's identity: device and inode (the same for every fd of one open file). */
    public record FileId(long dev, long ino) {}

    /** fstat(2)'s device and inode of {@code fd}. */
    public static FileId of(int fd) throws NativeException {
        MemorySegment cs = LibC.callState();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = arena.allocate(STAT_SIZE, 8);
            int rc = (int) FSTAT.invokeExact(cs, fd, st);
            if (rc < 0) {
                throw new NativeException("fstat(" + fd + ")", LibC.errno(cs));
            }
            return new FileId(st.get(JAVA_LONG, 0), st.get(JAVA_LONG, 8));
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    /**
     * pidfd_getfd(2): a duplicate, in this process, of fd {@code targetFd} of the process of
     * {@code pidFd} (close-on-exec); or -errno (EBADF: it has no such fd).
     */
    public static int pidfdGetfd(int pidFd, int targetFd) {
        MemorySegment cs = LibC.callState();
        try {
            int fd = (int) PIDFD_GETFD.invokeExact(cs, pidFd, targetFd, 0);
            return fd < 0 ? -LibC.errno(cs) : fd;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }
}
