package io.metaroce.nic.verbs;

import io.metaroce.abi.Errno;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.ToIntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** What the op handlers share: replies, the generic destroy of an unused object, unmapping, ring sizes. */
final class OpSupport {
    private static final Logger LOG = LoggerFactory.getLogger(OpSupport.class);

    private OpSupport() {}

    static ByteBuffer empty() {
        return ByteBuffer.allocate(0);
    }

    static ByteBuffer resp(long size) {
        return ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Destroys the session's object named by the request's handle: ENOENT when there is none,
     * EBUSY while it has {@code users}; otherwise removes it from {@code table}, releases it and
     * answers.
     */
    static <T> void destroyUnused(
            SessionObjects s,
            int op,
            int seq,
            ByteBuffer p,
            Map<Integer, T> table,
            ToIntFunction<T> users,
            Consumer<T> release) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        T obj = table.get(handle);
        if (obj == null) {
            fail(s, op, seq, Errno.ENOENT);
            return;
        }
        if (users.applyAsInt(obj) > 0) {
            fail(s, op, seq, Errno.EBUSY);
            return;
        }
        table.remove(handle);
        release.accept(obj);
        s.session.respond(op, seq, 0, empty());
    }

    static void fail(SessionObjects s, int op, int seq, int errno) {
        s.session.respond(op, seq, errno, empty());
    }

    static void unmap(MemorySegment m) {
        try {
            LibC.munmap(m);
        } catch (NativeException e) {
            LOG.warn("{}", e.getMessage());
        }
    }

    /** The smallest power of two not below {@code n} (ring slot counts). */
    static int pow2(int n) {
        int p = Integer.highestOneBit(n);
        return p == n ? n : p << 1;
    }
}
