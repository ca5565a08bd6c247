package io.metaroce.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Transport goodput on SimFabric: for each scenario and each transport, streams large SENDs
 * between two engines over N equal paths and prints goodput as a fraction of the aggregate
 * capacity, with the first transport as the base of the ratio column.
 */
public final class TransportBench {

    private TransportBench() {}

    public static void main(String[] args) throws Exception {
        BenchConfig cfg;
        try {
            cfg = BenchConfig.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        long wall = System.nanoTime();
        System.out.println("MetaRoCE transport goodput on SimFabric");
        System.out.println(cfg.describe());
        System.out.println("aggregate capacity " + fmt(cfg.aggregateBitsPerSec() / 1e9, 1)
                + " Gbit/s; impaired path: link 0; goodput = bytes of successful receive completions"
                + " in the measured interval");
        System.out.println();
        String head = String.format(Locale.ROOT, "%-30s %-10s %9s %9s %9s %8s %8s %7s %9s %20s  %s",
                "scenario", "transport", "Gbit/s", "goodput", "offered", "vs base", "retx", "RTOs",
                "drops", "detect", "note");
        System.out.println(head);
        System.out.println("-".repeat(head.length()));
        List<BenchRun.Result> all = new ArrayList<>();
        for (Scenario s : cfg.scenarios) {
            double base = -1;
            for (TransportMode m : cfg.modes) {
                BenchRun.Result r = new BenchRun(cfg, s, m).run();
                all.add(r);
                if (base < 0) {
                    base = r.fraction();
                }
                String ratio = base > 0 ? fmt(r.fraction() / base, 2) + "x" : "-";
                String detect = r.detectNs() == -2 ? "n/a"
                        : r.detectNs() == -1 ? (s.hasEvent() ? "never" : "-")
                        : fmt(r.detectNs() / 1000.0, 1) + " us" + (r.detectSrttNs() > 0
                                ? " (" + fmt((double) r.detectNs() / r.detectSrttNs(), 1) + " srtt)" : "");
                System.out.println(String.format(Locale.ROOT,
                        "%-30s %-10s %9s %9s %9s %8s %8d %7d %9d %20s  %s",
                        s.title, m.name(), fmt(r.goodputBps() / 1e9, 2), fmt(r.fraction(), 3),
                        fmt(s.available(cfg.links), 3), ratio, r.retransmits(), r.timeouts(),
                        r.linkDrops(), detect, r.note()));
            }
        }
        System.out.println();
        System.out.println("goodput: fraction of the nominal aggregate capacity; offered: the share the"
                + " impaired fabric still offers; vs base: goodput over the first transport's;"
                + " retx/RTOs: sender retransmissions and timeouts while measuring; drops: frames the"
                + " fabric dropped (whole run); detect: time from the blackhole to a path marked down (in srtt: that path's smoothed"
                + " RTT just before the blackhole)");
        System.out.println("wall time " + fmt((System.nanoTime() - wall) / 1e9, 1) + " s for " + all.size()
                + " runs");
    }

    static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
