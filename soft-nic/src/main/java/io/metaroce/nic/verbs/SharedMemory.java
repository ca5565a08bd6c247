package io.metaroce.nic.verbs;

import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.MemorySegment;

/** A memfd of {@code size} bytes mapped shared: the rings handed to a provider with the fd. */
record SharedMemory(int fd, MemorySegment map) {
    /** Creates and maps it; on failure closes what was made, runs {@code undo}, rethrows. */
    static SharedMemory create(String name, long size, Runnable undo) throws NativeException {
        int fd;
        try {
            fd = LibC.memfdCreate(name, LibC.MFD_CLOEXEC);
        } catch (NativeException e) {
            undo.run();
            throw e;
        }
        try {
            LibC.ftruncate(fd, size);
            return new SharedMemory(fd, LibC.mmap(size, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, fd, 0));
        } catch (NativeException e) {
            LibC.close(fd);
            undo.run();
            throw e;
        }
    }
}
