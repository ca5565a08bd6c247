package io.metaroce.nic.port;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.sys.Inet4;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The UDP port reads each datagram's ECN field (IP_RECVTOS) on loopback. */
class UdpPortEcnTest {
    static final int LOOPBACK = Inet4.parse("127.0.0.1");

    @Test
    void reportsTheEcnFieldOfEveryDatagram() throws Exception {
        int port;
        try (DatagramChannel probe = DatagramChannel.open()) {
            probe.bind(new InetSocketAddress("127.0.0.1", 0));
            port = ((InetSocketAddress) probe.getLocalAddress()).getPort();
        }
        try (UdpPort udp = new UdpPort(LOOPBACK, port, 2048, 8);
                DatagramChannel tx = DatagramChannel.open()) {
            assertThat(udp.readsEcn()).isTrue();
            InetSocketAddress to = new InetSocketAddress("127.0.0.1", port);
            int[] tos = {0x03, 0x00, 0x02, 0xb8 | 0x03, 0x01};
            for (int i = 0; i < tos.length; i++) {
                tx.setOption(StandardSocketOptions.IP_TOS, tos[i]);
                tx.send(ByteBuffer.wrap(new byte[] {(byte) i, 42}), to);
            }
            List<int[]> got = new ArrayList<>(); // {first byte, ecn}
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (got.size() < tos.length && System.nanoTime() < deadline) {
                udp.poll((frame, view, length, srcIp, srcPort, ecn) -> {
                    assertThat(length).isEqualTo(2);
                    assertThat(srcIp).isEqualTo(LOOPBACK);
                    got.add(new int[] {frame.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0), ecn});
                });
            }
            assertThat(got).hasSize(tos.length);
            for (int i = 0; i < tos.length; i++) {
                assertThat(got.get(i)[0]).isEqualTo(i);
                assertThat(got.get(i)[1]).as("ECN of datagram %d", i).isEqualTo(tos[i] & 3);
            }
            assertThat(got.get(0)[1]).isEqualTo(Port.ECN_CE);
        }
    }
}
