package io.metaroce.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.verbs.Gid;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** ibv_rc_pingpong's exchange: the 52-byte "LID:QPN:PSN:GID" message and the "done" handshake. */
class WireFormatTest {

    @Test
    void endpointIsTheCFormatWithItsNul() {
        Gid gid = Gid.of(InetAddress.ofLiteral("198.18.0.1"));
        QpEndpoint e = new QpEndpoint(0, 0x2000, 0xacec35, gid);
        byte[] wire = e.toWire();
        assertThat(wire).hasSize(52);
        assertThat(wire[51]).isZero();
        // sprintf("%04x:%06x:%06x:%s") with gid_to_wire_gid's 32 hex digits, bytes in order
        assertThat(new String(wire, 0, 51, StandardCharsets.US_ASCII))
                .isEqualTo("0000:002000:acec35:00000000000000000000ffffc6120001");
        assertThat(QpEndpoint.fromWire(wire)).isEqualTo(e);
        assertThat(e.describe()).isEqualTo("LID 0x0000, QPN 0x002000, PSN 0xacec35, GID ::ffff:198.18.0.1");
        assertThat(gid.interfaceId()).isNotZero();
        assertThat(Gid.ZERO.interfaceId()).isZero();
    }

    @Test
    void parsesWhatCWrites() {
        byte[] c = new byte[52];
        byte[] text = "0001:00abcd:123456:fe800000000000000202c9fffe317c10".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(text, 0, c, 0, text.length);
        QpEndpoint e = QpEndpoint.fromWire(c);
        assertThat(e.lid()).isEqualTo(1);
        assertThat(e.qpn()).isEqualTo(0xabcd);
        assertThat(e.psn()).isEqualTo(0x123456);
        assertThat(e.gid().toString()).isEqualTo("fe80:0:0:0:202:c9ff:fe31:7c10");
        assertThatThrownBy(() -> QpEndpoint.fromWire("garbage".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("LID:QPN:PSN:GID");
    }

    @Test
    void sideChannelExchangesBothWaysAndTheDone() throws Exception {
        int port;
        try (var probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        QpEndpoint server = new QpEndpoint(0, 0x11, 0x22, Gid.ZERO);
        QpEndpoint client = new QpEndpoint(0, 0x33, 0x44, Gid.ZERO);
        int p = port;
        CompletableFuture<QpEndpoint> seen = CompletableFuture.supplyAsync(() -> {
            try {
                return QpEndpoint.fromWire(SideChannel.server(p, QpEndpoint.WIRE_SIZE, msg -> server.toWire()));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        QpEndpoint reply = QpEndpoint.fromWire(SideChannel.client("127.0.0.1", port, client.toWire(), 10_000));
        assertThat(reply).isEqualTo(server);
        assertThat(seen.get(30, TimeUnit.SECONDS)).isEqualTo(client);
    }
}
