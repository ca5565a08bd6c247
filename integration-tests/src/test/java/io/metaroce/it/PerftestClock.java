package io.metaroce.it;

/**
 * perftest's clock calibration. perftest turns its cycle counts into times and rates with a CPU
 * frequency it measures at start; on a loaded machine that measurement can fail, and it then
 * prints {@link #WARNING} and reports latencies as "inf" and bandwidths as 0 MB/s and 0 Mpps,
 * however the transfer went (CI run at 28130b2: {@code ib_atomic_bw -q 4}, 800 iterations done,
 * rates 0). A test accepts such a figure only with the warning, and still checks what the tool
 * counted (iterations, sizes, exit codes).
 */
public final class PerftestClock {
    /** What perftest prints when it could not measure the CPU frequency. */
    public static final String WARNING = "Correlation coefficient r^2";

    private PerftestClock() {}

    /** Whether {@code value}, a rate perftest printed in {@code output}, is 0 for want of a clock. */
    public static boolean unmeasured(double value, String output) {
        return value == 0 && output.contains(WARNING);
    }
}
