package io.metaroce.verbs.endpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.verbs.AccessFlag;
import io.metaroce.verbs.cm.ConnectOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** Remote buffers on the wire, the endpoint's private-data header, and option checks (no device). */
class EndpointOptionsTest {

    @Test
    void aRemoteBufferRoundTripsInTwentyBigEndianBytes() {
        RemoteBuffer b = new RemoteBuffer(0x7f00_1234_5678_9abcL, 65536, 0xdeadbeef);
        byte[] w = b.toBytes();
        assertThat(w).hasSize(RemoteBuffer.WIRE_SIZE);
        assertThat(w[0]).isEqualTo((byte) 0x7f);
        assertThat(w[19]).isEqualTo((byte) 0xef);
        assertThat(RemoteBuffer.fromBytes(w, 0)).isEqualTo(b);
        assertThat(RemoteBuffer.NONE.isNone()).isTrue();
    }

    @Test
    void aRemoteBufferSliceStaysInside() {
        RemoteBuffer b = new RemoteBuffer(4096, 100, 7);
        assertThat(b.slice(10, 90)).isEqualTo(new RemoteBuffer(4106, 90, 7));
        assertThatThrownBy(() -> b.slice(10, 91))
                .isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("outside the peer's 100-byte buffer");
        assertThatThrownBy(() -> b.check(-1, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> b.check(Long.MAX_VALUE, 2)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void shortOrNegativeWireFormsAreRefused() {
        assertThatThrownBy(() -> RemoteBuffer.fromBytes(new byte[19], 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("takes 20 bytes; 19");
        byte[] neg = new RemoteBuffer(0, 1, 0).toBytes();
        neg[8] = (byte) 0x80;
        assertThatThrownBy(() -> RemoteBuffer.fromBytes(neg, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void thePrivateDataCarriesTheBufferTheDepthAndTheApplicationsBytes() {
        byte[] app = "hello".getBytes(StandardCharsets.US_ASCII);
        EndpointOptions o = EndpointOptions.defaults().withDepths(4, 24).withPrivateData(app);
        RemoteBuffer mine = new RemoteBuffer(0x1000, 4096, 0x55);
        byte[] w = o.wirePrivateData(mine);
        assertThat(w).hasSize(EndpointOptions.HEADER + 5);
        assertThat(w.length).isLessThanOrEqualTo(ConnectOptions.MAX_PRIVATE_DATA);
        EndpointOptions.PeerHeader h = EndpointOptions.PeerHeader.parse(w);
        assertThat(h.buffer()).isEqualTo(mine);
        assertThat(h.recvDepth()).isEqualTo(24);
        assertThat(h.privateData()).isEqualTo(app);
        assertThatThrownBy(() -> EndpointOptions.PeerHeader.parse(new byte[5]))
                .hasMessageContaining("is the peer an Endpoint?");
    }

    @Test
    void optionsAreChecked() {
        EndpointOptions d = EndpointOptions.defaults();
        assertThat(d.sendDepth()).isEqualTo(16);
        assertThat(d.connect().rc()).isEqualTo(ConnectOptions.RcParameters.DEFAULTS);
        assertThat(d.withRc(ConnectOptions.RcParameters.DEFAULTS.withTimeout(10))
                        .connect()
                        .rc()
                        .timeout())
                .isEqualTo(10);
        assertThat(d.withExposed(100, EnumSet.of(AccessFlag.REMOTE_READ)).exposedAccess())
                .containsExactly(AccessFlag.REMOTE_READ);
        assertThatThrownBy(() -> d.withDepths(0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> d.withMessageSize(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> d.withTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> d.withPrivateData(new byte[EndpointOptions.MAX_PRIVATE_DATA + 1]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 168");
    }
}
