package io.metaroce.nic.port;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.IpAddr;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The UDP port serving an IPv6 address (on ::1): frames go between two ports over AF_INET6
 * sockets, each from the entropy socket its entropy picks, marked ECT(0) in the traffic class,
 * and arrive with their source address (the handle of ::1), source port and ECN field.
 */
class UdpPortIpv6Test {

    private static int freePort(int span) throws Exception {
        for (int attempt = 0; attempt < 50; attempt++) {
            int base;
            try (DatagramChannel probe = DatagramChannel.open()) {
                probe.bind(new InetSocketAddress("::1", 0));
                base = ((InetSocketAddress) probe.getLocalAddress()).getPort();
            }
            if (base + span < 65536) {
                return base;
            }
        }
        throw new IllegalStateException("no free port range");
    }

    @Test
    void framesCrossOverIpv6WithSourcePortPerEntropyAndEct() throws Exception {
        int loop6;
        try {
            loop6 = IpAddr.parse("::1");
            try (DatagramChannel c = DatagramChannel.open()) {
                c.bind(new InetSocketAddress("::1", 0));
            }
        } catch (Exception e) {
            Assumptions.abort("no IPv6 loopback here: " + e);
            return;
        }
        assertThat(IpAddr.isV6(loop6)).isTrue();
        int entropyPorts = 4;
        int portA = freePort(entropyPorts + 1);
        int portB = freePort(1);
        try (UdpPort a = new UdpPort(loop6, portA, 2048, 32, entropyPorts);
                UdpPort b = new UdpPort(loop6, portB, 2048, 32)) {
            assertThat(b.readsEcn()).isTrue();
            int frames = 16;
            for (int i = 0; i < frames; i++) {
                MemorySegment f = a.claim();
                for (int k = 0; k < 100; k++) {
                    f.set(ValueLayout.JAVA_BYTE, k, (byte) (i * 7 + k));
                }
                a.commit(100, loop6, portB, i);
            }
            assertThat(a.flush()).isEqualTo(frames);
            List<int[]> got = new ArrayList<>(); // {index, srcIp, srcPort, ecn, ok}
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (got.size() < frames && System.nanoTime() < deadline) {
                b.poll((frame, view, length, srcIp, srcPort, ecn) -> {
                    int i = frame.get(ValueLayout.JAVA_BYTE, 0) & 0xff;
                    boolean ok = length == 100;
                    for (int k = 0; k < 100 && ok; k++) {
                        ok = frame.get(ValueLayout.JAVA_BYTE, k) == (byte) ((i / 7) * 7 + k);
                    }
                    got.add(new int[] {i / 7, srcIp, srcPort, ecn, ok ? 1 : 0});
                });
            }
            assertThat(got).hasSize(frames);
            for (int n = 0; n < frames; n++) {
                int[] g = got.get(n);
                assertThat(g[0]).as("frames arrive in commit order").isEqualTo(n);
                assertThat(g[4]).as("payload of frame %d", n).isEqualTo(1);
                assertThat(g[1]).as("source address").isEqualTo(loop6);
                assertThat(g[2]).as("source port of entropy %d", n).isEqualTo(portA + 1 + n % entropyPorts);
                assertThat(g[3]).as("ECN: ECT(0)").isEqualTo(2);
            }
        }
    }
}
