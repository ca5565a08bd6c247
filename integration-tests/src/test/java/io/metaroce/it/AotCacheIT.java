package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The daemon's JDK 25 AOT cache (bin/mrce-nicd-aot, docs/architecture.md, start-up): made by a
 * training run, taken by bin/mrce-nicd and by the JVM (the daemon logs which), and a cache the JVM
 * refuses, a stale one and a missing one each still give a daemon that serves. Two daemons on one
 * namespace's {@code lo}; the cache is made in a directory of the test's own
 * ({@code MRCE_NICD_AOT_DIR}), never the tree's; each round checks the data with
 * {@code ibv_rc_pingpong -c}.
 */
@Timeout(900)
class AotCacheIT {
    private static final Duration TRAINING_TIMEOUT = Duration.ofMinutes(10);
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final AtomicInteger PORT = new AtomicInteger(18760);
    private static final String IN_USE = " in use (classes loaded and linked ahead";
    private static final String REFUSED = " NOT in use: the JVM refused it";
    private static final String STALE = "is not this build's or JDK's: started without it";

    @Test
    void madeUsedRefusedStaleAndMissing() throws IOException {
        Env.assumeNamespaces();
        Path dir = Files.createTempDirectory("mrce-aot-it-");
        Path empty = Files.createTempDirectory("mrce-aot-it-none-");
        Path cache = dir.resolve("mrce-nicd.aot");
        Path jar = dir.resolve("mrce-nicd.jar");
        try (LoopbackFabric f = LoopbackFabric.create("AotCacheIT")) {
            // the training run, in the fabric's namespace (its own lo, its own ports)
            Proc training = f.start(
                    f.a(),
                    "mrce-nicd-aot",
                    List.of(
                            "env",
                            "MRCE_NICD_AOT_DIR=" + dir,
                            Env.bin("mrce-nicd-aot").toString()));
            assertThat(training.waitFor(TRAINING_TIMEOUT))
                    .as("bin/mrce-nicd-aot; its output:%n%s", training.output())
                    .isZero();
            assertThat(cache).as("the cache").isRegularFile();
            assertThat(Files.size(cache)).as("the cache's size").isGreaterThan(1 << 20);
            assertThat(Files.readString(dir.resolve("training.log")))
                    .as("the training run warmed the data path and said ready")
                    .contains("data path warmed: ")
                    .contains("mrce-nicd ready: ");
            String cacheIs = "AOT cache " + cache;

            // 1. both daemons on the cache
            List<Daemon> ds =
                    start(f, Map.of("MRCE_NICD_AOT_DIR", dir.toString()), Map.of("MRCE_NICD_AOT_DIR", dir.toString()));
            for (Daemon d : ds) {
                assertThat(d.logText()).as("%s's log", d.host().name()).contains(cacheIs + IN_USE);
            }
            pingPongAndStop(f, ds, "on the cache");

            // 2. the JVM refuses it: the jar's time is not the one it was trained with (the
            // launcher's own check, nothing newer than the cache, still passes)
            FileTime trained = Files.getLastModifiedTime(jar);
            Files.setLastModifiedTime(jar, FileTime.fromMillis(trained.toMillis() - 60_000));
            ds = start(f, Map.of("MRCE_NICD_AOT_DIR", dir.toString()), Map.of("MRCE_NICD_AOT", "0"));
            assertThat(ds.get(0).logText()).as("A's log").contains(cacheIs + REFUSED);
            assertThat(ds.get(1).logText())
                    .as("B's log (MRCE_NICD_AOT=0)")
                    .doesNotContain(IN_USE)
                    .doesNotContain(REFUSED);
            pingPongAndStop(f, ds, "a refused cache");

            // 3. stale (the jar newer than the cache: the launcher leaves it out) and missing
            Files.setLastModifiedTime(
                    jar, FileTime.fromMillis(Files.getLastModifiedTime(cache).toMillis() + 60_000));
            ds = start(f, Map.of("MRCE_NICD_AOT_DIR", dir.toString()), Map.of("MRCE_NICD_AOT_DIR", empty.toString()));
            assertThat(ds.get(0).logText())
                    .as("A's log (stale)")
                    .contains(STALE)
                    .doesNotContain(IN_USE)
                    .doesNotContain(REFUSED);
            assertThat(ds.get(1).logText())
                    .as("B's log (no cache)")
                    .doesNotContain(IN_USE)
                    .doesNotContain(REFUSED);
            pingPongAndStop(f, ds, "a stale and a missing cache");
        } finally {
            delete(dir);
            delete(empty);
        }
    }

    /** Daemons on lo in A and B with these environments; returns once both serve. */
    private static List<Daemon> start(LoopbackFabric f, Map<String, String> envA, Map<String, String> envB) {
        Daemon da = f.startDaemon(
                f.a(),
                envA,
                "--addr",
                f.a().addr(),
                "--sock",
                f.defaultSocket(f.a()).toString());
        Daemon db = f.startDaemon(
                f.b(),
                envB,
                "--addr",
                f.b().addr(),
                "--sock",
                f.defaultSocket(f.b()).toString());
        f.awaitReady(da);
        f.awaitReady(db);
        return List.of(da, db);
    }

    /** ibv_rc_pingpong -c (each side checks every buffer it receives), then both daemons exit cleanly. */
    private static void pingPongAndStop(LoopbackFabric f, List<Daemon> ds, String round) {
        f.awaitAnswering(f.a());
        f.awaitAnswering(f.b());
        RcPingPong.Result r = RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "300");
        r.assertCompleted(4096, 300, round + "\n" + f.diagnostics());
        for (Daemon d : ds) {
            assertThat(d.stop(Duration.ofSeconds(10)))
                    .as("%s: %s exits cleanly", round, d.host().name())
                    .isZero();
        }
    }

    private static void delete(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // already gone
        }
    }
}
