package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Proc;
import io.metaroce.it.jverbs.apps.OpcodesApp;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Every opcode through java-verbs between two namespaces, with data checks at both ends: RDMA
 * WRITE (read back), WRITE_WITH_IMM, READ, CMP_AND_SWP, FETCH_AND_ADD, UD SEND through an
 * address handle, a bad rkey (REM_ACCESS_ERR), a shared receive queue, and {@code jverbs
 * write-bw -c}. These need the provider and daemon work on RDMA WRITE/READ/atomics, UD and SRQ
 * (other branches): before that is merged they fail, each with the refused verb named
 * (e.g. "ibv_post_send failed: Invalid argument (errno 22) ... opcode RDMA_WRITE").
 */
@Timeout(900)
@JverbsFabricTest.Mtu(9000)
class JverbsOpcodesIT extends JverbsFabricTest {

    @Test
    void everyOpcodeBetweenTwoHosts() {
        JverbsFabric.Outcome o = fabric.runPair(
                18800,
                JverbsFabric.javaApp(OpcodesApp.class, "server", "18800"),
                JverbsFabric.javaApp(OpcodesApp.class, "client", fabric.b().addr(), "18800"),
                Duration.ofSeconds(180));
        String ctx = o.both() + "\n" + fabric.diagnostics();
        assertThat(o.clientOutput()).as(ctx).contains("9 passed, 0 failed");
        assertThat(o.serverOutput()).as(ctx).contains("7 passed, 0 failed");
        assertThat(o.clientExit()).as(ctx).isZero();
        assertThat(o.serverExit()).as(ctx).isZero();
    }

    @Test
    void sharedReceiveQueue() {
        try (Proc p = fabric.start(fabric.a(), "srq", JverbsFabric.javaApp(OpcodesApp.class, "srq"))) {
            int exit = p.waitFor(Duration.ofSeconds(120));
            assertThat(p.output())
                    .contains("PASS sharedReceiveQueueFeedsAQueuePair")
                    .contains("1 passed, 0 failed");
            assertThat(exit).isZero();
        }
    }

    @Test
    void writeBandwidthToolMovesCheckedData() {
        JverbsFabric.Outcome o = fabric.runPair(
                18801,
                JverbsFabric.jverbs(
                        "write-bw", "-d", "mrce0", "-g", "0", "-p", "18801", "-s", "65536", "-n", "500", "-c"),
                JverbsFabric.jverbs(
                        "write-bw",
                        "-d",
                        "mrce0",
                        "-g",
                        "0",
                        "-p",
                        "18801",
                        "-s",
                        "65536",
                        "-n",
                        "500",
                        "-c",
                        fabric.b().addr()),
                Duration.ofSeconds(180));
        String ctx = o.both() + "\n" + fabric.diagnostics();
        assertThat(o.clientExit()).as(ctx).isZero();
        assertThat(o.serverExit()).as(ctx).isZero();
        assertThat(o.serverOutput())
                .as(ctx)
                .contains("32768000 bytes in ")
                .contains("500 iters in ")
                .contains("data OK: 65536 bytes");
        assertThat(o.clientOutput()).as(ctx).contains("32768000 bytes in ");
    }
}
