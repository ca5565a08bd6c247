package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.sim.SimFabric;
import java.util.Random;
import java.util.function.BiConsumer;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Property test of the transport under gray failures on the SimFabric (spec section 10a): two real
 * engines, one QP, messages of seeded random length and content (zero-length ones included),
 * every byte of every message compared with what was sent, canaries around every receive slot,
 * completions in order. Each case impairs one link of 2 to 8 in one of three ways: 100 times
 * slower, a delay spike (1 ms added for 2 ms), or flapping (down and up every 0.5 to 2 ms), with
 * 1 to 64 paths, some random loss on top in a third of the cases. Cases come from a fixed master
 * seed (a failure names a rerunnable case); 10^4 messages per run in all, ten times more with
 * -Dmetaroce.nightly=true. Also: 256 paths per QP carry data, and every path is used.
 */
class GrayFailurePropertyTest {
    static final boolean NIGHTLY = Boolean.getBoolean("metaroce.nightly");
    static final int CASES = NIGHTLY ? 240 : 24;
    static final int MESSAGES = 420;
    static final long RATE = 1_000_000_000L;

    enum Gray {
        SLOW,
        SPIKE,
        FLAP
    }

    static Stream<Arguments> cases() {
        Random r = new Random(0x6a7_2026L);
        return IntStream.range(0, CASES)
                .mapToObj(i -> Arguments.of(
                        1 + r.nextInt(1_000_000), // seed
                        Gray.values()[i % 3],
                        2 + r.nextInt(7), // links
                        1 + r.nextInt(64), // QP paths
                        r.nextInt(3) == 0 ? r.nextDouble() * 0.02 : 0.0, // random loss on every link
                        250_000L + r.nextInt(1_750_000))); // flapping half-period / spike start, ns
    }

    static BiConsumer<SimFabric, Long> impairment(Gray gray, int victim, long periodNs) {
        return switch (gray) {
            case SLOW ->
                (f, t) -> {
                    if (t == 1_000) {
                        f.link(victim).rateBitsPerSec(RATE / 100);
                    }
                };
            case SPIKE ->
                (f, t) -> {
                    if (t == periodNs) {
                        f.link(victim).gray(0, 1_000_000L);
                    } else if (t == periodNs + 2_000_000L) {
                        f.link(victim).gray(0, 0);
                    }
                };
            case FLAP -> (f, t) -> f.link(victim).blackhole((t / periodNs) % 2 == 1);
        };
    }

    @ParameterizedTest(name = "seed={0} {1} links={2} paths={3} loss={4} period={5}")
    @MethodSource("cases")
    void everyByteLandsOnceInOrder(long seed, Gray gray, int links, int paths, double loss, long periodNs)
            throws Exception {
        Random r = new Random(seed);
        int victim = r.nextInt(links);
        SimStream.Config c = new SimStream.Config();
        c.seed = seed;
        c.links = links;
        c.paths = paths;
        c.rateBitsPerSec = RATE;
        c.mtu = Ibv.MTU_1024 + r.nextInt(3); // 1024, 2048 or 4096 (jumbo packets)
        c.minBytes = 0;
        c.maxBytes = 6000;
        c.messages = MESSAGES;
        c.recvSlots = 32;
        c.warmupNs = 0;
        c.measureNs = Long.MAX_VALUE / 4;
        c.limitNs = 5_000_000_000L; // simulated: far more than any case needs
        BiConsumer<SimFabric, Long> impair = impairment(gray, victim, periodNs);
        c.schedule = (f, t) -> {
            if (t == 1_000 && loss > 0) {
                f.forEachLink(l -> l.lossRate(loss));
            }
            impair.accept(f, t);
        };
        SimStream.Result res = SimStream.run(c);
        assertThat(res.failed()).as(res.note()).isFalse();
        assertThat(res.messagesChecked()).isEqualTo(MESSAGES);
    }

    @Test
    void twoHundredFiftySixPathsCarryDataOverEveryPath() throws Exception {
        for (boolean slowLink : new boolean[] {false, true}) {
            SimStream.Config c = new SimStream.Config();
            c.seed = 256;
            c.links = 8;
            c.paths = RcRequester.MAX_PATHS;
            c.rateBitsPerSec = RATE;
            c.minBytes = 16 * 1024;
            c.maxBytes = 64 * 1024;
            c.messages = 600;
            c.warmupNs = 0;
            c.measureNs = Long.MAX_VALUE / 4;
            c.limitNs = 5_000_000_000L;
            if (slowLink) {
                c.schedule = impairment(Gray.SLOW, 3, 0);
            }
            int[] used = new int[1];
            int[] count = new int[1];
            c.inspect = req -> {
                count[0] = req.pathCount();
                for (int i = 0; i < req.pathCount(); i++) {
                    used[0] += req.path(i).packetsSent > 0 ? 1 : 0;
                }
            };
            SimStream.Result res = SimStream.run(c);
            assertThat(res.failed()).as(res.note()).isFalse();
            assertThat(res.messagesChecked()).isEqualTo(600);
            assertThat(count[0]).isEqualTo(256);
            assertThat(used[0]).as("paths that carried packets").isEqualTo(256);
        }
    }
}
