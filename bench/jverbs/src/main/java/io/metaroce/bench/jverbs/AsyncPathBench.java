package io.metaroce.bench.jverbs;

import io.metaroce.verbs.CompletionPoller;
import io.metaroce.verbs.WorkCompletion;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
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
 * The asynchronous path's cost per message against the raw poll loop, on a {@link LoopbackRcPair} of
 * the device (as {@link PostPollBench}): one op = one 64-byte SEND from QP a received by QP b,
 * at most {@code window} in flight.
 *
 * <ul>
 *   <li>{@code raw}: post, and when the window is full poll both CQs on this thread (receives
 *       re-posted): allocation-free, no thread hand-off.
 *   <li>{@code futures}: the same messages through a {@link CompletionPoller} per CQ: each send
 *       and each receive registers a CompletableFuture (unique wr_ids), the poller threads
 *       complete them; when the window is full this thread joins the oldest pair. The difference
 *       is the async path's cost: futures, snapshots, the map and the hand-off between threads.
 * </ul>
 *
 * With {@code window} 1 each op is a whole round trip through the daemon (latency); with 16 it
 * is the cost per message when pipelined. Needs mrce0 and its daemon: {@code run-jverbs-bench}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class AsyncPathBench {

    @Param("mrce0")
    public String device;

    @Param("0")
    public int gidIndex;

    @Param({"1", "16"})
    public int window;

    private LoopbackRcPair pair;
    private CompletionPoller pollerA;
    private CompletionPoller pollerB;
    private final ArrayDeque<CompletableFuture<WorkCompletion.Snapshot>> sends = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<WorkCompletion.Snapshot>> recvs = new ArrayDeque<>();
    private long nextId = 1;

    /** Each benchmark runs in a fork of its own (JMH's default): set up what it uses. */
    @Setup(Level.Trial)
    public void setup(org.openjdk.jmh.infra.BenchmarkParams params) {
        pair = new LoopbackRcPair(device, gidIndex, window);
        if (params.getBenchmark().endsWith(".futures")) {
            pollerA = CompletionPoller.start(pair.cqA);
            pollerB = CompletionPoller.start(pair.cqB);
        } else {
            pair.postReceives();
        }
    }

    @Benchmark
    public long raw() {
        return pair.postSend();
    }

    @Benchmark
    public int futures() {
        if (sends.size() >= window) {
            sends.poll().join();
            recvs.poll().join();
        }
        recvs.add(pollerB.postRecv(pair.b, pair.recv.wrId(nextId++)));
        sends.add(pollerA.postSend(pair.a, pair.send.wrId(nextId++)));
        return sends.size();
    }

    @TearDown(Level.Trial)
    public void teardown() {
        while (!sends.isEmpty()) {
            sends.poll().join();
            recvs.poll().join();
        }
        if (pollerA != null) {
            pollerA.close();
            pollerB.close();
        }
        pair.close();
    }
}
