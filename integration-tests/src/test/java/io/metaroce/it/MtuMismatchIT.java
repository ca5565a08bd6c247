package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Hosts whose links have different MTUs: A's end of the veth is 9000 bytes, B's 1500 (a veth drops
 * what is larger than the receiving end's MTU). {@code mrce_integrity} sets each QP's path MTU to
 * its own port's active MTU: 4096 in A, which turns jumbo packets on, 1024 in B. A's daemon learns
 * B's link MTU from the connection manager's endpoint and sends packets B's link takes
 * (connection-manager.md section 3, transport.md section 1); before, its 8 KiB packets were
 * dropped on the way in and the transfer failed.
 */
@Timeout(300)
class MtuMismatchIT {
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("MtuMismatchIT", 9000);
        Sh.check("ip", "-n", fabric.b().ns(), "link", "set", fabric.b().ifname(), "mtu", "1500");
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void aJumboHostAndA1500ByteHostExchangeData() {
        Integrity.Result r = Integrity.run(fabric, 18950, 300, 0x3f1L, Duration.ofSeconds(120));
        String context = "\n--- client (A, MTU 9000):\n" + r.client().output() + "\n--- server (B, MTU 1500):\n"
                + r.server().output() + "\n" + fabric.diagnostics();
        assertThat(r.client().ok()).as("client reports OK" + context).isTrue();
        assertThat(r.server().ok()).as("server reports OK" + context).isTrue();
        assertThat(r.server().messages()).isEqualTo(300);
        assertThat(r.server().bytes()).isEqualTo(r.client().bytes()).isGreaterThan(300L * 4096);
        assertThat(r.server().checksum()).isEqualTo(r.client().checksum());
    }
}
