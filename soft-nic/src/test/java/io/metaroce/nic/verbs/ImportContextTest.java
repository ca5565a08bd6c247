package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.ContextTokenDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.ImportContextReqDescriptor;
import io.metaroce.abi.ImportMrReqDescriptor;
import io.metaroce.abi.ImportMrRespDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Sharing a context between connections (ops 26..31, behind ibv_import_device, ibv_import_pd,
 * ibv_import_mr): who may join, what an import references, what each side may destroy, and what
 * is left when a member goes.
 */
class ImportContextTest {
    private static final MethodHandle DUP = LibC.link("dup", JAVA_INT, JAVA_INT);
    private final AtomicLong clock = new AtomicLong();
    private TestNode exporter;
    private Arena arena;

    @BeforeEach
    void setUp() throws Exception {
        exporter = TestNode.onLink(clock::get);
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() {
        exporter.close();
        arena.close();
    }

    private static ByteBuffer importContextReq(int fd) {
        ByteBuffer b = TestNode.req(ImportContextReqDescriptor.SIZE);
        b.putInt(ImportContextReqDescriptor.OFF_FD, fd);
        return b;
    }

    private static ByteBuffer importMrReq(int pd, int mr) {
        ByteBuffer b = TestNode.req(ImportMrReqDescriptor.SIZE);
        b.putInt(ImportMrReqDescriptor.OFF_PD, pd);
        b.putInt(ImportMrReqDescriptor.OFF_HANDLE, mr);
        return b;
    }

    private static int dup(int fd) throws Throwable {
        int d = (int) DUP.invokeExact(LibC.callState(), fd);
        assertThat(d).isNotNegative();
        return d;
    }

    private static int status(TestNode n, int op, ByteBuffer req) {
        return n.call(op, req).status();
    }

    /** CONTEXT_FD right after HELLO: the daemon's memfd, carrying the device's name. */
    private int contextFd(TestNode n) throws Exception {
        n.hello();
        FakeSession.Response r = n.call(MRCE_OP_CONTEXT_FD, TestNode.req(0));
        assertThat(r.status()).isZero();
        assertThat(r.fds()).hasSize(1);
        byte[] token = Files.readAllBytes(Path.of("/proc/self/fd/" + r.fds()[0]));
        ByteBuffer t = ByteBuffer.wrap(token).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(token).hasSize(ContextTokenDescriptor.SIZE);
        assertThat(t.getInt(ContextTokenDescriptor.OFF_MAGIC)).isEqualTo(MRCE_CONTEXT_MAGIC);
        assertThat(t.getInt(ContextTokenDescriptor.OFF_ABI_VERSION)).isEqualTo(MRCE_ABI_VERSION);
        assertThat(new String(token, ContextTokenDescriptor.OFF_DEV_NAME, 5)).isEqualTo("mrce0");
        assertThat(token[ContextTokenDescriptor.OFF_DEV_NAME + 5]).isZero();
        return r.fds()[0];
    }

    @Test
    void onlyTheHolderOfALiveContextMemfdJoins() throws Throwable {
        int token = contextFd(exporter);
        assertThat(status(exporter, MRCE_OP_CONTEXT_FD, TestNode.req(0)))
                .as("second")
                .isEqualTo(Errno.EEXIST);
        TestNode importer = exporter.connectionOf(0);
        assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(token)))
                .as("before HELLO")
                .isEqualTo(Errno.EPROTO);
        FakeSession.Response hello = importer.hello();
        assertThat(status(importer, MRCE_OP_IMPORT_PD, TestNode.handleReq(1)))
                .as("no context")
                .isEqualTo(Errno.EINVAL);
        assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(-1)))
                .isEqualTo(Errno.EBADF);
        assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(1 << 20)))
                .as("no such fd")
                .isEqualTo(Errno.EBADF);
        assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(hello.fds()[0])))
                .as("an eventfd of the daemon")
                .isEqualTo(Errno.EINVAL);
        // A forged token: the right name and contents, another file.
        int forged = LibC.memfdCreate("mrce-context", LibC.MFD_CLOEXEC);
        try {
            MemorySegment copy = arena.allocate(ContextTokenDescriptor.SIZE);
            MemorySegment.copy(
                    Files.readAllBytes(Path.of("/proc/self/fd/" + token)),
                    0,
                    copy,
                    java.lang.foreign.ValueLayout.JAVA_BYTE,
                    0,
                    ContextTokenDescriptor.SIZE);
            assertThat(LibC.write(forged, copy, ContextTokenDescriptor.SIZE)).isEqualTo(ContextTokenDescriptor.SIZE);
            assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(forged)))
                    .as("forged")
                    .isEqualTo(Errno.EINVAL);
        } finally {
            LibC.close(forged);
        }
        int held = dup(token); // the importer's copy, by another number
        try {
            assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(held)))
                    .isZero();
            assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(held)))
                    .isEqualTo(Errno.EEXIST);
            assertThat(status(importer, MRCE_OP_CONTEXT_FD, TestNode.req(0))).isEqualTo(Errno.EEXIST);
            TestNode late = exporter.connectionOf(0);
            late.hello();
            late.allocPd();
            assertThat(status(late, MRCE_OP_IMPORT_CONTEXT, importContextReq(held)))
                    .as("has objects")
                    .isEqualTo(Errno.EEXIST);
            assertThat(exporter.service.contextCount()).isEqualTo(1);

            // The context lives while a member does: the exporter goes, the importer stays.
            exporter.service.onSessionClosed(exporter.session);
            exporter.pump();
            assertThat(exporter.service.contextCount()).isEqualTo(1);
            importer.service.onSessionClosed(importer.session);
            importer.pump();
            assertThat(exporter.service.contextCount()).isZero();
            TestNode after = exporter.connectionOf(0);
            after.hello();
            assertThat(status(after, MRCE_OP_IMPORT_CONTEXT, importContextReq(held)))
                    .as("a context with no member left")
                    .isEqualTo(Errno.EINVAL);
        } finally {
            LibC.close(held);
        }
    }

    @Test
    void importedPdAndMrAreReferencesTheOwnerDestroys() throws Throwable {
        int token = contextFd(exporter);
        int pd = exporter.allocPd();
        int spare = exporter.allocPd();
        MemorySegment buf = arena.allocate(8192, 4096);
        int[] mr = exporter.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE);
        TestNode importer = exporter.connectionOf(0);
        importer.hello();
        int held = dup(token);
        try {
            assertThat(status(importer, MRCE_OP_IMPORT_CONTEXT, importContextReq(held)))
                    .isZero();
        } finally {
            LibC.close(held);
        }
        assertThat(status(importer, MRCE_OP_IMPORT_MR, importMrReq(pd, mr[0])))
                .as("PD not imported yet")
                .isEqualTo(Errno.ENOENT);
        assertThat(status(importer, MRCE_OP_IMPORT_PD, TestNode.handleReq(pd))).isZero();
        assertThat(status(importer, MRCE_OP_IMPORT_PD, TestNode.handleReq(pd))).isEqualTo(Errno.EEXIST);
        assertThat(status(importer, MRCE_OP_IMPORT_PD, TestNode.handleReq(4242)))
                .as("unknown handle")
                .isEqualTo(Errno.ENOENT);
        assertThat(status(importer, MRCE_OP_IMPORT_PD, TestNode.handleReq(spare)))
                .isZero();
        assertThat(status(importer, MRCE_OP_IMPORT_MR, importMrReq(spare, mr[0])))
                .as("MR on another PD")
                .isEqualTo(Errno.EINVAL);
        assertThat(status(importer, MRCE_OP_IMPORT_MR, importMrReq(pd, 4242))).isEqualTo(Errno.ENOENT);
        FakeSession.Response imp = importer.call(MRCE_OP_IMPORT_MR, importMrReq(pd, mr[0]));
        assertThat(imp.status()).isZero();
        ByteBuffer m = imp.payload();
        assertThat(m.getInt(ImportMrRespDescriptor.OFF_HANDLE)).isEqualTo(mr[0]);
        assertThat(m.getInt(ImportMrRespDescriptor.OFF_LKEY)).isEqualTo(mr[1]);
        assertThat(m.getInt(ImportMrRespDescriptor.OFF_RKEY)).isEqualTo(mr[2]);
        assertThat(m.getInt(ImportMrRespDescriptor.OFF_ACCESS))
                .isEqualTo(Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE);
        assertThat(m.getLong(ImportMrRespDescriptor.OFF_ADDR)).isEqualTo(buf.address());
        assertThat(m.getLong(ImportMrRespDescriptor.OFF_LENGTH)).isEqualTo(8192);

        // The importer's own objects on the imported PD: handles of the shared space, the same PD.
        MemorySegment own = arena.allocate(4096, 4096);
        int[] ownMr = importer.regMr(pd, own, Ibv.ACCESS_LOCAL_WRITE);
        assertThat(ownMr[0]).isNotIn(pd, spare, mr[0]);
        Mr mine = exporter.engine.datapath().mrs.byLkey(ownMr[1]);
        Mr theirs = exporter.engine.datapath().mrs.byLkey(mr[1]);
        assertThat(mine.pd).isSameAs(theirs.pd);
        assertThat(mine.pid).as("each MR in its own process's address space").isNotEqualTo(theirs.pid);
        TestNode.CqHandles cq = importer.createCq(4, NO_HANDLE);
        TestNode.QpHandles qp = importer.createQp(pd, cq.handle(), cq.handle(), 4, 1, 0);
        assertThat(qp.handle()).isNotIn(pd, spare, mr[0], ownMr[0]);

        // Destroying is the owner's: the importer unimports.
        assertThat(status(importer, MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd))).isEqualTo(Errno.EPERM);
        assertThat(status(importer, MRCE_OP_DEREG_MR, TestNode.handleReq(mr[0])))
                .isEqualTo(Errno.EPERM);
        assertThat(status(importer, MRCE_OP_UNIMPORT_PD, TestNode.handleReq(pd)))
                .as("its QP and MR use it")
                .isEqualTo(Errno.EBUSY);
        assertThat(status(exporter, MRCE_OP_DEALLOC_PD, TestNode.handleReq(spare)))
                .as("imported")
                .isEqualTo(Errno.EBUSY);
        assertThat(status(importer, MRCE_OP_UNIMPORT_PD, TestNode.handleReq(spare)))
                .isZero();
        assertThat(status(importer, MRCE_OP_UNIMPORT_PD, TestNode.handleReq(spare)))
                .as("unimported")
                .isEqualTo(Errno.ENOENT);
        assertThat(status(importer, MRCE_OP_CREATE_SRQ, srqReq(spare)))
                .as("use after unimport")
                .isEqualTo(Errno.ENOENT);
        assertThat(status(exporter, MRCE_OP_DEALLOC_PD, TestNode.handleReq(spare)))
                .isZero();
        assertThat(status(importer, MRCE_OP_IMPORT_PD, TestNode.handleReq(spare)))
                .as("stale handle")
                .isEqualTo(Errno.ENOENT);
        assertThat(status(importer, MRCE_OP_UNIMPORT_MR, TestNode.handleReq(mr[0])))
                .isZero();
        assertThat(status(importer, MRCE_OP_UNIMPORT_MR, TestNode.handleReq(mr[0])))
                .isEqualTo(Errno.ENOENT);
        assertThat(exporter.engine.datapath().mrs.byRkey(mr[2]))
                .as("unimport leaves the MR")
                .isSameAs(theirs);
        assertThat(status(exporter, MRCE_OP_DEREG_MR, TestNode.handleReq(mr[0])))
                .isZero();
        assertThat(status(importer, MRCE_OP_IMPORT_MR, importMrReq(pd, mr[0])))
                .as("deregistered")
                .isEqualTo(Errno.ENOENT);

        // The exporter exits: its objects go, the importer's stay on the PD it still references.
        exporter.service.onSessionClosed(exporter.session);
        exporter.pump();
        assertThat(exporter.engine.datapath().mrs.byLkey(ownMr[1])).isSameAs(mine);
        assertThat(exporter.engine.activeQps()).isEqualTo(1);
        assertThat(status(importer, MRCE_OP_DESTROY_QP, TestNode.handleReq(qp.handle())))
                .isZero();
        assertThat(status(importer, MRCE_OP_DEREG_MR, TestNode.handleReq(ownMr[0])))
                .isZero();
        assertThat(status(importer, MRCE_OP_UNIMPORT_PD, TestNode.handleReq(pd)))
                .isZero();
        importer.service.onSessionClosed(importer.session);
        importer.pump();
        assertThat(exporter.service.sessionCount()).isZero();
        assertThat(exporter.service.contextCount()).isZero();
    }

    private static ByteBuffer srqReq(int pd) {
        ByteBuffer b = TestNode.req(io.metaroce.abi.CreateSrqReqDescriptor.SIZE);
        b.putInt(io.metaroce.abi.CreateSrqReqDescriptor.OFF_PD, pd);
        b.putInt(io.metaroce.abi.CreateSrqReqDescriptor.OFF_MAX_WR, 4);
        b.putInt(io.metaroce.abi.CreateSrqReqDescriptor.OFF_MAX_SGE, 1);
        return b;
    }
}
