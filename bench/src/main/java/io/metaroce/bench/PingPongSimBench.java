package io.metaroce.bench;

import io.metaroce.nic.transport.SimPingPong;

/**
 * An {@code ibv_rc_pingpong}-like loop between two real engines on the SimFabric, in simulated
 * time ({@link SimPingPong}): per path count and message size, the simulated microseconds per
 * iteration of a fresh QP's first 1000 iterations and of iterations 4001-5000, the frames both
 * engines sent per iteration, and the duty cycles and their CPU time (the only load-dependent
 * column). Arguments: {@code [--paths 1,8,48] [--bytes 64,4096] [--delay-us 20] [--jitter-us 0] [--iterations 5000]}.
 */
public final class PingPongSimBench {
    private PingPongSimBench() {}

    public static void main(String[] args) throws Exception {
        int[] paths = {1, 8, 48};
        int[] sizes = {64, 4096};
        long delayUs = 20;
        long jitterUs = 0;
        int iterations = 5000;
        for (int i = 0; i < args.length; i++) {
            String v = i + 1 < args.length ? args[i + 1] : "";
            switch (args[i]) {
                case "--paths" -> paths = ints(v);
                case "--bytes" -> sizes = ints(v);
                case "--delay-us" -> delayUs = Long.parseLong(v);
                case "--jitter-us" -> jitterUs = Long.parseLong(v);
                case "--iterations" -> iterations = Integer.parseInt(v);
                default -> {
                    System.err.println(
                            "usage: run-pingpong-sim [--paths 1,8,48] [--bytes 64,4096] [--delay-us 20] [--jitter-us 0]"
                                    + " [--iterations 5000]");
                    System.exit(2);
                }
            }
            i++;
        }
        System.out.println("MetaRoCE ping-pong on SimFabric (simulated time), commit "
                + System.getProperty("metaroce.commit", "(unknown)"));
        System.out.println("4 links of " + delayUs + " us one way (+ 0.." + jitterUs
                + " us jitter per frame), 10 Gbit/s; daemon timer floors (rto-min 10 ms,"
                + " tlp-min 5 ms); 1 us engine steps; frames: both engines together; CPU: both engines' duty"
                + " cycles, wall clock (load-dependent); idle cycle: one engine, its QP idle");
        System.out.println();
        System.out.print(SimPingPong.HEADER);
        for (int bytes : sizes) {
            for (int p : paths) {
                SimPingPong.Config c = new SimPingPong.Config();
                c.paths = p;
                c.bytes = bytes;
                c.delayNs = delayUs * 1000;
                c.jitterNs = jitterUs * 1000;
                c.iterations = iterations;
                c.windows = new int[][] {{0, Math.min(1000, iterations)}, {Math.max(0, iterations - 1000), iterations}};
                System.out.print(SimPingPong.format(SimPingPong.run(c)));
            }
        }
    }

    private static int[] ints(String csv) {
        String[] s = csv.split(",");
        int[] out = new int[s.length];
        for (int i = 0; i < s.length; i++) {
            out[i] = Integer.parseInt(s[i].trim());
        }
        return out;
    }
}
