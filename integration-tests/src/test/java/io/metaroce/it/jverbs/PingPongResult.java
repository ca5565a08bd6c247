package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The two result lines ibv_rc_pingpong (and jverbs rc-pingpong) print, parsed and checked. */
record PingPongResult(
        long bytes, double seconds, double mbitPerSec, long iters, double itersSeconds, double usecPerIter) {

    static final Pattern BYTES =
            Pattern.compile("(?m)^(\\d+) bytes in (\\d+\\.\\d+) seconds = (\\d+\\.\\d+) Mbit/sec$");
    static final Pattern ITERS =
            Pattern.compile("(?m)^(\\d+) iters in (\\d+\\.\\d+) seconds = (\\d+\\.\\d+) usec/iter$");
    static final Pattern LOCAL = Pattern.compile(
            "(?m)^  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, " + "PSN 0x[0-9a-f]{6}, GID \\S+$");
    static final Pattern REMOTE = Pattern.compile(
            "(?m)^  remote address: LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, " + "PSN 0x[0-9a-f]{6}, GID \\S+$");

    /** Parses one side's output and asserts size * iters * 2 bytes in iters iterations, no invalid data. */
    static PingPongResult check(String role, String output, int size, int iters, String context) {
        assertThat(output)
                .as("%s output%n%s", role, context)
                .containsPattern(LOCAL)
                .containsPattern(REMOTE)
                .doesNotContain("invalid data");
        Matcher b = BYTES.matcher(output);
        Matcher i = ITERS.matcher(output);
        assertThat(b.find() && i.find())
                .as("%s printed both result lines:%n%s", role, context)
                .isTrue();
        PingPongResult r = new PingPongResult(
                Long.parseLong(b.group(1)),
                Double.parseDouble(b.group(2)),
                Double.parseDouble(b.group(3)),
                Long.parseLong(i.group(1)),
                Double.parseDouble(i.group(2)),
                Double.parseDouble(i.group(3)));
        assertThat(r.iters).as("%s iters", role).isEqualTo(iters);
        assertThat(r.bytes).as("%s bytes = size * iters * 2", role).isEqualTo((long) size * iters * 2);
        assertThat(r.itersSeconds).as("%s: both lines give the same time", role).isEqualTo(r.seconds);
        assertThat(r.usecPerIter).as("%s usec/iter", role).isPositive();
        if (r.mbitPerSec >= 1 && r.usecPerIter >= 1) {
            assertThat(r.mbitPerSec * r.usecPerIter * iters)
                    .as("%s: Mbit/s * usec/iter * iters = bytes * 8", role)
                    .isCloseTo(r.bytes * 8.0, org.assertj.core.data.Percentage.withPercentage(3));
        }
        return r;
    }
}
