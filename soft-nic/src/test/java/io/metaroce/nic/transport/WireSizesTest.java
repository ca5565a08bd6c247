package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Frame and payload sizes of docs/spec/transport.md section 1 (jumbo packets). */
class WireSizesTest {
    @Test
    void theFrameIsWhatTheNetdevCarriesBetweenTheIbMaximumAndTwoXdpChunks() {
        assertThat(Wire.IB_MAX_FRAME).isEqualTo(48 + 16 + 4096);
        assertThat(Wire.MAX_FRAME).isEqualTo(8192 - 14 - 20 - 8);
        assertThat(Wire.frameBytes(1500)).isEqualTo(4160);
        assertThat(Wire.frameBytes(4172)).isEqualTo(4160);
        assertThat(Wire.frameBytes(6000)).isEqualTo(6000 - 28);
        assertThat(Wire.frameBytes(9000)).isEqualTo(8150);
        assertThat(Wire.frameBytes(65536)).isEqualTo(8150);
    }

    @Test
    void rcPacketsAreJumboOnlyWithAPathMtuOf4096() {
        assertThat(Wire.rcPayloadPerPacket(4096, 9000)).isEqualTo(8064);
        assertThat(Wire.rcPayloadPerPacket(4096, 65536)).isEqualTo(8064);
        assertThat(Wire.rcPayloadPerPacket(4096, 6000)).isEqualTo((6000 - 28 - 64) & ~63);
        // a netdev too small for more than 4096 bytes: the IB rule
        assertThat(Wire.rcPayloadPerPacket(4096, 4172)).isEqualTo(4096);
        assertThat(Wire.rcPayloadPerPacket(4096, 1500)).isEqualTo(1500 - 76);
        // a smaller path MTU turns jumbo packets off
        assertThat(Wire.rcPayloadPerPacket(2048, 9000)).isEqualTo(2048);
        assertThat(Wire.rcPayloadPerPacket(1024, 1500)).isEqualTo(1024);
        for (int mtu = 1100; mtu <= 10000; mtu += 37) {
            int p = Wire.rcPayloadPerPacket(4096, mtu);
            // a packet with a RETH fits the frame the peer (same MTU) accepts, or it is the IB size
            assertThat(p + 64 <= Wire.frameBytes(mtu) || p <= mtu - 76)
                    .as("mtu %d", mtu)
                    .isTrue();
            assertThat(p).isLessThanOrEqualTo(Wire.frameBytes(mtu) - 48);
        }
    }
}
