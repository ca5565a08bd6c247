package io.metaroce.nic.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.port.UdpPort;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Two in-process daemons over real UDP sockets on 127.0.0.1 and 127.0.0.2 (loopback mode),
 * driven by hand with the real clock; the application buffers are in this process.
 */
class UdpEndToEndTest {

    @Test
    void pingPongOverLoopbackUdp() throws Exception {
        int udp = 20000 + new Random().nextInt(20000);
        int ipA = Inet4.parse("127.0.0.1");
        int ipB = Inet4.parse("127.0.0.2");
        int n = 200;
        int size = 5000;
        try (Arena arena = Arena.ofShared();
                TestNode a = new TestNode(new UdpPort(ipA, udp, EngineAgent.FRAME_BYTES, 32), udp, System::nanoTime);
                TestNode b = new TestNode(new UdpPort(ipB, udp, EngineAgent.FRAME_BYTES, 32), udp, System::nanoTime)) {
            a.hello();
            b.hello();
            int pdA = a.allocPd();
            int pdB = b.allocPd();
            MemorySegment bufA = arena.allocate(2L * size, 64);
            MemorySegment bufB = arena.allocate(2L * size, 64);
            int[] mrA = a.regMr(pdA, bufA, Ibv.ACCESS_LOCAL_WRITE);
            int[] mrB = b.regMr(pdB, bufB, Ibv.ACCESS_LOCAL_WRITE);
            TestNode.CqHandles cqA = a.createCq(64, AbiConstants.NO_HANDLE);
            TestNode.CqHandles cqB = b.createCq(64, AbiConstants.NO_HANDLE);
            TestNode.QpHandles qpA = a.createQp(pdA, cqA.handle(), cqA.handle(), 16, 1, 0);
            TestNode.QpHandles qpB = b.createQp(pdB, cqB.handle(), cqB.handle(), 16, 1, 0);
            a.connect(qpA.handle(), ipB, qpB.qpn(), 11, 22, Ibv.MTU_1024);
            b.connect(qpB.handle(), ipA, qpA.qpn(), 22, 11, Ibv.MTU_1024);
            Random rnd = new Random(5);
            byte[] msg = new byte[size];
            long deadline = System.nanoTime() + 30_000_000_000L;
            for (int i = 0; i < n; i++) {
                // A -> B, then B echoes it back A; A checks what came back
                rnd.nextBytes(msg);
                MemorySegment.copy(MemorySegment.ofArray(msg), 0, bufA, 0, size);
                assertThat(b.post(qpB.rq(), i, 0, 0, 0, new long[] {bufB.address() + size}, new int[] {size}, mrB[1]))
                        .isTrue();
                assertThat(a.post(qpA.rq(), i, 0, 0, 0, new long[] {bufA.address() + size}, new int[] {size}, mrA[1]))
                        .isTrue();
                assertThat(a.post(
                                qpA.sq(),
                                i,
                                Ibv.WR_SEND,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {bufA.address()},
                                new int[] {size},
                                mrA[1]))
                        .isTrue();
                List<TestNode.Cqe> gotB = new ArrayList<>();
                while (gotB.isEmpty()) {
                    a.pump();
                    b.pump();
                    gotB.addAll(b.poll(cqB.ring()));
                    assertThat(System.nanoTime()).isLessThan(deadline);
                }
                assertThat(gotB).singleElement().satisfies(c -> {
                    assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS);
                    assertThat(c.byteLen()).isEqualTo(size);
                });
                MemorySegment.copy(bufB, size, bufB, 0, size);
                assertThat(b.post(
                                qpB.sq(),
                                i,
                                Ibv.WR_SEND,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {bufB.address()},
                                new int[] {size},
                                mrB[1]))
                        .isTrue();
                List<TestNode.Cqe> gotA = new ArrayList<>();
                List<TestNode.Cqe> sentB = new ArrayList<>();
                while (gotA.size() < 2 || sentB.isEmpty()) {
                    a.pump();
                    b.pump();
                    gotA.addAll(a.poll(cqA.ring()));
                    sentB.addAll(b.poll(cqB.ring()));
                    assertThat(System.nanoTime()).isLessThan(deadline);
                }
                assertThat(gotA).extracting(TestNode.Cqe::opcode).containsExactlyInAnyOrder(Ibv.WC_SEND, Ibv.WC_RECV);
                assertThat(gotA).allMatch(c -> c.status() == Ibv.WC_SUCCESS);
                assertThat(bufA.asSlice(size, size).toArray(ValueLayout.JAVA_BYTE))
                        .isEqualTo(msg);
            }
            assertThat(a.port.counters().rxBadCrc).isZero();
            assertThat(a.port.counters().rxUnknownQp).isZero();
            assertThat(b.engine.datapath().counters.rnrDrops)
                    .as("receives are read before RNR")
                    .isZero();
        }
    }
}
