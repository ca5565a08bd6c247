package io.metaroce.nic.abi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.abi.AbiConstants;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class RingFlyweightTest {

    @Test
    void initWritesTheHeaderTheAbiDescribes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(RingFlyweight.byteSize(256, 8), 64);
            RingFlyweight r = new RingFlyweight().init(m, AbiConstants.MRCE_RING_KIND_SQ, 256, 8);
            assertThat(m.get(ValueLayout.JAVA_INT, 0)).isEqualTo(0x474e524d);
            assertThat(m.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 'M');
            assertThat(m.get(ValueLayout.JAVA_SHORT, 4)).isEqualTo((short) 1);
            assertThat(m.get(ValueLayout.JAVA_SHORT, 6)).isEqualTo((short) 1);
            assertThat(m.get(ValueLayout.JAVA_INT, 8)).isEqualTo(256);
            assertThat(m.get(ValueLayout.JAVA_INT, 12)).isEqualTo(8);
            assertThat(r.slotOffset(0)).isEqualTo(256);
            assertThat(r.slotOffset(9)).isEqualTo(256 + 256);
            r.producerRelease(5);
            assertThat(m.get(ValueLayout.JAVA_INT, 64)).isEqualTo(5);
            r.consumerRelease(3);
            assertThat(m.get(ValueLayout.JAVA_INT, 128)).isEqualTo(3);
            r.setNeedWakeup(true);
            assertThat(m.get(ValueLayout.JAVA_INT, 192)).isEqualTo(1);
            m.set(ValueLayout.JAVA_INT, 196, AbiConstants.MRCE_CQ_ARM_NEXT);
            assertThat(r.exchangeArm(0)).isEqualTo(1);
            assertThat(m.get(ValueLayout.JAVA_INT, 196)).isZero();
            r.incrementNotifyCount();
            assertThat(m.get(ValueLayout.JAVA_INT, 200)).isEqualTo(1);
        }
    }

    @Test
    void wrapRejectsWhatIsNotARing() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(4096, 64);
            assertThatThrownBy(() -> new RingFlyweight().wrap(m)).isInstanceOf(IllegalArgumentException.class);
            new RingFlyweight().init(m, AbiConstants.MRCE_RING_KIND_CQ, 64, 16);
            m.set(ValueLayout.JAVA_INT, 12, 12); // not a power of two
            assertThatThrownBy(() -> new RingFlyweight().wrap(m)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void wqeAndCqeFlyweightsUseTheAbiOffsets() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = arena.allocate(512, 64);
            new WqeFlyweight()
                    .wrap(m, 256)
                    .wrId(0x1122334455667788L)
                    .opcode(3)
                    .sendFlags(2)
                    .numSge(2)
                    .immData(0xabcdef01)
                    .length(99)
                    .sge(1, 0x1000L, 77, 0x4242);
            assertThat(m.get(ValueLayout.JAVA_LONG, 256)).isEqualTo(0x1122334455667788L);
            assertThat(m.get(ValueLayout.JAVA_BYTE, 256 + 8)).isEqualTo((byte) 3);
            assertThat(m.get(ValueLayout.JAVA_BYTE, 256 + 9)).isEqualTo((byte) 2);
            assertThat(m.get(ValueLayout.JAVA_SHORT, 256 + 10)).isEqualTo((short) 2);
            assertThat(m.get(ValueLayout.JAVA_INT, 256 + 12)).isEqualTo(0xabcdef01);
            assertThat(m.get(ValueLayout.JAVA_INT, 256 + 16)).isEqualTo(99);
            assertThat(m.get(ValueLayout.JAVA_LONG, 256 + 64 + 16)).isEqualTo(0x1000L);
            assertThat(m.get(ValueLayout.JAVA_INT, 256 + 64 + 24)).isEqualTo(77);
            assertThat(m.get(ValueLayout.JAVA_INT, 256 + 64 + 28)).isEqualTo(0x4242);
            CqeFlyweight c = new CqeFlyweight().wrap(m, 0).set(7, 5, 128, 1000, 0x01020304, 0x1001, 0x2002, 2);
            assertThat(m.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(7);
            assertThat(m.get(ValueLayout.JAVA_INT, 8)).isEqualTo(5);
            assertThat(m.get(ValueLayout.JAVA_INT, 12)).isEqualTo(128);
            assertThat(m.get(ValueLayout.JAVA_INT, 20)).isEqualTo(1000);
            assertThat(m.get(ValueLayout.JAVA_INT, 24)).isEqualTo(0x01020304);
            assertThat(m.get(ValueLayout.JAVA_INT, 28)).isEqualTo(0x1001);
            assertThat(m.get(ValueLayout.JAVA_INT, 32)).isEqualTo(0x2002);
            assertThat(m.get(ValueLayout.JAVA_INT, 36)).isEqualTo(2);
            assertThat(c.srcQp()).isEqualTo(0x2002);
        }
    }
}
