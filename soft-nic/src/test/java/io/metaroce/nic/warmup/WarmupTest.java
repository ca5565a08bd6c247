package io.metaroce.nic.warmup;

import static io.metaroce.abi.AbiConstants.NO_HANDLE;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.TestNode;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The start-up warm-up: it moves data through the real engine, then leaves nothing behind (no
 * shared ring memory mapped or open, no thread), and a daemon made after it starts from zero and
 * serves normally.
 */
class WarmupTest {

    /** Mappings and descriptors of the rings' memfds (VerbsService names them "mrce-*"). */
    private static long memfdsInUse() throws IOException {
        long maps;
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            maps = lines.filter(l -> l.contains("/memfd:")).count();
        }
        long fds = 0;
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            for (Path p : s.toList()) {
                try {
                    if (Files.readSymbolicLink(p).toString().startsWith("/memfd:")) {
                        fds++;
                    }
                } catch (IOException gone) {
                    // the listing's own descriptor
                }
            }
        }
        return maps + fds;
    }

    private static long warmupThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().equals("mrce-process-watcher"))
                .count();
    }

    @Test
    void movesDataThroughTheEngineAndLeavesNothingBehind() throws Exception {
        long memfdsBefore = memfdsInUse();
        long threadsBefore = warmupThreads();
        Warmup.Result r = Warmup.run(40, Long.MAX_VALUE / 4);
        assertThat(r.stop()).isEqualTo("rounds");
        assertThat(r.rounds()).isEqualTo(40);
        // per round: 4 SEND/RECV messages and 4 RDMA ops, each at least one packet, plus ACKs
        assertThat(r.frames()).isGreaterThanOrEqualTo(40 * 8);
        assertThat(memfdsInUse()).as("ring memfds mapped or open").isEqualTo(memfdsBefore);
        assertThat(warmupThreads()).isEqualTo(threadsBefore);
    }

    private static MemoryLink.End port(AtomicLong clock, int ip) {
        MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, clock::get);
        MemoryLink.End port = link.end(ip, 4793);
        link.connect(port, link.end(Inet4.parse("198.18.9.9"), 4793));
        return port;
    }

    /** The handle and QPN of the first QP of a fresh daemon (sequential identifiers in tests). */
    private static int[] firstQp(AtomicLong clock, int ip) throws Exception {
        try (TestNode n = new TestNode(port(clock, ip), 4793, clock::get);
                Arena arena = Arena.ofShared()) {
            n.hello();
            int pd = n.allocPd();
            n.regMr(pd, arena.allocate(4096 * 4, 64), Ibv.ACCESS_LOCAL_WRITE);
            TestNode.CqHandles cq = n.createCq(64, NO_HANDLE);
            TestNode.QpHandles x = n.createQp(pd, cq.handle(), cq.handle(), 16, 1, 0);
            return new int[] {x.handle(), x.qpn()};
        }
    }

    @Test
    void aDaemonMadeAfterTheWarmupStartsFromZeroAndServes() throws Exception {
        AtomicLong clock = new AtomicLong();
        int ip = Inet4.parse("198.18.0.1");
        int[] fresh = firstQp(clock, ip);
        Warmup.run(20, Long.MAX_VALUE / 4);
        MemoryLink.End port = port(clock, ip);
        try (TestNode n = new TestNode(port, 4793, clock::get);
                Arena arena = Arena.ofShared()) {
            assertThat(port.counters().rxFrames + port.counters().txFrames).isZero();
            assertThat(n.engine.loopedFrames()).isZero();
            assertThat(n.engine.datapath().counters.dataRetransmits).isZero();
            assertThat(n.service.sessionCount()).isZero();
            n.hello();
            int pd = n.allocPd();
            int size = 4096;
            MemorySegment buf = arena.allocate(4L * size, 64);
            int[] mr = n.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE);
            TestNode.CqHandles cq = n.createCq(64, NO_HANDLE);
            TestNode.QpHandles x = n.createQp(pd, cq.handle(), cq.handle(), 16, 1, 0);
            TestNode.QpHandles y = n.createQp(pd, cq.handle(), cq.handle(), 16, 1, 0);
            assertThat(new int[] {x.handle(), x.qpn()})
                    .as("numbered as in a daemon without warm-up")
                    .containsExactly(fresh);
            n.connect(x.handle(), ip, y.qpn(), 100, 200, Ibv.MTU_1024);
            n.connect(y.handle(), ip, x.qpn(), 200, 100, Ibv.MTU_1024);
            byte[] msg = new byte[size];
            new Random(17).nextBytes(msg);
            MemorySegment.copy(MemorySegment.ofArray(msg), 0, buf, 0, size);
            assertThat(n.post(y.rq(), 1, 0, 0, 0, new long[] {buf.address() + 2L * size}, new int[] {size}, mr[1]))
                    .isTrue();
            assertThat(n.post(
                            x.sq(),
                            2,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {buf.address()},
                            new int[] {size},
                            mr[1]))
                    .isTrue();
            List<TestNode.Cqe> got = new ArrayList<>();
            for (int i = 0; i < 1000 && got.size() < 2; i++) {
                n.pump();
                got.addAll(n.poll(cq.ring()));
            }
            assertThat(got).extracting(TestNode.Cqe::status).containsOnly(Ibv.WC_SUCCESS);
            assertThat(got).extracting(TestNode.Cqe::opcode).containsExactlyInAnyOrder(Ibv.WC_SEND, Ibv.WC_RECV);
            assertThat(buf.asSlice(2L * size, size).toArray(ValueLayout.JAVA_BYTE))
                    .isEqualTo(msg);
            assertThat(n.engine.loopedFrames())
                    .as("4 packets and their ACKs, this daemon's only")
                    .isBetween(4L, 16L);
        }
    }
}
