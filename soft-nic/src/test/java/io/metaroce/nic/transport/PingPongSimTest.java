package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The {@link SimPingPong} exchange at 1, 8 and 48 paths, 64 bytes and 4 KiB: every byte of every
 * message and reply checked, and (simulated time, so independent of the machine's load) no
 * iteration window waits on a timer: an iteration is one round trip plus a few duty-cycle steps,
 * with no tail-loss probe, probe, retransmission or timeout in a loss-free ping-pong, from the
 * first iteration of a fresh QP on (issue 17's cold start). The figures are printed.
 */
class PingPongSimTest {

    @Test
    void aLossFreePingPongNeverWaitsOnATimerFromItsFirstIteration() throws Exception {
        StringBuilder table = new StringBuilder(SimPingPong.HEADER);
        for (int bytes : new int[] {64, 4096}) {
            for (int paths : new int[] {1, 8, 48}) {
                SimPingPong.Config c = new SimPingPong.Config();
                c.paths = paths;
                c.bytes = bytes;
                c.iterations = 1200;
                c.windows = new int[][] {{0, 200}, {1000, 1200}};
                SimPingPong.Result r = SimPingPong.run(c);
                table.append(SimPingPong.format(r));
                assertThat(r.bytesChecked()).isEqualTo(2L * bytes * c.iterations);
                // two one-way delays of 20 us, serialization (4 KiB: 3.3 us a hop) and a few 1 us steps
                for (SimPingPong.Window w : r.windows()) {
                    assertThat(w.simUsPerIter())
                            .as("%d paths, %d bytes: %s", paths, bytes, w)
                            .isLessThan(60);
                    assertThat(w.tlpsPerIter() + w.probesPerIter() + w.retxPerIter() + w.timeoutsPerIter())
                            .as("%d paths, %d bytes: %s", paths, bytes, w)
                            .isZero();
                    assertThat(w.dataPerIter()).isEqualTo(2.0);
                }
            }
        }
        System.out.print("PingPongSimTest:\n" + table);
    }
}
