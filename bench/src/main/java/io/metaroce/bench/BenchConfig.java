package io.metaroce.bench;

import io.metaroce.nic.abi.Ibv;
import java.util.ArrayList;
import java.util.List;

/** The benchmark's settings, from the command line. */
final class BenchConfig {
    int links = 8;
    long rateBitsPerSec = 10_000_000_000L;
    long delayNs = 5_000;
    long queueBytes = 1 << 20;
    int mtu = Ibv.MTU_4096;
    int messageBytes = 256 * 1024;
    int sendsOutstanding = 16;
    int recvsPosted = 48;
    long warmupNs = 5_000_000;
    long measureNs = 100_000_000;
    long stepNs = 1_000;
    /** Fabric seeds: every row runs once per seed and reports the median. */
    long[] seeds = {1, 2, 3};

    boolean hashSelector;
    List<TransportMode> modes = new ArrayList<>(TransportMode.available());
    List<Scenario> scenarios = new ArrayList<>(List.of(Scenario.values()));

    static final String USAGE = """
            usage: run-transport-bench [options]
              --transport A,B     transports to compare (default: all in this build; the first is the base)
              --scenario S,..     no-loss, loss-one, loss-all, blackhole, slow (default: all)
              --links N           parallel paths (default 8)
              --gbps G            rate of each path (default 10)
              --delay-us D        one-way delay of each path (default 5)
              --queue-kib Q       egress queue of each path (default 1024)
              --mtu B             256, 512, 1024, 2048 or 4096 (default 4096)
              --message-kib K     SEND size (default 256)
              --warmup-ms W       not measured (default 5)
              --measure-ms M      measured simulated time (default 100)
              --step-ns S         simulation step (default 1000)
              --seeds X,Y,..      fabric seeds, one run each, medians reported (default 1,2,3)
              --seed X            one seed only
              --hash              ECMP-like hash selects the link (default: entropy mod links)
            """;

    static BenchConfig parse(String[] args) {
        BenchConfig c = new BenchConfig();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--hash")) {
                c.hashSelector = true;
                continue;
            }
            if (a.equals("-h") || a.equals("--help")) {
                System.out.print(USAGE);
                System.exit(0);
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(a + " needs a value\n" + USAGE);
            }
            String v = args[++i];
            switch (a) {
                case "--transport" -> {
                    c.modes.clear();
                    for (String m : v.split(",")) {
                        c.modes.add(TransportMode.named(m));
                    }
                }
                case "--scenario" -> {
                    c.scenarios.clear();
                    for (String s : v.split(",")) {
                        c.scenarios.add(Scenario.parse(s));
                    }
                }
                case "--links" -> c.links = Integer.parseInt(v);
                case "--gbps" -> c.rateBitsPerSec = (long) (Double.parseDouble(v) * 1e9);
                case "--delay-us" -> c.delayNs = (long) (Double.parseDouble(v) * 1000);
                case "--queue-kib" -> c.queueBytes = Long.parseLong(v) * 1024;
                case "--mtu" ->
                    c.mtu = switch (v) {
                        case "256" -> Ibv.MTU_256;
                        case "512" -> Ibv.MTU_512;
                        case "1024" -> Ibv.MTU_1024;
                        case "2048" -> Ibv.MTU_2048;
                        case "4096" -> Ibv.MTU_4096;
                        default -> throw new IllegalArgumentException("--mtu " + v);
                    };
                case "--message-kib" -> c.messageBytes = Integer.parseInt(v) * 1024;
                case "--warmup-ms" -> c.warmupNs = (long) (Double.parseDouble(v) * 1e6);
                case "--measure-ms" -> c.measureNs = (long) (Double.parseDouble(v) * 1e6);
                case "--step-ns" -> c.stepNs = Long.parseLong(v);
                case "--seed" -> c.seeds = new long[] {Long.parseLong(v)};
                case "--seeds" ->
                    c.seeds = java.util.Arrays.stream(v.split(","))
                            .mapToLong(Long::parseLong)
                            .toArray();
                default -> throw new IllegalArgumentException("unknown option " + a + "\n" + USAGE);
            }
        }
        return c;
    }

    long aggregateBitsPerSec() {
        return links * rateBitsPerSec;
    }

    String describe() {
        return links + " paths x " + rateBitsPerSec / 1e9 + " Gbit/s, one-way delay " + delayNs / 1000.0
                + " us, queue " + queueBytes / 1024 + " KiB per path, MTU " + Ibv.mtuBytes(mtu) + ", SENDs of "
                + messageBytes / 1024 + " KiB (" + sendsOutstanding + " outstanding), warm-up "
                + warmupNs / 1e6 + " ms, measured " + measureNs / 1e6 + " ms simulated, step " + stepNs
                + " ns, seeds " + java.util.Arrays.toString(seeds) + ", link = "
                + (hashSelector ? "hash of the 4-tuple" : "entropy mod " + links);
    }
}
