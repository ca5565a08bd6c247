package io.metaroce.bench.jverbs;

import io.metaroce.verbs.CompletionQueue;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Post+poll cost of java-verbs, the same two loops as {@code bench/jverbs/c/verbs_loop.c}:
 *
 * <ul>
 *   <li>{@code sendRecv}: one 64-byte signaled SEND from QP a to QP b of a
 *       {@link LoopbackRcPair} on the device, at most 16 in flight; a full window polls both CQs (send completions free it,
 *       receives are re-posted). One op = one message, through the provider and its daemon.
 *   <li>{@code pollEmpty}: one {@code poll} of 16 entries on a CQ that never completes.
 * </ul>
 *
 * Needs a device (mrce0 with its daemon, LD_PRELOAD=libmetaroce.so): {@code run-jverbs-bench}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class PostPollBench {

    static final int WINDOW = 16;

    @Param("mrce0")
    public String device;

    @Param("0")
    public int gidIndex;

    private LoopbackRcPair pair;
    private CompletionQueue cqEmpty;

    @Setup(Level.Trial)
    public void setup() {
        pair = new LoopbackRcPair(device, gidIndex, WINDOW);
        cqEmpty = pair.ctx.createCompletionQueue(16);
        pair.postReceives();
    }

    @Benchmark
    public long sendRecv() {
        return pair.postSend();
    }

    @Benchmark
    public int pollEmpty() {
        return pair.poll(cqEmpty);
    }

    @TearDown(Level.Trial)
    public void teardown() {
        cqEmpty.close();
        pair.close();
    }
}
