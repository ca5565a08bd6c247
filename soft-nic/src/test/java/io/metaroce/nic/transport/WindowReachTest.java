package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * How far the RSN window (W = {@link RcRequester#WINDOW} packets, the SACK bitmap's span) reaches:
 * one QP of 48 paths over 4 links of 500 Mbit/s (issue 13's fabric) on the SimFabric, with the
 * one-way delay raised until the window, not the links, limits it. At path MTU 4096 a window
 * holds 1 MiB and fills the 2 Gbit/s beyond a 2 ms round trip; at path MTU 1024 (what a 1500-byte
 * Ethernet MTU gives) it holds 256 KiB, which covers the bandwidth-delay product up to about a
 * 1 ms round trip, and a 2 ms one halves the QP (printed, not asserted: it is the limit this test
 * documents). The table is printed ({@code mvn -o -B -pl soft-nic -am test -Dtest=WindowReachTest});
 * the asserts are guards.
 */
class WindowReachTest {

    static double run(int mtu, long oneWayUs) throws Exception {
        SimStream.Config c = new SimStream.Config();
        c.seed = 13;
        c.links = 4;
        c.paths = 48;
        c.rateBitsPerSec = 500_000_000L;
        c.mtu = mtu;
        c.delayNs = oneWayUs * 1000;
        c.queueBytes = 512 * 1024;
        c.daemonTimers = true;
        c.warmupNs = 20_000_000;
        c.measureNs = 60_000_000;
        int[] window = new int[1];
        c.inspect = r -> window[0] = r.window();
        SimStream.Result r = SimStream.run(c);
        assertThat(r.failed()).as(r.note()).isFalse();
        double share = r.gbps() / 2;
        System.out.println(String.format(
                Locale.ROOT,
                "window-reach path MTU %4d, one-way delay %4d us: %.3f Gbit/s, %.2f of 2, QP window %d packets",
                mtu == Ibv.MTU_1024 ? 1024 : 4096,
                oneWayUs,
                r.gbps(),
                share,
                window[0]));
        return share;
    }

    @Test
    void theWindowCoversTheBandwidthDelayProductOfFourRateLimitedLinks() throws Exception {
        assertThat(run(Ibv.MTU_1024, 10)).isGreaterThanOrEqualTo(0.9);
        assertThat(run(Ibv.MTU_1024, 500)).isGreaterThanOrEqualTo(0.9);
        run(Ibv.MTU_1024, 1000);
        assertThat(run(Ibv.MTU_4096, 10)).isGreaterThanOrEqualTo(0.9);
        assertThat(run(Ibv.MTU_4096, 1000)).isGreaterThanOrEqualTo(0.9);
    }
}
