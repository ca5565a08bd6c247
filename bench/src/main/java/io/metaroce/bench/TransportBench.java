package io.metaroce.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Transport goodput on SimFabric: for each scenario and each transport, streams large SENDs
 * between two engines over N equal paths, once per seed, and prints the median run's goodput as a
 * fraction of the aggregate capacity (with the seeds' range), the first transport the base of the
 * ratio column. The impaired link is the one the baseline's path takes.
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
        System.out.println("MetaRoCE transport goodput on SimFabric, commit "
                + System.getProperty("metaroce.commit", "(unknown)"));
        System.out.println(cfg.describe());
        System.out.println("aggregate capacity " + fmt(cfg.aggregateBitsPerSec() / 1e9, 1)
                + " Gbit/s; impaired link: the baseline's (per seed); goodput = bytes of successful receive"
                + " completions in the measured interval; median of " + cfg.seeds.length + " seeds");
        System.out.println();
        String head = String.format(
                Locale.ROOT,
                "%-30s %-10s %9s %9s %13s %9s %8s %8s %7s %9s %20s  %s",
                "scenario",
                "transport",
                "Gbit/s",
                "goodput",
                "seeds' range",
                "offered",
                "vs base",
                "retx",
                "RTOs",
                "drops",
                "detect",
                "note");
        System.out.println(head);
        System.out.println("-".repeat(head.length()));
        List<BenchRun.Result> all = new ArrayList<>();
        for (Scenario s : cfg.scenarios) {
            double base = -1;
            for (TransportMode m : cfg.modes) {
                List<BenchRun.Result> runs = new ArrayList<>();
                for (long seed : cfg.seeds) {
                    runs.add(new BenchRun(cfg, s, m, seed).run());
                }
                all.addAll(runs);
                runs.sort(java.util.Comparator.comparingDouble(BenchRun.Result::fraction));
                BenchRun.Result r = runs.get(runs.size() / 2);
                String range = fmt(runs.getFirst().fraction(), 3) + "-"
                        + fmt(runs.getLast().fraction(), 3);
                StringBuilder links = new StringBuilder();
                for (BenchRun.Result x : runs) {
                    links.append(links.isEmpty() ? "" : ",").append(x.impairedLink());
                }
                if (base < 0) {
                    base = r.fraction();
                }
                String ratio = base > 0 ? fmt(r.fraction() / base, 2) + "x" : "-";
                String detect = r.detectNs() == -2
                        ? "n/a"
                        : r.detectNs() == -1
                                ? (s.hasEvent() ? "never" : "-")
                                : fmt(r.detectNs() / 1000.0, 1) + " us"
                                        + (r.detectSrttNs() > 0
                                                ? " (" + fmt((double) r.detectNs() / r.detectSrttNs(), 1) + " srtt)"
                                                : "");
                String note = (s == Scenario.NO_LOSS || s == Scenario.LOSS_1PCT_ALL
                                ? ""
                                : "impaired link " + links + " (seed " + r.seed() + ")")
                        + (r.note().isEmpty() ? "" : "; " + r.note());
                System.out.println(String.format(
                        Locale.ROOT,
                        "%-30s %-10s %9s %9s %13s %9s %8s %8d %7d %9d %20s  %s",
                        s.title,
                        m.name(),
                        fmt(r.goodputBps() / 1e9, 2),
                        fmt(r.fraction(), 3),
                        range,
                        fmt(s.available(cfg.links), 3),
                        ratio,
                        r.retransmits(),
                        r.timeouts(),
                        r.linkDrops(),
                        detect,
                        note));
            }
        }
        System.out.println();
        System.out.println("goodput: fraction of the nominal aggregate capacity (the median seed's run; seeds' range:"
                + " lowest-highest); offered: the share the"
                + " impaired fabric still offers; vs base: goodput over the first transport's;"
                + " retx/RTOs: sender retransmissions and timeouts while measuring; drops: frames the"
                + " fabric dropped (whole run); detect: time from the blackhole to a path marked down (in srtt: that path's smoothed"
                + " RTT just before the blackhole)");
        System.out.println("wall time " + fmt((System.nanoTime() - wall) / 1e9, 1) + " s for " + all.size() + " runs");
    }

    static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
