package io.metaroce.nic.transport;

import static io.metaroce.abi.AbiConstants.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AsyncEventDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.RingFlyweight;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.FakeSession;
import io.metaroce.nic.verbs.QpAttrs;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * UD QPs end to end between two in-process daemons on a MemoryLink (no loss): one packet per
 * message, the GRH in front of the payload, Q_Key checks, MTU and buffer-length errors, the SQE
 * state, receives from an SRQ with its limit event, flushes.
 */
class UdTransportTest {
    static final int QKEY = 0x11111111;
    private final AtomicLong clock = new AtomicLong();
    private final Arena arena = Arena.ofShared();
    private final int ipA = Inet4.parse("198.18.0.1");
    private final int ipB = Inet4.parse("198.18.0.2");
    private TestNode a;
    private TestNode b;
    private Side sa;
    private Side sb;

    /** One application: PD, a buffer and its MR, a CQ, a UD QP. */
    record Side(TestNode node, int pd, MemorySegment buf, int lkey, TestNode.CqHandles cq, TestNode.QpHandles qp) {}

    @BeforeEach
    void setUp() throws Exception {
        MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, clock::get);
        MemoryLink.End ea = link.end(ipA, 4793);
        MemoryLink.End eb = link.end(ipB, 4793);
        link.connect(ea, eb);
        a = new TestNode(ea, 4793, clock::get);
        b = new TestNode(eb, 4793, clock::get);
        a.hello();
        b.hello();
        sa = side(a, NO_HANDLE);
        sb = side(b, NO_HANDLE);
    }

    @AfterEach
    void tearDown() {
        a.close();
        b.close();
        arena.close();
    }

    private Side side(TestNode n, int srq) {
        int pd = n.allocPd();
        MemorySegment buf = arena.allocate(1 << 16, 4096);
        int[] mr = n.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE);
        TestNode.CqHandles cq = n.createCq(64, NO_HANDLE);
        TestNode.QpHandles qp = n.createQp(pd, cq.handle(), cq.handle(), srq, Ibv.QPT_UD, 16, 2, 64);
        toRts(n, qp.handle(), QKEY);
        return new Side(n, pd, buf, mr[1], cq, qp);
    }

    /** The ibv_ud_pingpong sequence. */
    static void toRts(TestNode n, int qp, int qkey) {
        QpAttrs init = new QpAttrs();
        init.qpState = Ibv.QPS_INIT;
        init.portNum = 1;
        init.qkey = qkey;
        assertThat(n.modifyQp(qp, Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_QKEY, init))
                .isZero();
        QpAttrs rtr = new QpAttrs();
        rtr.qpState = Ibv.QPS_RTR;
        assertThat(n.modifyQp(qp, Ibv.QP_STATE, rtr)).isZero();
        QpAttrs rts = new QpAttrs();
        rts.qpState = Ibv.QPS_RTS;
        rts.sqPsn = 0x123456;
        assertThat(n.modifyQp(qp, Ibv.QP_STATE | Ibv.QP_SQ_PSN, rts)).isZero();
    }

    /** post_send on a UD QP: the WQE with its address-handle fields, then the producer index. */
    static void postUd(
            RingFlyweight sq,
            long wrId,
            int opcode,
            int flags,
            int imm,
            long addr,
            int len,
            int lkey,
            int dstIp,
            int dstQpn,
            int qkey) {
        int prod = sq.producerAcquire();
        assertThat(prod - sq.consumerAcquire()).isLessThan(sq.slotCount());
        long slot = sq.slotOffset(prod);
        MemorySegment s = sq.segment();
        WqeFlyweight w = new WqeFlyweight().wrap(s, slot);
        w.wrId(wrId)
                .opcode(opcode)
                .sendFlags(flags)
                .immData(imm)
                .numSge(len == 0 ? 0 : 1)
                .length(len);
        if (len > 0) {
            w.sge(0, addr, len, lkey);
        }
        s.set(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_REMOTE_QPN, dstQpn);
        s.set(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_REMOTE_QKEY, qkey);
        s.set(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_DEST_IPV4, Integer.reverseBytes(dstIp));
        s.set(ValueLayout.JAVA_BYTE, slot + WqeDescriptor.OFF_UD_TRAFFIC_CLASS, (byte) 0x28);
        s.set(ValueLayout.JAVA_BYTE, slot + WqeDescriptor.OFF_UD_HOP_LIMIT, (byte) 7);
        sq.producerRelease(prod + 1);
    }

    static void postRecv(TestNode n, RingFlyweight rq, long wrId, long addr, int len, int lkey) {
        assertThat(n.post(rq, wrId, 0, 0, 0, new long[] {addr}, new int[] {len}, lkey))
                .isTrue();
    }

    private List<TestNode.Cqe> run(Side s, int expected) {
        List<TestNode.Cqe> got = new ArrayList<>();
        for (int i = 0; i < 200 && got.size() < expected; i++) {
            a.pump();
            b.pump();
            got.addAll(s.node().poll(s.cq().ring()));
        }
        for (int i = 0; i < 5; i++) { // nothing more arrives
            a.pump();
            b.pump();
            got.addAll(s.node().poll(s.cq().ring()));
        }
        return got;
    }

    private static byte[] bytes(MemorySegment m, long off, int len) {
        return m.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE);
    }

    private static byte[] grh(int tclass, int payload, int hop, int src, int dst) {
        ByteBuffer g = ByteBuffer.allocate(40).order(ByteOrder.BIG_ENDIAN);
        g.put((byte) (0x60 | tclass >> 4)).put((byte) ((tclass & 0xf) << 4)).putShort((short) 0);
        g.putShort((short) payload).put((byte) 0x1b).put((byte) hop);
        g.put(Inet4.mappedGid(src)).put(Inet4.mappedGid(dst));
        return g.array();
    }

    @Test
    void eachMessageLandsBehindAGrhWithTheSourceQpAndImmediate() {
        int[] sizes = {0, 1, 100, 1000, 4096};
        Random rnd = new Random(3);
        byte[][] msgs = new byte[sizes.length][];
        for (int i = 0; i < sizes.length; i++) {
            postRecv(b, sb.qp().rq(), 500 + i, sb.buf().address() + 8192L * i, 40 + 4096, sb.lkey());
        }
        for (int i = 0; i < sizes.length; i++) {
            msgs[i] = new byte[sizes[i]];
            rnd.nextBytes(msgs[i]);
            MemorySegment.copy(MemorySegment.ofArray(msgs[i]), 0, sa.buf(), 8192L * i, sizes[i]);
            boolean imm = i % 2 == 1;
            postUd(
                    sa.qp().sq(),
                    100 + i,
                    imm ? Ibv.WR_SEND_WITH_IMM : Ibv.WR_SEND,
                    i == 2 ? 0 : Ibv.SEND_SIGNALED,
                    Integer.reverseBytes(0xabc000 + i),
                    sa.buf().address() + 8192L * i,
                    sizes[i],
                    sa.lkey(),
                    ipB,
                    sb.qp().qpn(),
                    QKEY);
        }
        List<TestNode.Cqe> recv = run(sb, sizes.length);
        assertThat(recv).hasSize(sizes.length);
        for (int i = 0; i < sizes.length; i++) {
            TestNode.Cqe c = recv.get(i);
            boolean imm = i % 2 == 1;
            assertThat(c.wrId()).isEqualTo(500 + i);
            assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS);
            assertThat(c.opcode()).isEqualTo(Ibv.WC_RECV);
            assertThat(c.byteLen()).isEqualTo(40 + sizes[i]);
            assertThat(c.qpNum()).isEqualTo(sb.qp().qpn());
            assertThat(c.srcQp()).isEqualTo(sa.qp().qpn());
            assertThat(c.wcFlags()).isEqualTo(Ibv.WC_GRH | (imm ? Ibv.WC_WITH_IMM : 0));
            if (imm) {
                assertThat(c.imm()).isEqualTo(Integer.reverseBytes(0xabc000 + i));
            }
            assertThat(bytes(sb.buf(), 8192L * i, 40))
                    .as("GRH of message " + i)
                    .isEqualTo(grh(0x28, sizes[i], 7, ipA, ipB));
            assertThat(bytes(sb.buf(), 8192L * i + 40, sizes[i])).isEqualTo(msgs[i]);
        }
        List<TestNode.Cqe> sent = a.poll(sa.cq().ring());
        assertThat(sent)
                .extracting(TestNode.Cqe::wrId)
                .as("unsignaled 102 has no completion")
                .containsExactly(100L, 101L, 103L, 104L);
        assertThat(sent).allMatch(c -> c.status() == Ibv.WC_SUCCESS && c.opcode() == Ibv.WC_SEND);
        assertThat(a.engine.ud().packetsTx).isEqualTo(5);
        assertThat(b.engine.ud().packetsRx).isEqualTo(5);
        assertThat(sb.qp().rq().consumerAcquire()).isEqualTo(5);
    }

    @Test
    void aWrongQkeyIsDroppedAndCountedAndTheHighBitMeansTheQpsOwnQkey() {
        postRecv(b, sb.qp().rq(), 1, sb.buf().address(), 1024, sb.lkey());
        sa.buf().set(ValueLayout.JAVA_LONG, 0, 0x0102030405060708L);
        postUd(
                sa.qp().sq(),
                10,
                Ibv.WR_SEND,
                Ibv.SEND_SIGNALED,
                0,
                sa.buf().address(),
                8,
                sa.lkey(),
                ipB,
                sb.qp().qpn(),
                QKEY + 1);
        assertThat(run(sb, 1)).as("dropped at the receiver").isEmpty();
        assertThat(b.engine.ud().qkeyDrops).isEqualTo(1);
        assertThat(a.poll(sa.cq().ring()))
                .as("unreliable: the send completed")
                .singleElement()
                .satisfies(c -> assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS));
        postUd(
                sa.qp().sq(),
                11,
                Ibv.WR_SEND,
                Ibv.SEND_SIGNALED,
                0,
                sa.buf().address(),
                8,
                sa.lkey(),
                ipB,
                sb.qp().qpn(),
                0x80000000);
        assertThat(run(sb, 1)).singleElement().satisfies(c -> {
            assertThat(c.wrId()).isEqualTo(1);
            assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS);
        });
        assertThat(sb.buf().get(ValueLayout.JAVA_LONG, 40)).isEqualTo(0x0102030405060708L);
        assertThat(b.engine.ud().qkeyDrops).isEqualTo(1);
    }

    @Test
    void aMessageLongerThanTheMtuFailsWithLocLenErrAndTheQpGoesToSqeUntilMovedBackToRts() {
        postRecv(b, sb.qp().rq(), 1, sb.buf().address(), 8192, sb.lkey());
        postUd(
                sa.qp().sq(),
                20,
                Ibv.WR_SEND,
                0,
                0,
                sa.buf().address(),
                4097,
                sa.lkey(),
                ipB,
                sb.qp().qpn(),
                QKEY);
        postUd(
                sa.qp().sq(),
                21,
                Ibv.WR_SEND,
                Ibv.SEND_SIGNALED,
                0,
                sa.buf().address(),
                16,
                sa.lkey(),
                ipB,
                sb.qp().qpn(),
                QKEY);
        List<TestNode.Cqe> sent = run(sa, 2);
        assertThat(sent).extracting(TestNode.Cqe::wrId).containsExactly(20L, 21L);
        assertThat(sent.get(0).status()).as("unsignaled but failed: reported").isEqualTo(Ibv.WC_LOC_LEN_ERR);
        assertThat(sent.get(1).status()).isEqualTo(Ibv.WC_WR_FLUSH_ERR);
        assertThat(a.queryQp(sa.qp().handle()).qpState).isEqualTo(Ibv.QPS_SQE);
        assertThat(a.engine.ud().packetsTx).isZero();
        assertThat(a.engine.ud().sendErrors).isEqualTo(1);

        QpAttrs rts = new QpAttrs();
        rts.qpState = Ibv.QPS_RTS;
        assertThat(a.modifyQp(sa.qp().handle(), Ibv.QP_STATE, rts)).isZero();
        postUd(
                sa.qp().sq(),
                22,
                Ibv.WR_SEND,
                Ibv.SEND_SIGNALED,
                0,
                sa.buf().address(),
                4096,
                sa.lkey(),
                ipB,
                sb.qp().qpn(),
                QKEY);
        assertThat(run(sb, 1))
                .singleElement()
                .satisfies(c -> assertThat(c.byteLen()).isEqualTo(40 + 4096));
        assertThat(a.poll(sa.cq().ring()))
                .singleElement()
                .satisfies(c -> assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS));
    }

    @Test
    void aBadLkeyOrOpcodeFailsTheSend() {
        postUd(
                sa.qp().sq(),
                30,
                Ibv.WR_SEND,
                Ibv.SEND_SIGNALED,
                0,
                sa.buf().address(),
                16,
                sa.lkey() + 256,
                ipB,
                sb.qp().qpn(),
                QKEY);
        assertThat(run(sa, 1))
                .singleElement()
                .satisfies(c -> assertThat(c.status()).isEqualTo(Ibv.WC_LOC_PROT_ERR));
        QpAttrs rts = new QpAttrs();
        rts.qpState = Ibv.QPS_RTS;
        assertThat(a.modifyQp(sa.qp().handle(), Ibv.QP_STATE, rts)).isZero();
        postUd(
                sa.qp().sq(),
                31,
                Ibv.WR_RDMA_WRITE,
                Ibv.SEND_SIGNALED,
                0,
                sa.buf().address(),
                16,
                sa.lkey(),
                ipB,
                sb.qp().qpn(),
                QKEY);
        assertThat(run(sa, 1))
                .singleElement()
                .satisfies(c -> assertThat(c.status()).isEqualTo(Ibv.WC_LOC_QP_OP_ERR));
    }

    @Test
    void aShortReceiveBufferCompletesWithLocLenErrAndTheQpGoesOn() {
        postRecv(b, sb.qp().rq(), 1, sb.buf().address(), 40 + 99, sb.lkey());
        postRecv(b, sb.qp().rq(), 2, sb.buf().address() + 4096, 40 + 100, sb.lkey());
        for (int i = 0; i < 2; i++) {
            postUd(
                    sa.qp().sq(),
                    40 + i,
                    Ibv.WR_SEND,
                    0,
                    0,
                    sa.buf().address(),
                    100,
                    sa.lkey(),
                    ipB,
                    sb.qp().qpn(),
                    QKEY);
        }
        List<TestNode.Cqe> got = run(sb, 2);
        assertThat(got).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_LOC_LEN_ERR, Ibv.WC_SUCCESS);
        assertThat(got.get(1).byteLen()).isEqualTo(140);
        assertThat(b.queryQp(sb.qp().handle()).qpState).isEqualTo(Ibv.QPS_RTS);
    }

    @Test
    void withNoReceivePostedThePacketIsLostAndCounted() {
        postUd(
                sa.qp().sq(),
                50,
                Ibv.WR_SEND,
                0,
                0,
                sa.buf().address(),
                10,
                sa.lkey(),
                ipB,
                sb.qp().qpn(),
                QKEY);
        assertThat(run(sb, 1)).isEmpty();
        assertThat(b.engine.ud().noRecvDrops).isEqualTo(1);
        postUd(
                sa.qp().sq(),
                51,
                Ibv.WR_SEND,
                0,
                0,
                sa.buf().address(),
                10,
                sa.lkey(),
                ipB,
                sb.qp().qpn() ^ 0x1000,
                QKEY);
        assertThat(run(sb, 1)).isEmpty();
        assertThat(b.port.counters().rxUnknownQp).as("a stale QPN").isEqualTo(1);
    }

    @Test
    void receivesComeFromTheSrqAndTheLimitEventFires() {
        TestNode.SrqHandles srq = b.createSrq(sb.pd(), 8, 1, 0);
        TestNode.CqHandles cq = b.createCq(16, NO_HANDLE);
        TestNode.QpHandles qp = b.createQp(sb.pd(), cq.handle(), cq.handle(), srq.handle(), Ibv.QPT_UD, 4, 1, 0);
        toRts(b, qp.handle(), QKEY);
        for (int i = 0; i < 4; i++) {
            postRecv(b, srq.ring(), 900 + i, sb.buf().address() + 1024L * i, 1024, sb.lkey());
        }
        ByteBuffer arm = TestNode.req(16).order(ByteOrder.LITTLE_ENDIAN);
        arm.putInt(0, srq.handle()).putInt(4, 2).putInt(12, 3);
        assertThat(b.call(MRCE_OP_MODIFY_SRQ, arm).status()).isZero();
        for (int i = 0; i < 2; i++) {
            sa.buf().set(ValueLayout.JAVA_INT, 64L * i, 0x5eed0000 + i);
            postUd(
                    sa.qp().sq(),
                    60 + i,
                    Ibv.WR_SEND,
                    0,
                    0,
                    sa.buf().address() + 64L * i,
                    4,
                    sa.lkey(),
                    ipB,
                    qp.qpn(),
                    QKEY);
        }
        List<TestNode.Cqe> got = new ArrayList<>();
        for (int i = 0; i < 100 && got.size() < 2; i++) {
            a.pump();
            b.pump();
            got.addAll(b.poll(cq.ring()));
        }
        assertThat(got).extracting(TestNode.Cqe::wrId).containsExactly(900L, 901L);
        assertThat(got)
                .allMatch(c -> c.status() == Ibv.WC_SUCCESS
                        && c.srcQp() == sa.qp().qpn()
                        && c.qpNum() == qp.qpn()
                        && c.byteLen() == 44);
        assertThat(sb.buf().get(ValueLayout.JAVA_INT, 40)).isEqualTo(0x5eed0000);
        assertThat(sb.buf().get(ValueLayout.JAVA_INT, 1024 + 40)).isEqualTo(0x5eed0001);
        FakeSession.Response ev = b.call(MRCE_OP_GET_ASYNC_EVENT, TestNode.req(0));
        assertThat(ev.status()).isZero();
        assertThat(ev.payload().getInt((int) AsyncEventDescriptor.OFF_EVENT_TYPE))
                .isEqualTo(Ibv.EVENT_SRQ_LIMIT_REACHED);
        assertThat(ev.payload().getInt((int) AsyncEventDescriptor.OFF_ELEMENT)).isEqualTo(srq.handle());
        assertThat(b.call(MRCE_OP_GET_ASYNC_EVENT, TestNode.req(0)).status()).isEqualTo(Errno.EAGAIN);
        assertThat(b.call(MRCE_OP_QUERY_SRQ, TestNode.handleReq(srq.handle()))
                        .payload()
                        .getInt(8))
                .as("disarmed")
                .isZero();
        // the QP going to ERR leaves the SRQ's receives alone
        QpAttrs err = new QpAttrs();
        err.qpState = Ibv.QPS_ERR;
        assertThat(b.modifyQp(qp.handle(), Ibv.QP_STATE, err)).isZero();
        b.pump();
        assertThat(srq.ring().consumerAcquire()).isEqualTo(2);
    }

    @Test
    void aFullReceiveCqDropsThePacketAndLeavesTheReceivePosted() {
        TestNode.CqHandles small = b.createCq(2, NO_HANDLE);
        TestNode.QpHandles qp = b.createQp(sb.pd(), small.handle(), small.handle(), NO_HANDLE, Ibv.QPT_UD, 4, 1, 0);
        toRts(b, qp.handle(), QKEY);
        for (int i = 0; i < 4; i++) {
            postRecv(b, qp.rq(), 80 + i, sb.buf().address() + 128L * i, 128, sb.lkey());
        }
        for (int i = 0; i < 3; i++) {
            sa.buf().set(ValueLayout.JAVA_INT, 16L * i, 0x70 + i);
            postUd(
                    sa.qp().sq(),
                    85 + i,
                    Ibv.WR_SEND,
                    0,
                    0,
                    sa.buf().address() + 16L * i,
                    4,
                    sa.lkey(),
                    ipB,
                    qp.qpn(),
                    QKEY);
        }
        for (int i = 0; i < 10; i++) {
            a.pump();
            b.pump();
        }
        assertThat(b.engine.ud().cqFullDrops).isEqualTo(1);
        assertThat(qp.rq().consumerAcquire())
                .as("the third receive is still posted")
                .isEqualTo(2);
        assertThat(b.poll(small.ring())).extracting(TestNode.Cqe::wrId).containsExactly(80L, 81L);
        postUd(sa.qp().sq(), 88, Ibv.WR_SEND, 0, 0, sa.buf().address() + 32, 4, sa.lkey(), ipB, qp.qpn(), QKEY);
        List<TestNode.Cqe> got = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            a.pump();
            b.pump();
            got.addAll(b.poll(small.ring()));
        }
        assertThat(got).extracting(TestNode.Cqe::wrId).containsExactly(82L);
        assertThat(sb.buf().get(ValueLayout.JAVA_INT, 256 + 40)).isEqualTo(0x72);
    }

    @Test
    void errorFlushesTheSendAndReceiveQueues() {
        postRecv(b, sb.qp().rq(), 71, sb.buf().address(), 64, sb.lkey());
        postRecv(b, sb.qp().rq(), 72, sb.buf().address(), 64, sb.lkey());
        QpAttrs err = new QpAttrs();
        err.qpState = Ibv.QPS_ERR;
        assertThat(b.modifyQp(sb.qp().handle(), Ibv.QP_STATE, err)).isZero();
        postUd(
                sb.qp().sq(),
                73,
                Ibv.WR_SEND,
                0,
                0,
                sb.buf().address(),
                4,
                sb.lkey(),
                ipA,
                sa.qp().qpn(),
                QKEY);
        List<TestNode.Cqe> got = run(sb, 3);
        assertThat(got).extracting(TestNode.Cqe::wrId).containsExactlyInAnyOrder(71L, 72L, 73L);
        assertThat(got).allMatch(c -> c.status() == Ibv.WC_WR_FLUSH_ERR);
        assertThat(a.engine.ud().packetsRx + b.engine.ud().packetsTx).isZero();
    }

    @Test
    void theUdStateMachineIsTheOneIbvUdPingpongUses() {
        TestNode.QpHandles qp = a.createQp(sa.pd(), sa.cq().handle(), sa.cq().handle(), NO_HANDLE, Ibv.QPT_UD, 4, 1, 0);
        QpAttrs init = new QpAttrs();
        init.qpState = Ibv.QPS_INIT;
        init.portNum = 1;
        assertThat(a.modifyQp(qp.handle(), Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT, init))
                .as("INIT needs the Q_Key")
                .isEqualTo(Errno.EINVAL);
        assertThat(a.modifyQp(
                        qp.handle(),
                        Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_QKEY | Ibv.QP_ACCESS_FLAGS,
                        init))
                .as("no access flags on UD")
                .isEqualTo(Errno.EINVAL);
        toRts(a, qp.handle(), 0x2222);
        QpAttrs q = a.queryQp(qp.handle());
        assertThat(q.qpState).isEqualTo(Ibv.QPS_RTS);
        assertThat(q.qkey).isEqualTo(0x2222);
        assertThat(q.sqPsn).isEqualTo(0x123456);
    }
}
