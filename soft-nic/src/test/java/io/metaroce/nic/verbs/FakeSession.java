package io.metaroce.nic.verbs;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.CreateCqRespDescriptor;
import io.metaroce.abi.CreateQpRespDescriptor;
import io.metaroce.abi.CreateSrqRespDescriptor;
import io.metaroce.control.LocalSession;
import io.metaroce.nic.sys.LibC;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A LocalSession in this process that records responses. Like the real provider, it maps a CQ or
 * QP memfd when the response arrives (the daemon closes its copy after responding).
 */
public final class FakeSession implements LocalSession {
    public record Response(int op, int seq, int status, ByteBuffer payload, int[] fds, MemorySegment mapping) {}

    private final long id;
    private final int pid;
    public final ConcurrentLinkedQueue<Response> responses = new ConcurrentLinkedQueue<>();
    public final List<MemorySegment> mappings = new ArrayList<>();
    public volatile String closedReason;
    /** The connecting user (SO_PEERCRED uid). */
    public volatile int uid;

    public FakeSession(long id, int pid) {
        this.id = id;
        this.pid = pid;
    }

    @Override
    public long id() {
        return id;
    }

    @Override
    public int pid() {
        return pid;
    }

    @Override
    public int uid() {
        return uid;
    }

    @Override
    public int gid() {
        return 0;
    }

    @Override
    public void respond(int op, int seq, int status, ByteBuffer payload, int... fds) {
        ByteBuffer copy = ByteBuffer.allocate(payload.remaining()).order(ByteOrder.LITTLE_ENDIAN);
        copy.put(payload.duplicate()).flip();
        MemorySegment map = null;
        if (status == 0
                && (op == AbiConstants.MRCE_OP_CREATE_CQ
                        || op == AbiConstants.MRCE_OP_CREATE_QP
                        || op == AbiConstants.MRCE_OP_CREATE_SRQ)) {
            long size = switch (op) {
                case AbiConstants.MRCE_OP_CREATE_CQ -> copy.getLong((int) CreateCqRespDescriptor.OFF_MAP_SIZE);
                case AbiConstants.MRCE_OP_CREATE_QP -> copy.getLong((int) CreateQpRespDescriptor.OFF_MAP_SIZE);
                default -> copy.getLong((int) CreateSrqRespDescriptor.OFF_MAP_SIZE);
            };
            try {
                map = LibC.mmap(size, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, fds[0], 0);
                synchronized (mappings) {
                    mappings.add(map);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        if (status == 0 && op == AbiConstants.MRCE_OP_HELLO && fds.length == 3) {
            try { // the doorbell page: the daemon closes its fd when respond returns
                map = LibC.mmap(
                        AbiConstants.MRCE_DB_PAGE_SIZE, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, fds[2], 0);
                synchronized (mappings) {
                    mappings.add(map);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        responses.add(new Response(op, seq, status, copy, fds.clone(), map));
    }

    @Override
    public void close(String reason) {
        closedReason = reason;
    }
}
