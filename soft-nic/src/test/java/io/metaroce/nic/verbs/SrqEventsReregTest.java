package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AsyncEventDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.HelloRespDescriptor;
import io.metaroce.abi.ModifySrqReqDescriptor;
import io.metaroce.abi.ReregMrReqDescriptor;
import io.metaroce.abi.SrqAttrDescriptor;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.model.AsyncEventQueue;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.transport.Qp;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The ABI v2 control ops: SRQs, async events, REREG_MR, the new limits. */
class SrqEventsReregTest {
    private final AtomicLong clock = new AtomicLong();
    private TestNode node;
    private final Arena arena = Arena.ofShared();

    private TestNode node(Limits limits) throws Exception {
        MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, clock::get);
        MemoryLink.End end = link.end(Inet4.parse("198.18.0.1"), 4793);
        link.connect(end, link.end(Inet4.parse("198.18.0.2"), 4793));
        node = new TestNode(end, 4793, clock::get, limits);
        return node;
    }

    @AfterEach
    void tearDown() {
        if (node != null) {
            node.close();
        }
        arena.close();
    }

    private static Limits limits(int maxQp, int maxCq, int maxSrq, int maxMr, int maxPd) {
        Limits d = Limits.defaults();
        return new Limits(
                maxQp,
                d.maxQpWr(),
                d.maxSge(),
                maxCq,
                d.maxCqe(),
                maxMr,
                d.maxMrSize(),
                maxPd,
                d.maxInline(),
                d.maxQpRdAtom(),
                d.maxCompChannel(),
                maxSrq,
                64,
                4,
                d.maxQpInitRdAtom(),
                d.atomicCap(),
                d.maxAh());
    }

    private static ByteBuffer modifySrq(int handle, int mask, int maxWr, int limit) {
        ByteBuffer b = TestNode.req(ModifySrqReqDescriptor.SIZE);
        b.putInt((int) ModifySrqReqDescriptor.OFF_HANDLE, handle);
        b.putInt((int) ModifySrqReqDescriptor.OFF_ATTR_MASK, mask);
        b.putInt((int) ModifySrqReqDescriptor.OFF_MAX_WR, maxWr);
        b.putInt((int) ModifySrqReqDescriptor.OFF_SRQ_LIMIT, limit);
        return b;
    }

    private int[] querySrq(int handle) {
        FakeSession.Response r = node.call(MRCE_OP_QUERY_SRQ, TestNode.handleReq(handle));
        assertThat(r.status()).isZero();
        return new int[] {
            r.payload().getInt((int) SrqAttrDescriptor.OFF_MAX_WR),
            r.payload().getInt((int) SrqAttrDescriptor.OFF_MAX_SGE),
            r.payload().getInt((int) SrqAttrDescriptor.OFF_SRQ_LIMIT)
        };
    }

    /** {event_type, element} or null when GET_ASYNC_EVENT says EAGAIN. */
    private int[] asyncEvent() {
        FakeSession.Response r = node.call(MRCE_OP_GET_ASYNC_EVENT, TestNode.req(0));
        if (r.status() == Errno.EAGAIN) {
            assertThat(r.payload().remaining()).isZero();
            return null;
        }
        assertThat(r.status()).isZero();
        assertThat(r.payload().remaining()).isEqualTo(AsyncEventDescriptor.SIZE);
        return new int[] {
            r.payload().getInt((int) AsyncEventDescriptor.OFF_EVENT_TYPE),
            r.payload().getInt((int) AsyncEventDescriptor.OFF_ELEMENT)
        };
    }

    /** The counter of an eventfd, from /proc (reading it could block). */
    private static long eventfdCount(int fd) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
            if (line.startsWith("eventfd-count:")) {
                return Long.parseLong(line.substring(14).trim(), 16);
            }
        }
        throw new AssertionError("fd " + fd + " is not an eventfd");
    }

    private static boolean isSemaphore(int fd) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
            if (line.startsWith("eventfd-semaphore:")) {
                return line.substring(18).trim().equals("1");
            }
        }
        return false;
    }

    @Test
    void helloReportsTheSrqAtomicAndAhLimits() throws Exception {
        node(Limits.defaults());
        FakeSession.Response r = node.hello();
        ByteBuffer p = r.payload();
        assertThat(p.remaining()).isEqualTo(176);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_MAX_SRQ)).isEqualTo(1024);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_MAX_SRQ_WR)).isEqualTo(16384);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_MAX_SRQ_SGE)).isEqualTo(MRCE_MAX_SGE);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_MAX_QP_INIT_RD_ATOM)).isEqualTo(16);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_ATOMIC_CAP)).isEqualTo(1);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_MAX_AH)).isEqualTo(65536);
        assertThat(isSemaphore(r.fds()[1])).as("async eventfd is EFD_SEMAPHORE").isTrue();
        assertThat(eventfdCount(r.fds()[1])).isZero();
    }

    @Test
    void srqLifecycleAndArgumentErrors() throws Exception {
        node(limits(16, 16, 4, 16, 4));
        node.hello();
        int pd = node.allocPd();
        assertThat(node.createSrqRaw(pd + 50, 8, 1, 0).status()).as("bad pd").isEqualTo(Errno.ENOENT);
        assertThat(node.createSrqRaw(pd, 0, 1, 0).status()).as("max_wr 0").isEqualTo(Errno.EINVAL);
        assertThat(node.createSrqRaw(pd, 65, 1, 0).status()).as("> max_srq_wr").isEqualTo(Errno.EINVAL);
        assertThat(node.createSrqRaw(pd, 8, 5, 0).status()).as("> max_srq_sge").isEqualTo(Errno.EINVAL);
        assertThat(node.createSrqRaw(pd, 8, 1, 9).status()).as("limit > max_wr").isEqualTo(Errno.EINVAL);

        TestNode.SrqHandles srq = node.createSrq(pd, 10, 2, 0);
        assertThat(srq.maxWr()).isEqualTo(16);
        assertThat(srq.maxSge()).isEqualTo(2);
        assertThat(srq.ring().kind()).isEqualTo(MRCE_RING_KIND_SRQ);
        assertThat(srq.ring().slotCount()).isEqualTo(16);
        assertThat(srq.ring().slotSize()).isEqualTo((int) WqeDescriptor.SIZE);
        assertThat(querySrq(srq.handle())).containsExactly(16, 2, 0);

        assertThat(node.call(MRCE_OP_MODIFY_SRQ, modifySrq(srq.handle(), 2, 0, 5))
                        .status())
                .isZero();
        assertThat(querySrq(srq.handle())).containsExactly(16, 2, 5);
        assertThat(node.call(MRCE_OP_MODIFY_SRQ, modifySrq(srq.handle(), 1, 32, 0))
                        .status())
                .as("resize")
                .isEqualTo(Errno.EINVAL);
        assertThat(node.call(MRCE_OP_MODIFY_SRQ, modifySrq(srq.handle(), 3, 16, 1))
                        .status())
                .as("resize with limit")
                .isEqualTo(Errno.EINVAL);
        assertThat(node.call(MRCE_OP_MODIFY_SRQ, modifySrq(srq.handle(), 2, 0, 17))
                        .status())
                .as("limit > max_wr")
                .isEqualTo(Errno.EINVAL);
        assertThat(node.call(MRCE_OP_MODIFY_SRQ, modifySrq(srq.handle(), 4, 0, 0))
                        .status())
                .as("unknown mask bit")
                .isEqualTo(Errno.EINVAL);
        assertThat(querySrq(srq.handle())).as("failed modifies change nothing").containsExactly(16, 2, 5);
        assertThat(node.call(MRCE_OP_MODIFY_SRQ, modifySrq(777, 2, 0, 1)).status())
                .isEqualTo(Errno.ENOENT);
        assertThat(node.call(MRCE_OP_QUERY_SRQ, TestNode.handleReq(777)).status())
                .isEqualTo(Errno.ENOENT);

        // A QP on the SRQ: receive capabilities are ignored (0 allowed, reported 0).
        TestNode.CqHandles cq = node.createCq(8, NO_HANDLE);
        FakeSession.Response qpr = node.createQpRaw(pd, cq.handle(), cq.handle(), srq.handle(), Ibv.QPT_RC, 4, 1, 0);
        assertThat(qpr.status()).isZero();
        int qpHandle = qpr.payload().getInt(0);
        assertThat(qpr.payload().getInt((int) io.metaroce.abi.CreateQpRespDescriptor.OFF_MAX_RECV_WR))
                .isZero();
        node.pump();
        Qp qp = node.engine.qpByQpn(qpr.payload().getInt(4));
        assertThat(qp.srq).isNotNull();
        assertThat(qp.srq.handle).isEqualTo(srq.handle());
        assertThat(node.createQpRaw(pd, cq.handle(), cq.handle(), 999, Ibv.QPT_RC, 4, 1, 0)
                        .status())
                .as("unknown SRQ")
                .isEqualTo(Errno.ENOENT);
        assertThat(node.call(MRCE_OP_DESTROY_SRQ, TestNode.handleReq(srq.handle()))
                        .status())
                .isEqualTo(Errno.EBUSY);
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .isEqualTo(Errno.EBUSY);

        // Another connection sees none of it.
        FakeSession other = new FakeSession(515151, LibC.getpid());
        ByteBuffer hello = TestNode.req(8);
        hello.putInt(0, MRCE_ABI_VERSION);
        node.service.onRequest(other, MRCE_OP_HELLO, 1, hello);
        node.service.onRequest(other, MRCE_OP_QUERY_SRQ, 2, TestNode.handleReq(srq.handle()));
        node.service.onRequest(other, MRCE_OP_DESTROY_SRQ, 3, TestNode.handleReq(srq.handle()));
        node.service.onRequest(other, MRCE_OP_MODIFY_SRQ, 4, modifySrq(srq.handle(), 2, 0, 1));
        node.service.onRequest(other, MRCE_OP_GET_ASYNC_EVENT, 5, TestNode.req(0));
        node.pump();
        assertThat(other.responses)
                .extracting(FakeSession.Response::status)
                .containsExactly(0, Errno.ENOENT, Errno.ENOENT, Errno.ENOENT, Errno.EAGAIN);
        node.service.onSessionClosed(other);
        node.pump();

        assertThat(node.call(MRCE_OP_DESTROY_QP, TestNode.handleReq(qpHandle)).status())
                .isZero();
        assertThat(node.call(MRCE_OP_DESTROY_SRQ, TestNode.handleReq(srq.handle()))
                        .status())
                .isZero();
        assertThat(node.call(MRCE_OP_DESTROY_SRQ, TestNode.handleReq(srq.handle()))
                        .status())
                .isEqualTo(Errno.ENOENT);
        assertThat(node.call(MRCE_OP_DESTROY_CQ, TestNode.handleReq(cq.handle()))
                        .status())
                .isZero();
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .isZero();
    }

    @Test
    void theSrqLimitEventFiresOnceWhenFewerThanTheLimitRemainAndDisarms() {
        MemorySegment ring = arena.allocate(Srq.mapSize(8), 4096);
        AsyncEventQueue events = new AsyncEventQueue(-1, 16);
        Srq srq = new Srq(7, LibC.getpid(), new Pd(1, 1), ring, 8, 1);
        srq.asyncEvents = events;
        WqeFlyweight w = new WqeFlyweight();
        for (int i = 0; i < 5; i++) {
            w.wrap(srq.ring.segment(), srq.ring.slotOffset(i)).wrId(100 + i).numSge(0);
        }
        srq.ring.producerRelease(5);
        srq.arm(3);
        WqeFlyweight seen = new WqeFlyweight();
        long[] ids = new long[5];
        for (int i = 0; i < 2; i++) {
            assertThat(srq.peek(seen)).isTrue();
            ids[i] = seen.wrId();
            srq.consume();
        }
        assertThat(srq.posted()).isEqualTo(3);
        assertThat(events.size()).as("3 left: not below the limit of 3").isZero();
        assertThat(srq.peek(seen)).isTrue();
        ids[2] = seen.wrId();
        srq.consume();
        assertThat(events.poll()).isEqualTo(((long) Ibv.EVENT_SRQ_LIMIT_REACHED << 32) | 7);
        assertThat(srq.limit()).as("disarmed").isZero();
        for (int i = 3; i < 5; i++) {
            assertThat(srq.peek(seen)).isTrue();
            ids[i] = seen.wrId();
            srq.consume();
        }
        assertThat(ids).containsExactly(100, 101, 102, 103, 104);
        assertThat(srq.peek(seen)).isFalse();
        assertThat(events.size()).as("fires once per arming").isZero();
        assertThat(srq.ring.consumerAcquire()).isEqualTo(5);
    }

    @Test
    void theAsyncQueueIsBoundedFifoAndSignalsOncePerEvent() throws Exception {
        int fd = LibC.eventfd(0, LibC.EFD_SEMAPHORE | LibC.EFD_CLOEXEC);
        try {
            AsyncEventQueue q = new AsyncEventQueue(fd, MRCE_MAX_ASYNC_EVENTS);
            assertThat(q.poll()).isEqualTo(-1);
            for (int i = 0; i < MRCE_MAX_ASYNC_EVENTS + 5; i++) {
                q.post(Ibv.EVENT_QP_FATAL, i);
            }
            assertThat(q.size()).isEqualTo(MRCE_MAX_ASYNC_EVENTS);
            assertThat(q.dropped()).isEqualTo(5);
            assertThat(eventfdCount(fd)).as("one write per queued event").isEqualTo(MRCE_MAX_ASYNC_EVENTS);
            for (int i = 0; i < MRCE_MAX_ASYNC_EVENTS; i++) {
                assertThat(q.poll()).isEqualTo(((long) Ibv.EVENT_QP_FATAL << 32) | i);
            }
            assertThat(q.poll()).isEqualTo(-1);
            q.post(Ibv.EVENT_SRQ_LIMIT_REACHED, -2);
            assertThat(q.poll()).as("element is unsigned").isEqualTo(((long) 15 << 32) | 0xfffffffeL);
            q.post(Ibv.EVENT_COMM_EST, 1);
            q.close();
            q.post(Ibv.EVENT_COMM_EST, 2);
            assertThat(q.poll())
                    .as("closed: queued events dropped, later ones ignored")
                    .isEqualTo(-1);
            assertThat(eventfdCount(fd)).isEqualTo(MRCE_MAX_ASYNC_EVENTS + 2);
        } finally {
            LibC.close(fd);
        }
    }

    @Test
    void getAsyncEventReturnsQpFatalPortAndLastWqeEventsInOrderThenEagain() throws Exception {
        node(Limits.defaults());
        FakeSession.Response hello = node.hello();
        int asyncFd = hello.fds()[1];
        assertThat(asyncEvent()).as("none queued").isNull();
        int pd = node.allocPd();
        TestNode.CqHandles cq = node.createCq(8, NO_HANDLE);
        TestNode.SrqHandles srq = node.createSrq(pd, 8, 1, 0);
        TestNode.QpHandles plain = node.createQp(pd, cq.handle(), cq.handle(), 4, 1, 0);
        TestNode.QpHandles onSrq = node.createQp(pd, cq.handle(), cq.handle(), srq.handle(), Ibv.QPT_RC, 4, 1, 0);
        // The engine thread (this test drives it) moves both to ERR on a transport error.
        node.pump();
        node.engine.qpByQpn(plain.qpn()).fatal(Ibv.EVENT_QP_FATAL);
        node.engine.qpByQpn(onSrq.qpn()).fatal(Ibv.EVENT_QP_ACCESS_ERR);
        node.engine.qpByQpn(onSrq.qpn()).fatal(Ibv.EVENT_QP_FATAL); // already in ERR: nothing
        node.service.linkChanged(false);
        node.service.linkChanged(false); // no change: no event
        node.service.linkChanged(true);
        assertThat(eventfdCount(asyncFd)).isEqualTo(5);
        assertThat(asyncEvent()).containsExactly(Ibv.EVENT_QP_FATAL, plain.handle());
        assertThat(asyncEvent()).containsExactly(Ibv.EVENT_QP_ACCESS_ERR, onSrq.handle());
        assertThat(asyncEvent()).containsExactly(Ibv.EVENT_QP_LAST_WQE_REACHED, onSrq.handle());
        assertThat(asyncEvent()).containsExactly(Ibv.EVENT_PORT_ERR, 1);
        assertThat(asyncEvent()).containsExactly(Ibv.EVENT_PORT_ACTIVE, 1);
        assertThat(asyncEvent()).isNull();
        assertThat(node.queryQp(plain.handle()).qpState).isEqualTo(Ibv.QPS_ERR);
        assertThat(node.hello().status()).isEqualTo(Errno.EEXIST);
    }

    private FakeSession.Response rereg(int handle, int flags, int pd, int access, long addr, long len) {
        ByteBuffer b = TestNode.req(ReregMrReqDescriptor.SIZE);
        b.putInt((int) ReregMrReqDescriptor.OFF_HANDLE, handle);
        b.putInt((int) ReregMrReqDescriptor.OFF_FLAGS, flags);
        b.putInt((int) ReregMrReqDescriptor.OFF_PD, pd);
        b.putInt((int) ReregMrReqDescriptor.OFF_ACCESS, access);
        b.putLong((int) ReregMrReqDescriptor.OFF_ADDR, addr);
        b.putLong((int) ReregMrReqDescriptor.OFF_LENGTH, len);
        b.putLong((int) ReregMrReqDescriptor.OFF_IOVA, addr);
        return node.call(MRCE_OP_REREG_MR, b);
    }

    @Test
    void reregMrReplacesKeysRevokesTheOldOnesAndLeavesTheRegionAloneOnError() throws Exception {
        node(Limits.defaults());
        node.hello();
        int pd = node.allocPd();
        int pd2 = node.allocPd();
        MemorySegment a = arena.allocate(8192, 4096);
        MemorySegment b = arena.allocate(4096, 4096);
        MrTable mrs = node.engine.datapath().mrs;
        int[] mr = node.regMr(pd, a, Ibv.ACCESS_LOCAL_WRITE);
        Mr before = mrs.byLkey(mr[1]);

        assertThat(rereg(mr[0], 0, 0, 0, 0, 0).status()).as("no flag").isEqualTo(Errno.EINVAL);
        assertThat(rereg(mr[0], 8, 0, 0, 0, 0).status()).as("unknown flag").isEqualTo(Errno.EINVAL);
        assertThat(rereg(mr[0] + 100, 4, 0, 0, 0, 0).status()).as("bad handle").isEqualTo(Errno.ENOENT);
        assertThat(rereg(mr[0], 2, pd + 100, 0, 0, 0).status()).as("bad pd").isEqualTo(Errno.ENOENT);
        assertThat(rereg(mr[0], 4, 0, Ibv.ACCESS_REMOTE_WRITE, 0, 0).status())
                .as("remote write without local write")
                .isEqualTo(Errno.EINVAL);
        assertThat(rereg(mr[0], 1, 0, 0, 4096, 4096).status()).as("unmapped").isEqualTo(Errno.EFAULT);
        assertThat(rereg(mr[0], 1, 0, 0, b.address(), 0).status()).as("empty").isEqualTo(Errno.EINVAL);
        assertThat(mrs.byLkey(mr[1])).as("failed rereg: unchanged").isSameAs(before);
        assertThat(before.live()).isTrue();

        // access
        FakeSession.Response r = rereg(mr[0], 4, 0, Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_READ, 0, 0);
        assertThat(r.status()).isZero();
        int lkey = r.payload().getInt(4);
        int rkey = r.payload().getInt(8);
        assertThat(r.payload().getInt(0)).as("same handle").isEqualTo(mr[0]);
        assertThat(lkey).isNotEqualTo(mr[1]);
        assertThat(mrs.byLkey(mr[1])).as("old lkey gone").isNull();
        assertThat(mrs.byRkey(mr[2])).as("old rkey gone").isNull();
        assertThat(before.live()).as("revoked on the engine before the answer").isFalse();
        Mr now = mrs.byLkey(lkey);
        assertThat(now.access).isEqualTo(Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_READ);
        assertThat(now.addr).isEqualTo(a.address());
        assertThat(now.length).isEqualTo(8192);
        assertThat(mrs.byRkey(rkey)).isSameAs(now);

        // translation and PD together
        r = rereg(mr[0], 1 | 2, pd2, 0, b.address(), 4096);
        assertThat(r.status()).isZero();
        Mr moved = mrs.byLkey(r.payload().getInt(4));
        assertThat(moved.addr).isEqualTo(b.address());
        assertThat(moved.length).isEqualTo(4096);
        assertThat(moved.pd.handle).isEqualTo(pd2);
        assertThat(moved.access).as("access kept").isEqualTo(now.access);
        assertThat(now.live()).isFalse();
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .as("pd no longer used")
                .isZero();
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd2)).status())
                .isEqualTo(Errno.EBUSY);
        assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(mr[0])).status())
                .isZero();
        assertThat(moved.live()).isFalse();
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd2)).status())
                .isZero();
    }

    @Test
    void deviceLimitsHoldAcrossConnectionsAndComeBackWhenObjectsGo() throws Exception {
        node(limits(1, 2, 1, 1, 2));
        node.hello();
        int pd = node.allocPd();
        MemorySegment buf = arena.allocate(4096, 4096);
        node.regMr(pd, buf, 0);
        assertThat(node.regMrRaw(pd, buf.address(), 4096, 0).status())
                .as("max_mr")
                .isEqualTo(Errno.ENOMEM);
        TestNode.CqHandles cq = node.createCq(4, NO_HANDLE);
        node.createSrq(pd, 4, 1, 0);
        assertThat(node.createSrqRaw(pd, 4, 1, 0).status()).as("max_srq").isEqualTo(Errno.ENOMEM);
        node.createQp(pd, cq.handle(), cq.handle(), 4, 1, 0);
        assertThat(node.createQpRaw(pd, cq.handle(), cq.handle(), Ibv.QPT_RC, 4, 1, 0)
                        .status())
                .as("max_qp")
                .isEqualTo(Errno.ENOMEM);

        // A second connection shares the device's limits.
        FakeSession other = new FakeSession(616161, LibC.getpid());
        ByteBuffer hello = TestNode.req(8);
        hello.putInt(0, MRCE_ABI_VERSION);
        node.service.onRequest(other, MRCE_OP_HELLO, 1, hello);
        node.service.onRequest(other, MRCE_OP_ALLOC_PD, 2, TestNode.req(0));
        node.service.onRequest(other, MRCE_OP_ALLOC_PD, 3, TestNode.req(0));
        ByteBuffer cqReq = TestNode.req(16);
        cqReq.putInt(0, 4).putInt(4, NO_HANDLE);
        node.service.onRequest(other, MRCE_OP_CREATE_CQ, 4, cqReq);
        node.service.onRequest(other, MRCE_OP_CREATE_CQ, 5, cqReq.rewind());
        node.pump();
        assertThat(other.responses)
                .extracting(FakeSession.Response::status)
                .containsExactly(0, 0, Errno.ENOMEM, 0, Errno.ENOMEM);
        for (FakeSession.Response r : other.responses) {
            if (r.mapping() != null) {
                LibC.munmap(r.mapping());
            }
        }
        node.service.onSessionClosed(other);
        node.pump();
        assertThat(node.allocPd()).as("the closed connection's PD came back").isPositive();

        // Closing everything gives every count back.
        node.service.onSessionClosed(node.session);
        node.pump();
        FakeSession third = new FakeSession(717171, LibC.getpid());
        node.service.onRequest(third, MRCE_OP_HELLO, 1, hello.rewind());
        node.service.onRequest(third, MRCE_OP_ALLOC_PD, 2, TestNode.req(0));
        node.service.onRequest(third, MRCE_OP_ALLOC_PD, 3, TestNode.req(0));
        node.service.onRequest(third, MRCE_OP_CREATE_SRQ, 4, srqReq(1));
        node.pump();
        assertThat(third.responses).extracting(FakeSession.Response::status).containsExactly(0, 0, 0, 0);
        for (FakeSession.Response r : third.responses) {
            if (r.mapping() != null) {
                LibC.munmap(r.mapping());
            }
        }
        node.service.onSessionClosed(third);
        node.pump();
        assertThat(node.service.sessionCount()).isZero();
    }

    private static ByteBuffer srqReq(int pd) {
        ByteBuffer b = TestNode.req(16);
        b.putInt(0, pd).putInt(4, 4).putInt(8, 1).putInt(12, 0);
        return b;
    }
}
