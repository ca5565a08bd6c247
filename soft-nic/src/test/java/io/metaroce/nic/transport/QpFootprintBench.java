package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A measurement, not a test (it runs only with {@code -Dmrce.footprint=N}, bench/README.md "QP
 * scale"): N connected RC QP pairs of 48 paths between two engines in this JVM, a 64-byte WRITE
 * on each, then the Java heap each QP holds (after full GCs) and the wall time of one idle duty
 * cycle of an engine serving N QPs. Prints one line; asserts only that every WRITE completed.
 */
class QpFootprintBench {
    @Test
    @EnabledIfSystemProperty(named = "mrce.footprint", matches = "\\d+")
    void heapPerQpAndIdleCycleCost() throws Exception {
        int n = Integer.getInteger("mrce.footprint");
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        long before = usedAfterGc(mem);
        RdmaRig.Config c = new RdmaRig.Config();
        c.qps = n;
        c.wr = 16;
        TransportSettings s = TransportSettings.SIMULATION;
        c.transport = new TransportSettings(
                TransportSettings.DEFAULT_PATHS,
                0,
                false,
                s.rtoInitialNs(),
                s.rtoMaxNs(),
                s.rtoMinNs(),
                s.tlpMinNs(),
                s.ccSlackMinNs(),
                s.lossDetectVarFactor(),
                s.qpWindowGain(),
                s.probesPerQp(),
                s.probesPerDaemon());
        try (RdmaRig r = new RdmaRig(c)) {
            for (int i = 0; i < n; i++) {
                assertThat(r.postSend(
                                i,
                                i,
                                Ibv.WR_RDMA_WRITE,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {r.localAddr(64L * i)},
                                new int[] {64},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(64L * i),
                                0,
                                0))
                        .isTrue();
            }
            r.runUntil(n, 0, 100_000);
            assertThat(r.sendCqes).hasSize(n);
            r.idle(50, 1_000_000);
            long after = usedAfterGc(mem);
            int cycles = 2000;
            for (int w = 0; w < 3; w++) { // warm, then measure
                long t0 = System.nanoTime();
                for (int i = 0; i < cycles; i++) {
                    r.a.engine.doWork(r.clock.get());
                }
                long ns = System.nanoTime() - t0;
                if (w == 2) {
                    System.out.printf(
                            "footprint: %d QP pairs of %d paths: %.1f KiB of heap per QP (both engines), idle duty"
                                    + " cycle %.1f us (%.0f ns per QP)%n",
                            n,
                            TransportSettings.DEFAULT_PATHS,
                            (after - before) / 1024.0 / (2.0 * n),
                            ns / 1e3 / cycles,
                            (double) ns / cycles / n);
                }
            }
        }
    }

    private static long usedAfterGc(MemoryMXBean mem) {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return mem.getHeapMemoryUsage().getUsed();
    }
}
