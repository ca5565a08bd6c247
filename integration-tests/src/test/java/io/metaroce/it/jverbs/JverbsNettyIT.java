package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Proc;
import io.metaroce.it.Wait;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Netty echo example between two namespaces: over the RDMA transport (RdmaChannel on
 * RdmaIoHandler loops, mrce0) with small messages one at a time and a burst, with messages
 * larger than the endpoint's message size (cut and reassembled as a stream), and the same pipeline
 * over TCP with epoll (the baseline). Every echoed byte is checked by the client. And the
 * transport's flow control: a slow reader with auto-read off holds a 64 MiB writer back.
 */
@Timeout(600)
class JverbsNettyIT extends JverbsFabricTest {

    private static String echo(String service, boolean tcp, String... clientArgs) {
        java.util.List<String> serverArgs =
                new java.util.ArrayList<>(java.util.List.of("netty-echo-server", "-d", "mrce0", "-p", service));
        java.util.List<String> args =
                new java.util.ArrayList<>(java.util.List.of("netty-echo-client", "-d", "mrce0", "-p", service));
        args.addAll(java.util.List.of(clientArgs));
        if (tcp) {
            serverArgs.add("--tcp");
            args.add("--tcp");
        }
        args.add(fabric.b().addr());
        String listening = tcp ? "listening on TCP port " + service : "listening on service " + service;
        try (Proc server = fabric.start(
                fabric.b(), "netty-server-" + service, JverbsFabric.jverbs(serverArgs.toArray(String[]::new)))) {
            boolean up =
                    Wait.until(Duration.ofSeconds(60), () -> server.output().contains(listening) || !server.isAlive());
            assertThat(up && server.output().contains(listening))
                    .as(server.output())
                    .isTrue();
            try (Proc client = fabric.start(
                    fabric.a(), "netty-client-" + service, JverbsFabric.jverbs(args.toArray(String[]::new)))) {
                int ce = client.waitFor(Duration.ofSeconds(180));
                String ctx = "--- server:\n" + server.output() + "\n--- client:\n" + client.output();
                assertThat(ce).as(ctx).isZero();
                System.out.println("JverbsNettyIT: " + client.output().strip());
                return client.output();
            }
        }
    }

    @Test
    void echoOverRdmaSmallMessagesAndABurst() {
        String out = echo("7301", false, "-n", "1000", "-s", "64", "-b", "256");
        assertThat(out).contains("OK transport=rdma messages=1000 burst=256 bytes=80384 ");
    }

    @Test
    void echoOverRdmaMessagesLargerThanTheEndpointsMessageSize() {
        String out = echo("7302", false, "-n", "50", "-s", "20000", "-b", "16");
        assertThat(out).contains("OK transport=rdma messages=50 burst=16 bytes=1320000 ");
    }

    /**
     * Flow control from posted receives over mrce0: a server with auto-read off reads 64 messages
     * only each time the client is held back (its endpoint holds recvDepth - 1 = 31 unread
     * messages: the client's credits are spent), while the client pushes 64 MiB in 16 KiB writes
     * as long as its channel is writable (water marks 32/64 KiB).
     */
    @Test
    void aSlowReaderWithAutoReadOffHoldsBackA64MiBWriter() {
        long total = 64L << 20;
        try (Proc server = fabric.start(
                fabric.b(),
                "netty-flow-server",
                JverbsFabric.jverbs(
                        "netty-flow-server", "-d", "mrce0", "-p", "7304", "-t", Long.toString(total), "-r", "64"))) {
            awaitLine(server, "listening on service 7304");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "netty-flow-client",
                    JverbsFabric.jverbs(
                            "netty-flow-client",
                            "-d",
                            "mrce0",
                            "-p",
                            "7304",
                            "-t",
                            Long.toString(total),
                            fabric.b().addr()))) {
                int ce = client.waitFor(Duration.ofSeconds(300));
                int se = server.waitFor(Duration.ofSeconds(60));
                String ctx = "--- server:\n" + server.output() + "\n--- client:\n" + client.output();
                System.out.println("JverbsNettyIT flow: " + ctx);
                assertThat(ce).as(ctx).isZero();
                assertThat(se).as(ctx).isZero();
                java.util.regex.Matcher c = java.util.regex.Pattern.compile("OK bytes=(\\d+) crc=(0x\\p{XDigit}+)"
                                + " unwritable=(\\d+) writableAgain=(\\d+) mostPending=(\\d+)")
                        .matcher(client.output());
                java.util.regex.Matcher s = java.util.regex.Pattern.compile(
                                "OK bytes=(\\d+) crc=(0x\\p{XDigit}+)" + " heldBack=(\\d+) mostUnread=(\\d+)")
                        .matcher(server.output());
                assertThat(c.find() && s.find()).as(ctx).isTrue();
                assertThat(Long.parseLong(c.group(1))).as("bytes written").isEqualTo(total);
                assertThat(Long.parseLong(s.group(1))).as("bytes read").isEqualTo(total);
                assertThat(s.group(2)).as("the CRC of what was read").isEqualTo(c.group(2));
                assertThat(Integer.parseInt(s.group(3)))
                        .as("times the client was held back")
                        .isPositive();
                assertThat(Integer.parseInt(s.group(4)))
                        .as("most unread messages: the client's credits")
                        .isEqualTo(31);
                assertThat(Integer.parseInt(c.group(3)))
                        .as("times the client turned unwritable")
                        .isPositive();
                assertThat(Integer.parseInt(c.group(4)))
                        .as("times it turned writable again")
                        .isPositive();
                assertThat(Long.parseLong(c.group(5)))
                        .as("most bytes pending at the client")
                        .isLessThanOrEqualTo(64 * 1024 + 16 * 1024);
            }
        }
    }

    @Test
    void theSamePipelineOverTcpEpoll() {
        String out = echo("7303", true, "-n", "1000", "-s", "64", "-b", "256");
        assertThat(out).contains("OK transport=tcp-epoll messages=1000 burst=256 bytes=80384 ");
    }
}
