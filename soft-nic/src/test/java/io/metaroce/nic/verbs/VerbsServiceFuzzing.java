package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.metaroce.abi.CreateCqReqDescriptor;
import io.metaroce.abi.CreateQpReqDescriptor;
import io.metaroce.abi.CreateSrqReqDescriptor;
import io.metaroce.abi.HelloReqDescriptor;
import io.metaroce.abi.ModifyQpReqDescriptor;
import io.metaroce.abi.RegMrReqDescriptor;
import io.metaroce.abi.ReregMrReqDescriptor;
import io.metaroce.control.ControlProtocol;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.sys.LibC;
import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;

/**
 * Coverage-guided fuzzing (Jazzer) of the control protocol into the real {@link VerbsService} and
 * engine: each input is one provider session, HELLO then up to 24 requests of any op (and one past
 * the last) with fuzzer-written payloads of the size the framing admits, where the fuzzer can put
 * handles the session got earlier into the handle fields and a real buffer into REG_MR/REREG_MR.
 * Then the session closes. After every request exactly one response with its sequence number and a
 * plausible errno; after every session, no session left in the service and no file descriptor
 * leaked (checked every 1000 inputs); no exception may escape.
 *
 * <p>Runs in its own surefire execution with JAZZER_FUZZ=1 (soft-nic/pom.xml): 10^5 inputs in
 * every build, 10^7 with -Pfuzz-long (docs/fuzzing.md).
 */
class VerbsServiceFuzzing {
    private static final int OP_INVALID = MRCE_OP_MAX + 1;
    private static TestNode node;
    private static MemorySegment buffer;
    private static Arena arena;
    private static long sessionIds = 1_000_000;
    private static long inputs;
    private static long requests;
    private static long ok;
    private static int fdsAtStart;
    private static final long[] perOp = new long[OP_INVALID + 1];
    private static final long[] okPerOp = new long[OP_INVALID + 1];

    @FuzzTest(maxExecutions = 100_000)
    void session(FuzzedDataProvider data) throws Exception {
        if (node == null) {
            AtomicLong clock = new AtomicLong(1_000_000_000L);
            MemoryLink link = new MemoryLink(1, 0, 0, 10_000, 0, clock::get);
            MemoryLink.End end = link.end(Inet4.parse("198.18.0.1"), 4793);
            link.connect(end, link.end(Inet4.parse("198.18.0.2"), 4793));
            node = new TestNode(end, 4793, () -> clock.addAndGet(1000));
            arena = Arena.ofShared();
            buffer = arena.allocate(1 << 16, 4096);
            fdsAtStart = openFds();
        }
        inputs++;
        FakeSession session = new FakeSession(sessionIds++, LibC.getpid());
        List<Integer> handles = new ArrayList<>();
        lastPd = NO_HANDLE;
        lastCq = NO_HANDLE;
        int seq = 0;
        try {
            if (!data.consumeBoolean() || inputs == 1) {
                ByteBuffer hello = req(HelloReqDescriptor.SIZE);
                hello.putInt((int) HelloReqDescriptor.OFF_ABI_VERSION, MRCE_ABI_VERSION);
                call(session, MRCE_OP_HELLO, ++seq, hello, handles);
            }
            int n = data.consumeInt(1, 24);
            for (int i = 0; i < n && data.remainingBytes() > 0; i++) {
                int op = data.consumeInt(1, OP_INVALID);
                int size = op <= MRCE_OP_MAX ? ControlProtocol.requestSize(op) : 0;
                ByteBuffer p = req(size);
                if (data.consumeBoolean()) {
                    p.put(data.consumeBytes(size)).clear();
                } else { // a valid request, then a few fields overwritten
                    template(op, p, data.consumeBoolean());
                    for (int k = data.consumeInt(0, 3); k > 0 && size >= 4; k--) {
                        p.putInt(data.consumeInt(0, size / 4 - 1) * 4, data.consumeInt());
                    }
                }
                // handle fields come first in every request: let the fuzzer name live objects
                for (int off = 0; off + 4 <= Math.min(size, 16); off += 4) {
                    if (!handles.isEmpty() && data.consumeBoolean()) {
                        p.putInt(off, handles.get(data.consumeInt(0, handles.size() - 1)));
                    }
                }
                if ((op == MRCE_OP_REG_MR || op == MRCE_OP_REREG_MR) && data.consumeBoolean()) {
                    long addrOff = op == MRCE_OP_REG_MR ? RegMrReqDescriptor.OFF_ADDR : ReregMrReqDescriptor.OFF_ADDR;
                    long lenOff =
                            op == MRCE_OP_REG_MR ? RegMrReqDescriptor.OFF_LENGTH : ReregMrReqDescriptor.OFF_LENGTH;
                    long at = data.consumeLong(0, buffer.byteSize() - 1);
                    p.putLong((int) addrOff, buffer.address() + at);
                    p.putLong((int) lenOff, data.consumeLong(0, buffer.byteSize() - at));
                }
                call(session, op, ++seq, p, handles);
            }
        } finally {
            node.service.onSessionClosed(session);
            for (int i = 0; i < 4; i++) {
                node.pump();
            }
            for (MemorySegment m : session.mappings) {
                LibC.munmap(m);
            }
        }
        if (node.service.sessionCount() != 0) {
            throw new AssertionError("a closed session stayed in the service");
        }
        if (inputs % 1000 == 0 && openFds() > fdsAtStart + 64) {
            throw new AssertionError("file descriptors leak: " + fdsAtStart + " at start, " + openFds() + " now");
        }
    }

    private static void call(FakeSession session, int op, int seq, ByteBuffer payload, List<Integer> handles) {
        requests++;
        perOp[op]++;
        node.service.onRequest(session, op, seq, payload.rewind());
        FakeSession.Response r = null;
        for (int i = 0; i < 100 && r == null; i++) {
            for (FakeSession.Response x : session.responses) {
                if (x.seq() == seq) {
                    r = x;
                }
            }
            if (r == null) {
                node.pump();
            }
        }
        if (r == null) {
            throw new AssertionError("no response to op " + op + " (seq " + seq + ")");
        }
        session.responses.remove(r);
        if (!session.responses.isEmpty()) {
            throw new AssertionError("more than one response to op " + op);
        }
        if (r.op() != op || r.status() < 0 || r.status() > 4095) {
            throw new AssertionError("response op " + r.op() + " status " + r.status() + " to op " + op);
        }
        if (r.status() == 0) {
            ok++;
            okPerOp[op]++;
            if (r.payload().remaining() >= 4
                    && op != MRCE_OP_HELLO
                    && op != MRCE_OP_QUERY_QP
                    && op != MRCE_OP_QUERY_SRQ
                    && op != MRCE_OP_GET_ASYNC_EVENT) {
                handles.add(r.payload().getInt(0));
                if (op == MRCE_OP_ALLOC_PD) {
                    lastPd = r.payload().getInt(0);
                } else if (op == MRCE_OP_CREATE_CQ) {
                    lastCq = r.payload().getInt(0);
                }
            }
        }
    }

    /** The session's latest PD and CQ: what a valid request names. */
    private static int lastPd;

    private static int lastCq;

    /** A request the daemon would take (with the session's latest PD and CQ when {@code own}). */
    private static void template(int op, ByteBuffer p, boolean own) {
        if (own) {
            switch (op) {
                case MRCE_OP_REG_MR -> p.putInt((int) RegMrReqDescriptor.OFF_PD, lastPd);
                case MRCE_OP_CREATE_SRQ -> p.putInt((int) CreateSrqReqDescriptor.OFF_PD, lastPd);
                case MRCE_OP_CREATE_QP -> {
                    p.putInt((int) CreateQpReqDescriptor.OFF_PD, lastPd);
                    p.putInt((int) CreateQpReqDescriptor.OFF_SEND_CQ, lastCq);
                    p.putInt((int) CreateQpReqDescriptor.OFF_RECV_CQ, lastCq);
                }
                default -> {}
            }
        }
        switch (op) {
            case MRCE_OP_REG_MR -> {
                p.putInt((int) RegMrReqDescriptor.OFF_ACCESS, Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE);
                p.putLong((int) RegMrReqDescriptor.OFF_ADDR, buffer.address());
                p.putLong((int) RegMrReqDescriptor.OFF_LENGTH, 4096);
                p.putLong((int) RegMrReqDescriptor.OFF_IOVA, buffer.address());
            }
            case MRCE_OP_CREATE_CQ -> {
                p.putInt((int) CreateCqReqDescriptor.OFF_CQE, 16);
                p.putInt((int) CreateCqReqDescriptor.OFF_CHANNEL, NO_HANDLE);
            }
            case MRCE_OP_CREATE_QP -> {
                p.putInt((int) CreateQpReqDescriptor.OFF_SRQ, NO_HANDLE);
                p.putInt((int) CreateQpReqDescriptor.OFF_QP_TYPE, Ibv.QPT_RC);
                p.putInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_WR, 8);
                p.putInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_WR, 8);
                p.putInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_SGE, 1);
                p.putInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_SGE, 1);
            }
            case MRCE_OP_CREATE_SRQ -> {
                p.putInt((int) CreateSrqReqDescriptor.OFF_MAX_WR, 8);
                p.putInt((int) CreateSrqReqDescriptor.OFF_MAX_SGE, 1);
            }
            case MRCE_OP_MODIFY_QP -> {
                QpAttrs a = new QpAttrs();
                a.qpState = Ibv.QPS_INIT;
                a.portNum = 1;
                a.qpAccessFlags = Ibv.ACCESS_LOCAL_WRITE;
                p.putInt(
                        (int) ModifyQpReqDescriptor.OFF_ATTR_MASK,
                        Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS);
                a.write(p, (int) ModifyQpReqDescriptor.OFF_ATTR);
            }
            default -> {}
        }
    }

    private static ByteBuffer req(long size) {
        return ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static int openFds() {
        String[] fds = new File("/proc/self/fd").list();
        return fds == null ? 0 : fds.length;
    }

    @AfterAll
    static void report() {
        if (node == null) {
            return;
        }
        StringBuilder b = new StringBuilder();
        for (int op = 1; op <= OP_INVALID; op++) {
            b.append(op == 1 ? "" : ", ")
                    .append(op <= MRCE_OP_MAX ? ControlProtocol.opName(op) : "invalid")
                    .append(' ')
                    .append(okPerOp[op])
                    .append('/')
                    .append(perOp[op]);
        }
        System.out.println("VerbsServiceFuzzing: " + inputs + " inputs (sessions), " + requests + " requests, " + ok
                + " succeeded; open fds " + fdsAtStart + " at start, " + openFds() + " at end");
        System.out.println("VerbsServiceFuzzing: succeeded/sent per op: " + b);
        node.close();
        arena.close();
        node = null;
    }
}
