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
 * over TCP with epoll (the baseline). Every echoed byte is checked by the client.
 */
@Timeout(600)
class JverbsNettyIT extends JverbsFabricTest {

    private static String echo(String service, boolean tcp, String... clientArgs) {
        java.util.List<String> serverArgs = new java.util.ArrayList<>(
                java.util.List.of("netty-echo-server", "-d", "mrce0", "-p", service));
        java.util.List<String> args = new java.util.ArrayList<>(
                java.util.List.of("netty-echo-client", "-d", "mrce0", "-p", service));
        args.addAll(java.util.List.of(clientArgs));
        if (tcp) {
            serverArgs.add("--tcp");
            args.add("--tcp");
        }
        args.add(fabric.b.addr());
        String listening = tcp ? "listening on TCP port " + service : "listening on service " + service;
        try (Proc server = fabric.start(fabric.b, "netty-server-" + service,
                JverbsFabric.jverbs(serverArgs.toArray(String[]::new)))) {
            boolean up = Wait.until(Duration.ofSeconds(60), () -> server.output().contains(listening) || !server.isAlive());
            assertThat(up && server.output().contains(listening)).as(server.output()).isTrue();
            try (Proc client = fabric.start(fabric.a, "netty-client-" + service,
                    JverbsFabric.jverbs(args.toArray(String[]::new)))) {
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

    @Test
    void theSamePipelineOverTcpEpoll() {
        String out = echo("7303", true, "-n", "1000", "-s", "64", "-b", "256");
        assertThat(out).contains("OK transport=tcp-epoll messages=1000 burst=256 bytes=80384 ");
    }
}
