package io.metaroce.nic.port;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.nic.sim.SimClock;
import io.metaroce.nic.sim.SimFabric;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The multi-plane port: a frame leaves by the plane of its entropy (entropy mod planes) to the
 * peer's address on that plane, whichever plane's buffer it was built in; frames received on any
 * plane are handed up from the sender's plane-0 address; the whole port's counters sum the
 * planes', each plane keeps its own; one address per plane.
 */
class PlanePortTest {
    static final int A0 = 0xC6120101; // 198.18.1.1
    static final int A1 = 0xC6120201; // 198.18.2.1
    static final int B0 = 0xC6120102;
    static final int B1 = 0xC6120202;
    static final int UDP = 4791;

    record Got(int plane, int srcIp, int first, int length) {}

    @Test
    void framesLeaveByTheirEntropysPlaneAndArriveFromThePlaneZeroAddress() {
        SimClock clock = new SimClock(0);
        try (SimFabric p0 = new SimFabric(1, 1, clock);
                SimFabric p1 = new SimFabric(2, 1, clock)) {
            PlanePort a = new PlanePort(p0.attach(A0, UDP), p1.attach(A1, UDP));
            PlanePort b = new PlanePort(p0.attach(B0, UDP), p1.attach(B1, UDP));
            assertThat(a.planes()).isEqualTo(2);
            assertThat(a.localIp()).isEqualTo(A0);
            assertThat(a.peerAddress(B0, 1)).isEqualTo(B1);
            // entropies 0..9 in an order that defeats the claim's guess half the time
            int[] entropies = {0, 1, 2, 3, 5, 7, 4, 6, 9, 8};
            for (int i = 0; i < entropies.length; i++) {
                MemorySegment f = a.claim();
                int len = 100 + i;
                for (int k = 0; k < len; k++) {
                    f.set(ValueLayout.JAVA_BYTE, k, (byte) (i * 31 + k));
                }
                a.commit(len, B0, UDP, entropies[i]);
            }
            a.flush();
            clock.advance(1_000_000);
            List<Got> got = new ArrayList<>();
            List<String> bad = new ArrayList<>();
            int n = b.poll((MemorySegment frame, ByteBuffer view, int length, int srcIp, int srcPort, int ecn) -> {
                int i = length - 100;
                for (int k = 0; k < length; k++) {
                    if (frame.get(ValueLayout.JAVA_BYTE, k) != (byte) (i * 31 + k)) {
                        bad.add("frame " + i + " byte " + k);
                        break;
                    }
                }
                got.add(new Got(-1, srcIp, i, length));
            });
            assertThat(n).isEqualTo(10);
            assertThat(bad).isEmpty();
            assertThat(got).allMatch(g -> g.srcIp() == A0);
            assertThat(got.stream().map(Got::first).sorted().toList()).containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
            // frame i went by plane entropies[i] mod 2: 5 each way
            assertThat(a.planeCounters(0).txFrames).isEqualTo(5);
            assertThat(a.planeCounters(1).txFrames).isEqualTo(5);
            assertThat(b.planeCounters(0).rxFrames).isEqualTo(5);
            assertThat(b.planeCounters(1).rxFrames).isEqualTo(5);
            assertThat(a.counters().txFrames).isEqualTo(10);
            assertThat(b.counters().rxFrames).isEqualTo(10);
            assertThat(p1.link(0).deliveredFrames).isEqualTo(5);
            // what plane 1 delivered came from entropies 1, 3, 5, 7, 9
            b.counters().rxBadSource++; // the engine's own counters live in the whole port's
            b.poll((frame, view, length, srcIp, srcPort, ecn) -> {});
            assertThat(b.counters().rxBadSource).isEqualTo(1);
            assertThat(b.counters().rxFrames).isEqualTo(10);
            a.close();
            b.close();
        }
    }

    @Test
    void eachPlaneNeedsItsOwnAddressAndTheSamePort() {
        SimClock clock = new SimClock(0);
        try (SimFabric p0 = new SimFabric(1, 1, clock);
                SimFabric p1 = new SimFabric(2, 1, clock)) {
            assertThatThrownBy(() -> new PlanePort(p0.attach(A0, UDP)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("at least 2 planes");
            assertThatThrownBy(() -> new PlanePort(p0.attach(B0, UDP), p1.attach(B0, UDP)))
                    .hasMessageContaining("same address");
            assertThatThrownBy(() -> new PlanePort(p0.attach(A1, UDP), p1.attach(B1, UDP + 1)))
                    .hasMessageContaining("same UDP port");
        }
    }
}
