package io.metaroce.it;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The unmodified {@code ibv_rc_pingpong -d mrce0 -g 0} across two namespaces, each with its own
 * mrce-nicd: server in B, client in A. Both sides must report size * iters * 2 bytes in iters
 * iterations.
 */
@Timeout(600)
class RcPingPongIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    /** -s 65536 -n 5000 moves 655 MB; on 2 shared cores the skeleton needs over a minute. */
    private static final Duration LARGE_RUN_TIMEOUT = Duration.ofSeconds(300);

    private static final AtomicInteger PORT = new AtomicInteger(18515);
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("RcPingPongIT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    private static void pingPong(TwoHostFabric f, int size, int iters, String... options) {
        pingPong(f, RUN_TIMEOUT, size, iters, options);
    }

    private static void pingPong(TwoHostFabric f, Duration timeout, int size, int iters, String... options) {
        RcPingPong.Result r = RcPingPong.run(f, PORT.getAndIncrement(), timeout, options);
        r.assertCompleted(size, iters, f.diagnostics());
    }

    @Test
    void defaults() {
        pingPong(fabric, 4096, 1000);
    }

    @Test
    void completionEvents() {
        pingPong(fabric, 4096, 1000, "-e");
    }

    @Test
    void oneByteMessages() {
        pingPong(fabric, 1, 1000, "-s", "1");
    }

    @Test
    void largeMessagesManyIterations() {
        pingPong(fabric, LARGE_RUN_TIMEOUT, 65536, 5000, "-s", "65536", "-n", "5000");
    }

    @Test
    void receivedBuffersValidated() {
        // -c: each side checks the bytes it received against what the peer wrote.
        pingPong(fabric, 4096, 1000, "-c");
    }

    @Test
    void pathMtu4096OnJumboLink() {
        try (TwoHostFabric jumbo = TwoHostFabric.direct("RcPingPongIT-mtu9000", 9000)) {
            jumbo.startDaemons();
            pingPong(jumbo, 4096, 1000, "-m", "4096");
            pingPong(jumbo, 65536, 500, "-m", "4096", "-s", "65536", "-n", "500", "-c");
        }
    }

    @Test
    void throughARouter() {
        try (TwoHostFabric routed = TwoHostFabric.routed("RcPingPongIT-routed", 1500)) {
            routed.startDaemons();
            pingPong(routed, 4096, 1000);
        }
    }
}
