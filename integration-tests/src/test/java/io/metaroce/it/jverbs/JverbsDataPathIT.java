package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Proc;
import io.metaroce.it.jverbs.apps.ErrorsApp;
import io.metaroce.it.jverbs.apps.LeakApp;
import io.metaroce.it.jverbs.apps.SendRecvApp;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * java-verbs over mrce0 today (RC SEND/RECV): data on every data-path shape between two
 * namespaces, the errors the binding must make clear, and no native memory growth over 10^5
 * post/poll cycles.
 */
@Timeout(900)
@JverbsFabricTest.Mtu(9000)
class JverbsDataPathIT extends JverbsFabricTest {

    @Test
    void sendRecvEveryShapeWithDataChecks() {
        int n = 3000;
        int max = 9000;
        CRC32 crc = new CRC32();
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            int len = SendRecvApp.size(i, max);
            for (int j = 0; j < len; j++) {
                crc.update(SendRecvApp.data(i, j));
            }
            bytes += len;
        }
        String expected = String.format("OK messages=%d bytes=%d crc=0x%08x", n, bytes, crc.getValue());
        JverbsFabric.Outcome o = fabric.runPair(
                18790,
                JverbsFabric.javaApp(SendRecvApp.class, "server", "18790", Integer.toString(n), Integer.toString(max)),
                JverbsFabric.javaApp(
                        SendRecvApp.class,
                        "client",
                        fabric.b().addr(),
                        "18790",
                        Integer.toString(n),
                        Integer.toString(max)),
                Duration.ofSeconds(300));
        String ctx = o.both() + "\n" + fabric.diagnostics();
        assertThat(o.clientExit()).as("client%n%s", ctx).isZero();
        assertThat(o.serverExit()).as("server%n%s", ctx).isZero();
        assertThat(o.clientOutput()).as("client: what it sent").contains(expected);
        assertThat(o.serverOutput()).as("server: what it received and checked").contains(expected);
    }

    @Test
    void errorsAreClear() {
        try (Proc p = fabric.start(fabric.a(), "errors", JverbsFabric.javaApp(ErrorsApp.class))) {
            int exit = p.waitFor(Duration.ofSeconds(120));
            String out = p.output();
            assertThat(out).as(out).contains("10 passed, 0 failed");
            for (String name : new String[] {
                "postSendBeforeRtsNamesTheVerbAndErrno",
                "postRecvInResetNamesTheVerb",
                "closedQueuePairIsAClearError",
                "doubleCloseIsANoOp",
                "closingAProtectionDomainWithALiveMemoryRegionFails",
                "closingACompletionQueueUnderAQueuePairFails",
                "heapMemoryCannotBeRegistered",
                "badModifyNamesIbvModifyQp",
                "unknownDeviceIsNamed",
                "badLkeyCompletesWithAnErrorStatus"
            }) {
                assertThat(out).as(out).contains("PASS " + name);
            }
            assertThat(out)
                    .contains("ibv_post_send failed: Invalid argument (errno 22)")
                    .contains("cannot close ProtectionDomain")
                    .contains("completed with status LOC_PROT_ERR");
            assertThat(exit).as(out).isZero();
        }
    }

    /**
     * 10^5 SEND/RECV post+poll cycles after 2*10^4 of warm-up, in an interpreted JVM (no JIT
     * allocating in the background) with a fixed, pre-touched heap: what is left to grow is native
     * memory of the binding, libibverbs and the provider. Bounds: RSS +1 MiB, malloc +256 KiB
     * (2.6 bytes per cycle).
     */
    @Test
    void noNativeGrowthOver100kPostPollCycles() {
        var cmd = new java.util.ArrayList<>(JverbsFabric.javaApp(LeakApp.class, "120000", "20000"));
        int at = cmd.indexOf("-XX:+UseSerialGC");
        cmd.addAll(at, java.util.List.of("-Xint", "-Xms64m", "-Xmx64m", "-XX:+AlwaysPreTouch"));
        try (Proc p = fabric.start(fabric.a(), "leak", cmd)) {
            int exit = p.waitFor(Duration.ofSeconds(300));
            String out = p.output();
            assertThat(exit).as(out).isZero();
            Matcher m = Pattern.compile(
                            "rss warm=(\\d+) end=(\\d+) malloc warm=(\\d+) end=(\\d+) cycles=(\\d+) checked=(\\d+)")
                    .matcher(out);
            assertThat(m.find()).as(out).isTrue();
            long rssWarm = Long.parseLong(m.group(1));
            long rssEnd = Long.parseLong(m.group(2));
            long mallocWarm = Long.parseLong(m.group(3));
            long mallocEnd = Long.parseLong(m.group(4));
            assertThat(Long.parseLong(m.group(5))).isEqualTo(120_000);
            assertThat(Long.parseLong(m.group(6)))
                    .as("every message's payload checked")
                    .isEqualTo(120_000);
            assertThat(rssEnd - rssWarm)
                    .as("VmRSS growth in KiB over 10^5 cycles: %s", out)
                    .isLessThan(1024);
            assertThat(mallocEnd - mallocWarm)
                    .as("malloc'd bytes growth over 10^5 cycles: %s", out)
                    .isLessThan(256 * 1024);
        }
    }
}
