package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.Errno;
import io.metaroce.abi.HelloRespDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The control ops: argument checks, handle scoping, busy objects, teardown. */
class VerbsServiceTest {
    private final AtomicLong clock = new AtomicLong();
    private TestNode node;
    private Arena arena;

    @BeforeEach
    void setUp() throws Exception {
        node = TestNode.onLink(clock::get);
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() {
        node.close();
        arena.close();
    }

    @Test
    void helloDescribesTheDeviceAndHandsOverTwoEventfds() {
        assertThat(node.call(MRCE_OP_ALLOC_PD, TestNode.req(0)).status())
                .as("before HELLO")
                .isEqualTo(Errno.EPROTO);
        FakeSession.Response r = node.hello();
        assertThat(r.status()).isZero();
        assertThat(r.fds()).hasSize(2);
        ByteBuffer p = r.payload();
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_ABI_VERSION)).isEqualTo(MRCE_ABI_VERSION);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_DAEMON_PID)).isEqualTo(LibC.getpid());
        byte[] gid = new byte[16];
        p.get((int) HelloRespDescriptor.OFF_GID, gid);
        assertThat(gid).containsExactly(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, (byte) 198, 18, 0, 1);
        byte[] name = new byte[6];
        p.get((int) HelloRespDescriptor.OFF_DEV_NAME, name);
        assertThat(name).containsExactly('m', 'r', 'c', 'e', '0', 0);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_IF_MTU)).isEqualTo(9000);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_ACTIVE_MTU)).isEqualTo(Ibv.MTU_4096);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_UDP_PORT)).isEqualTo(4793);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_MAX_SGE)).isEqualTo(12);
        assertThat(p.getInt((int) HelloRespDescriptor.OFF_LINK_UP)).isEqualTo(1);
        assertThat(node.hello().status()).as("second HELLO").isEqualTo(Errno.EEXIST);
    }

    @Test
    void activeMtuLeavesRoomForHeaders() {
        assertThat(VerbsService.activeMtu(1500)).isEqualTo(Ibv.MTU_1024);
        assertThat(VerbsService.activeMtu(1024 + 76)).isEqualTo(Ibv.MTU_1024);
        assertThat(VerbsService.activeMtu(1024 + 75)).isEqualTo(Ibv.MTU_512);
        assertThat(VerbsService.activeMtu(4096 + 76)).isEqualTo(Ibv.MTU_4096);
        assertThat(VerbsService.activeMtu(65536)).isEqualTo(Ibv.MTU_4096);
    }

    @Test
    void regMrFollowsIbvRegMrRules() {
        node.hello();
        int pd = node.allocPd();
        MemorySegment buf = arena.allocate(8192, 4096);
        long a = buf.address();
        assertThat(node.regMrRaw(pd, a, 8192, Ibv.ACCESS_REMOTE_WRITE).status()).isEqualTo(Errno.EINVAL);
        assertThat(node.regMrRaw(pd, a, 8192, Ibv.ACCESS_REMOTE_ATOMIC).status())
                .isEqualTo(Errno.EINVAL);
        assertThat(node.regMrRaw(pd, a, 0, Ibv.ACCESS_LOCAL_WRITE).status()).isEqualTo(Errno.EINVAL);
        assertThat(node.regMrRaw(pd, a, 8192, 1 << 15).status()).isEqualTo(Errno.EINVAL);
        assertThat(node.regMrRaw(pd + 100, a, 8192, 0).status()).isEqualTo(Errno.ENOENT);
        assertThat(node.regMrRaw(pd, 4096, 8192, 0).status()).as("unmapped").isEqualTo(Errno.EFAULT);
        assertThat(node.regMrRaw(pd, -4096, 8192, 0).status()).as("wraps").isEqualTo(Errno.EINVAL);
        int[] mr = node.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ);
        int[] mr2 = node.regMr(pd, buf, 0);
        assertThat(mr[1]).isNotEqualTo(mr2[1]);
        assertThat(mr[1]).isNotEqualTo(mr[2]);
        Mr found = node.engine.datapath().mrs.byLkey(mr[1]);
        assertThat(found).isNotNull();
        assertThat(found.addr).isEqualTo(a);
        assertThat(io.metaroce.nic.dma.ProcessMemory.fd(found.pid))
                .as("bound address space")
                .isPositive();
        assertThat(node.engine.datapath().mrs.byRkey(mr[2])).isSameAs(found);
        assertThat(node.engine.datapath().mrs.byLkey(mr[2])).isNull();
        // in use: the PD cannot go
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .isEqualTo(Errno.EBUSY);
        assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(mr[0])).status())
                .isZero();
        assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(mr[0])).status())
                .isEqualTo(Errno.ENOENT);
        assertThat(node.engine.datapath().mrs.byLkey(mr[1])).isNull();
        assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(mr2[0])).status())
                .isZero();
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .isZero();
    }

    @Test
    void onDemandPagingRegistersUnmappedRangesAndTheWholeAddressSpace() {
        node.hello();
        int pd = node.allocPd();
        int odp = Ibv.ACCESS_ON_DEMAND | Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE;
        // explicit ODP: nothing is probed, pages may be mapped after registration
        FakeSession.Response r = node.regMrRaw(pd, 4096, 8192, odp);
        assertThat(r.status()).as("unmapped range, ODP").isZero();
        // implicit ODP: ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...)
        FakeSession.Response implicit = node.regMrRaw(pd, 0, -1L, odp);
        assertThat(implicit.status()).isZero();
        int rkey = implicit.payload().getInt((int) io.metaroce.abi.RegMrRespDescriptor.OFF_RKEY);
        Mr mr = node.engine.datapath().mrs.byRkey(rkey);
        assertThat(mr.length).isEqualTo(-1L);
        assertThat(mr.contains(0x7f00_0000_0000L, 4096)).isTrue();
        // SIZE_MAX without ODP, or not at address 0, is no implicit registration
        assertThat(node.regMrRaw(pd, 0, -1L, Ibv.ACCESS_LOCAL_WRITE).status()).isEqualTo(Errno.EINVAL);
        assertThat(node.regMrRaw(pd, 4096, -1L, odp).status()).isEqualTo(Errno.EINVAL);
        assertThat(node.regMrRaw(pd, -4096, 8192, odp).status()).as("wraps").isEqualTo(Errno.EINVAL);
        assertThat(node.regMrRaw(pd, 0, -1L, Ibv.ACCESS_ON_DEMAND | Ibv.ACCESS_REMOTE_WRITE)
                        .status())
                .as("remote write needs local write")
                .isEqualTo(Errno.EINVAL);
        assertThat(PdMrOps.pinned(odp, 1L << 40)).as("ODP pins nothing").isZero();
        assertThat(PdMrOps.pinned(Ibv.ACCESS_LOCAL_WRITE, 8192)).isEqualTo(8192);
        int handle = implicit.payload().getInt((int) io.metaroce.abi.RegMrRespDescriptor.OFF_HANDLE);
        assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(handle)).status())
                .isZero();
        int h2 = r.payload().getInt((int) io.metaroce.abi.RegMrRespDescriptor.OFF_HANDLE);
        assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(h2)).status()).isZero();
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .isZero();
    }

    @Test
    void busyObjectsAndBadHandles() {
        node.hello();
        int pd = node.allocPd();
        FakeSession.Response ch = node.call(MRCE_OP_CREATE_COMP_CHANNEL, TestNode.req(0));
        assertThat(ch.status()).isZero();
        assertThat(ch.fds()).hasSize(1);
        int channel = ch.payload().getInt(0);
        TestNode.CqHandles cq = node.createCq(10, channel);
        assertThat(cq.ring().slotCount()).isEqualTo(16);
        assertThat(cq.ring().kind()).isEqualTo(MRCE_RING_KIND_CQ);
        assertThat(node.call(MRCE_OP_DESTROY_COMP_CHANNEL, TestNode.handleReq(channel))
                        .status())
                .isEqualTo(Errno.EBUSY);
        TestNode.QpHandles qp = node.createQp(pd, cq.handle(), cq.handle(), 100, 2, 0);
        assertThat(qp.sq().slotCount()).isEqualTo(128);
        assertThat(qp.rq().kind()).isEqualTo(MRCE_RING_KIND_RQ);
        assertThat(node.call(MRCE_OP_DESTROY_CQ, TestNode.handleReq(cq.handle()))
                        .status())
                .isEqualTo(Errno.EBUSY);
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .isEqualTo(Errno.EBUSY);
        assertThat(node.createQpRaw(pd, cq.handle(), cq.handle(), Ibv.QPT_UC, 1, 1, 0)
                        .status())
                .isEqualTo(Errno.EOPNOTSUPP);
        assertThat(node.createQpRaw(pd, cq.handle(), 999, Ibv.QPT_RC, 1, 1, 0).status())
                .isEqualTo(Errno.ENOENT);
        assertThat(node.createQpRaw(pd, cq.handle(), cq.handle(), Ibv.QPT_RC, 1, 13, 0)
                        .status())
                .isEqualTo(Errno.EINVAL);
        assertThat(node.call(MRCE_OP_QUERY_QP, TestNode.handleReq(12345)).status())
                .isEqualTo(Errno.ENOENT);
        assertThat(node.call(MRCE_OP_DESTROY_QP, TestNode.handleReq(qp.handle()))
                        .status())
                .isZero();
        assertThat(node.call(MRCE_OP_DESTROY_CQ, TestNode.handleReq(cq.handle()))
                        .status())
                .isZero();
        assertThat(node.call(MRCE_OP_DESTROY_COMP_CHANNEL, TestNode.handleReq(channel))
                        .status())
                .isZero();
        assertThat(node.call(MRCE_OP_DEALLOC_PD, TestNode.handleReq(pd)).status())
                .isZero();
        assertThat(node.engine.activeQps()).isZero();
    }

    @Test
    void modifyQpChecksTransitionsAndValues() {
        node.hello();
        int pd = node.allocPd();
        TestNode.CqHandles cq = node.createCq(10, NO_HANDLE);
        TestNode.QpHandles qp = node.createQp(pd, cq.handle(), cq.handle(), 8, 1, 0);
        QpAttrs a = new QpAttrs();
        a.qpState = Ibv.QPS_RTS;
        assertThat(node.modifyQp(qp.handle(), Ibv.QP_STATE, a)).as("RESET->RTS").isEqualTo(Errno.EINVAL);
        a.qpState = Ibv.QPS_INIT;
        a.portNum = 2;
        assertThat(node.modifyQp(qp.handle(), Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS, a))
                .as("port 2")
                .isEqualTo(Errno.EINVAL);
        assertThat(node.queryQp(qp.handle()).qpState).isEqualTo(Ibv.QPS_RESET);
        a.portNum = 1;
        assertThat(node.modifyQp(qp.handle(), Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS, a))
                .isZero();
        QpAttrs rtr = new QpAttrs();
        rtr.qpState = Ibv.QPS_RTR;
        rtr.pathMtu = Ibv.MTU_1024;
        rtr.destQpNum = 0x1234;
        rtr.rqPsn = 0xabcdef;
        rtr.isGlobal = 0; // RoCE needs a GRH
        int mask = Ibv.QP_STATE
                | Ibv.QP_AV
                | Ibv.QP_PATH_MTU
                | Ibv.QP_DEST_QPN
                | Ibv.QP_RQ_PSN
                | Ibv.QP_MAX_DEST_RD_ATOMIC
                | Ibv.QP_MIN_RNR_TIMER;
        assertThat(node.modifyQp(qp.handle(), mask, rtr)).isEqualTo(Errno.EINVAL);
        rtr.isGlobal = 1;
        assertThat(node.modifyQp(qp.handle(), mask, rtr)).as("zero GID").isEqualTo(Errno.EINVAL);
        rtr.dgid[0] = (byte) 0xfe; // an IPv6 GID: this node serves IPv4
        assertThat(node.modifyQp(qp.handle(), mask, rtr))
                .as("IPv6 peer of an IPv4 daemon")
                .isEqualTo(Errno.EINVAL);
        rtr.dgid[0] = (byte) 0xff; // multicast
        rtr.dgid[1] = 2;
        rtr.dgid[15] = 1;
        assertThat(node.modifyQp(qp.handle(), mask, rtr)).as("multicast GID").isEqualTo(Errno.EINVAL);
        System.arraycopy(Inet4.mappedGid(Inet4.parse("198.18.0.9")), 0, rtr.dgid, 0, 16);
        rtr.pathMtu = 6;
        assertThat(node.modifyQp(qp.handle(), mask, rtr)).isEqualTo(Errno.EINVAL);
        rtr.pathMtu = Ibv.MTU_2048;
        assertThat(node.modifyQp(qp.handle(), mask, rtr)).isZero();
        QpAttrs q = node.queryQp(qp.handle());
        assertThat(q.qpState).isEqualTo(Ibv.QPS_RTR);
        assertThat(q.pathMtu).isEqualTo(Ibv.MTU_2048);
        assertThat(q.destQpNum).isEqualTo(0x1234);
        assertThat(q.rqPsn).isEqualTo(0xabcdef);
        assertThat(q.isGlobal).isEqualTo(1);
        assertThat(q.dgid[15]).isEqualTo((byte) 9);
        assertThat(q.maxSendWr).isEqualTo(8);
        a = new QpAttrs();
        a.qpState = Ibv.QPS_ERR;
        assertThat(node.modifyQp(qp.handle(), Ibv.QP_STATE, a)).isZero();
        a.qpState = Ibv.QPS_RESET;
        assertThat(node.modifyQp(qp.handle(), Ibv.QP_STATE, a)).isZero();
        assertThat(node.queryQp(qp.handle()).qpState).isEqualTo(Ibv.QPS_RESET);
    }

    @Test
    void sessionsSeeOnlyTheirOwnObjectsAndCloseReclaimsEverything() {
        node.hello();
        int pd = node.allocPd();
        MemorySegment buf = arena.allocate(4096, 4096);
        int[] mr = node.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE);
        TestNode.CqHandles cq = node.createCq(4, NO_HANDLE);
        node.createQp(pd, cq.handle(), cq.handle(), 4, 1, 0);
        node.pump();
        assertThat(node.engine.activeQps()).isEqualTo(1);

        FakeSession other = new FakeSession(424242, LibC.getpid());
        ByteBuffer hello = TestNode.req(8);
        hello.putInt(0, MRCE_ABI_VERSION);
        node.service.onRequest(other, MRCE_OP_HELLO, 1, hello);
        node.service.onRequest(other, MRCE_OP_DEALLOC_PD, 2, TestNode.handleReq(pd));
        node.service.onRequest(other, MRCE_OP_DEREG_MR, 3, TestNode.handleReq(mr[0]));
        node.service.onRequest(other, MRCE_OP_DESTROY_CQ, 4, TestNode.handleReq(cq.handle()));
        node.pump();
        assertThat(other.responses)
                .extracting(FakeSession.Response::status)
                .containsExactly(0, Errno.ENOENT, Errno.ENOENT, Errno.ENOENT);
        node.service.onSessionClosed(other);

        node.service.onSessionClosed(node.session);
        node.pump();
        assertThat(node.engine.activeQps()).isZero();
        assertThat(node.engine.datapath().mrs.byLkey(mr[1])).isNull();
        assertThat(node.service.sessionCount()).isZero();
        assertThat(buf.get(ValueLayout.JAVA_BYTE, 0)).isZero();
    }
}
