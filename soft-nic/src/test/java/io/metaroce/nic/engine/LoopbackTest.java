package io.metaroce.nic.engine;

import static io.metaroce.abi.AbiConstants.NO_HANDLE;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.RingFlyweight;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.UdpPort;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.QpAttrs;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Two QPs of the same daemon talking to each other (the destination is the daemon's own address):
 * their frames go through the engine's local queue, never through the port.
 */
class LoopbackTest {
    private final AtomicLong clock = new AtomicLong();

    private static MemoryLink.End memoryPort(AtomicLong clock, int ip) {
        MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, clock::get);
        MemoryLink.End end = link.end(ip, 4793);
        link.connect(end, link.end(Inet4.parse("198.18.9.9"), 4793));
        return end;
    }

    /** RC, multi-packet messages both ways between two QPs of one daemon; data checked. */
    private static void rcPingPong(TestNode n, int ip, long deadlineNs, java.util.function.LongSupplier now)
            throws Exception {
        int size = 5000;
        try (Arena arena = Arena.ofShared()) {
            n.hello();
            int pd = n.allocPd();
            MemorySegment buf = arena.allocate(4L * size, 64);
            int[] mr = n.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE);
            TestNode.CqHandles cq = n.createCq(64, NO_HANDLE);
            TestNode.QpHandles x = n.createQp(pd, cq.handle(), cq.handle(), 16, 1, 0);
            TestNode.QpHandles y = n.createQp(pd, cq.handle(), cq.handle(), 16, 1, 0);
            n.connect(x.handle(), ip, y.qpn(), 100, 200, Ibv.MTU_1024);
            n.connect(y.handle(), ip, x.qpn(), 200, 100, Ibv.MTU_1024);
            Random rnd = new Random(9);
            byte[] msg = new byte[size];
            for (int i = 0; i < 20; i++) {
                rnd.nextBytes(msg);
                boolean fromX = i % 2 == 0;
                long src = buf.address() + (fromX ? 0 : size);
                long dst = buf.address() + (fromX ? 2L * size : 3L * size);
                MemorySegment.copy(MemorySegment.ofArray(msg), 0, buf, src - buf.address(), size);
                assertThat(n.post((fromX ? y : x).rq(), i, 0, 0, 0, new long[] {dst}, new int[] {size}, mr[1]))
                        .isTrue();
                assertThat(n.post(
                                (fromX ? x : y).sq(),
                                i,
                                Ibv.WR_SEND,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {src},
                                new int[] {size},
                                mr[1]))
                        .isTrue();
                List<TestNode.Cqe> got = new ArrayList<>();
                while (got.size() < 2) {
                    n.pump();
                    got.addAll(n.poll(cq.ring()));
                    assertThat(now.getAsLong()).isLessThan(deadlineNs);
                }
                assertThat(got).extracting(TestNode.Cqe::opcode).containsExactlyInAnyOrder(Ibv.WC_SEND, Ibv.WC_RECV);
                assertThat(got).allMatch(c -> c.status() == Ibv.WC_SUCCESS);
                assertThat(got)
                        .filteredOn(c -> c.opcode() == Ibv.WC_RECV)
                        .singleElement()
                        .satisfies(c -> assertThat(c.byteLen()).isEqualTo(size));
                assertThat(buf.asSlice(dst - buf.address(), size).toArray(ValueLayout.JAVA_BYTE))
                        .isEqualTo(msg);
            }
        }
    }

    @Test
    void rcBetweenTwoQpsOfOneDaemonNeverTouchesThePort() throws Exception {
        int ip = Inet4.parse("198.18.0.1");
        MemoryLink.End port = memoryPort(clock, ip);
        try (TestNode n = new TestNode(port, 4793, clock::get)) {
            rcPingPong(n, ip, Long.MAX_VALUE, clock::get);
            assertThat(port.counters().txFrames).isZero();
            assertThat(n.engine.loopedFrames())
                    .as("5 packets per message, 20 messages, and ACKs")
                    .isGreaterThanOrEqualTo(100);
            assertThat(n.engine.loopDrops()).isZero();
            assertThat(n.engine.datapath().counters.dataRetransmits).isZero();
        }
    }

    @Test
    void rcLoopbackOnTheUdpPort() throws Exception {
        int udp = 20000 + new Random().nextInt(20000);
        int ip = Inet4.parse("127.0.0.1");
        try (TestNode n = new TestNode(new UdpPort(ip, udp, EngineAgent.FRAME_BYTES, 32), udp, System::nanoTime)) {
            rcPingPong(n, ip, System.nanoTime() + 30_000_000_000L, System::nanoTime);
            assertThat(n.port.counters().txFrames)
                    .as("nothing went to the socket")
                    .isZero();
            assertThat(n.engine.loopedFrames()).isGreaterThanOrEqualTo(100);
        }
    }

    @Test
    void udBetweenTwoQpsOfOneDaemonGetsAGrhFromAndToItself() throws Exception {
        int ip = Inet4.parse("198.18.0.1");
        MemoryLink.End port = memoryPort(clock, ip);
        try (TestNode n = new TestNode(port, 4793, clock::get);
                Arena arena = Arena.ofShared()) {
            n.hello();
            int pd = n.allocPd();
            MemorySegment buf = arena.allocate(8192, 64);
            int[] mr = n.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE);
            TestNode.CqHandles cq = n.createCq(16, NO_HANDLE);
            TestNode.QpHandles x = n.createQp(pd, cq.handle(), cq.handle(), NO_HANDLE, Ibv.QPT_UD, 4, 1, 0);
            TestNode.QpHandles y = n.createQp(pd, cq.handle(), cq.handle(), NO_HANDLE, Ibv.QPT_UD, 4, 1, 0);
            for (TestNode.QpHandles q : List.of(x, y)) {
                QpAttrs a = new QpAttrs();
                a.qpState = Ibv.QPS_INIT;
                a.portNum = 1;
                a.qkey = 0x11111111;
                assertThat(n.modifyQp(q.handle(), Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_QKEY, a))
                        .isZero();
                a.qpState = Ibv.QPS_RTR;
                assertThat(n.modifyQp(q.handle(), Ibv.QP_STATE, a)).isZero();
                a.qpState = Ibv.QPS_RTS;
                assertThat(n.modifyQp(q.handle(), Ibv.QP_STATE | Ibv.QP_SQ_PSN, a))
                        .isZero();
            }
            buf.set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
            assertThat(n.post(y.rq(), 7, 0, 0, 0, new long[] {buf.address() + 4096}, new int[] {4096}, mr[1]))
                    .isTrue();
            RingFlyweight sq = x.sq();
            long slot = sq.slotOffset(0);
            new WqeFlyweight()
                    .wrap(sq.segment(), slot)
                    .wrId(8)
                    .opcode(Ibv.WR_SEND)
                    .sendFlags(Ibv.SEND_SIGNALED)
                    .numSge(1)
                    .sge(0, buf.address(), 8, mr[1]);
            sq.segment().set(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_REMOTE_QPN, y.qpn());
            sq.segment().set(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_REMOTE_QKEY, 0x11111111);
            sq.segment().set(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_DEST_IPV4, Integer.reverseBytes(ip));
            sq.producerRelease(1);
            List<TestNode.Cqe> got = new ArrayList<>();
            for (int i = 0; i < 20 && got.size() < 2; i++) {
                n.pump();
                got.addAll(n.poll(cq.ring()));
            }
            assertThat(got).extracting(TestNode.Cqe::wrId).containsExactlyInAnyOrder(7L, 8L);
            TestNode.Cqe recv =
                    got.stream().filter(c -> c.wrId() == 7).findFirst().orElseThrow();
            assertThat(recv.byteLen()).isEqualTo(48);
            assertThat(recv.srcQp()).isEqualTo(x.qpn());
            byte[] gid = Inet4.mappedGid(ip);
            assertThat(buf.asSlice(4096 + 8, 16).toArray(ValueLayout.JAVA_BYTE))
                    .as("sgid")
                    .isEqualTo(gid);
            assertThat(buf.asSlice(4096 + 24, 16).toArray(ValueLayout.JAVA_BYTE))
                    .as("dgid")
                    .isEqualTo(gid);
            assertThat(buf.get(ValueLayout.JAVA_LONG, 4096 + 40)).isEqualTo(0x1122334455667788L);
            assertThat(port.counters().txFrames).isZero();
            assertThat(n.engine.loopedFrames()).isEqualTo(1);
        }
    }

    @Test
    void theLocalQueueKeepsFramesUntilReleasedAndDropsWhenFull() {
        int ip = Inet4.parse("198.18.0.1");
        MemoryLink.End inner = memoryPort(clock, ip);
        LoopbackPort loop = new LoopbackPort(inner);
        try {
            for (int i = 0; i < LoopbackPort.SLOTS + 3; i++) {
                MemorySegment f = loop.claim();
                f.set(ValueLayout.JAVA_INT, 0, i);
                loop.commit(4 + (i % 7), ip, 4793, i);
            }
            assertThat(loop.drops).isEqualTo(3);
            assertThat(loop.looped).isEqualTo(LoopbackPort.SLOTS);
            // to another address: the real port
            loop.claim().set(ValueLayout.JAVA_INT, 0, -1);
            loop.commit(4, Inet4.parse("198.18.0.2"), 4793, 0);
            assertThat(inner.counters().txFrames).isEqualTo(1);
            // to our address but another UDP port: not us either
            loop.claim();
            loop.commit(4, ip, 4794, 0);
            assertThat(inner.counters().txFrames).isEqualTo(2);

            List<Integer> seen = new ArrayList<>();
            Port.FrameHandler h = (frame, view, length, srcIp, srcPort, ecn) -> {
                int v = frame.get(ValueLayout.JAVA_INT, 0);
                seen.add(v);
                assertThat(length).isEqualTo(4 + (v % 7));
                assertThat(view.remaining()).isEqualTo(length);
                assertThat(srcIp).isEqualTo(ip);
                assertThat(srcPort).isEqualTo(4793);
                if (v == 0) {
                    // sent while the batch is handled: no room until it is released
                    loop.claim().set(ValueLayout.JAVA_INT, 0, 1000);
                    loop.commit(4, ip, 4793, 0);
                }
            };
            assertThat(loop.pollLocal(h)).isEqualTo(LoopbackPort.SLOTS);
            assertThat(loop.drops).as("the queue held the batch being handled").isEqualTo(4);
            assertThat(seen).hasSize(LoopbackPort.SLOTS).first().isEqualTo(0);
            assertThat(seen.get(LoopbackPort.SLOTS - 1)).isEqualTo(LoopbackPort.SLOTS - 1);
            assertThat(loop.pending()).isFalse();
            loop.release();
            loop.claim().set(ValueLayout.JAVA_INT, 0, 2000);
            loop.commit(4, ip, 4793, 0);
            seen.clear();
            assertThat(loop.pollLocal(
                            (frame, view, length, srcIp, srcPort, ecn) -> seen.add(frame.get(ValueLayout.JAVA_INT, 0))))
                    .isEqualTo(1);
            assertThat(seen).containsExactly(2000);
        } finally {
            loop.close();
            inner.close();
        }
    }
}
