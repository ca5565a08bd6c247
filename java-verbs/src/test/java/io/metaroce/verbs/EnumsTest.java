package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/**
 * The enums against the {@code int} constants of {@link Abi} (themselves checked against
 * verbs.h by {@link LayoutAgreementTest}): every enum value is the C constant of its name, the
 * set and value conversions round-trip, and the set overloads write the same native bits.
 */
class EnumsTest {

    private static int abi(String name) throws ReflectiveOperationException {
        return Abi.class.getField(name).getInt(null);
    }

    @Test
    void everyEnumValueIsTheCConstantOfItsName() throws ReflectiveOperationException {
        for (AccessFlag f : AccessFlag.values()) {
            assertThat(f.bit()).as(f.name()).isEqualTo(abi("IBV_ACCESS_" + f.name()));
        }
        for (SendFlag f : SendFlag.values()) {
            assertThat(f.bit()).as(f.name()).isEqualTo(abi("IBV_SEND_" + f.name()));
        }
        for (WrOpcode o : WrOpcode.values()) {
            assertThat(o.value()).as(o.name()).isEqualTo(abi("IBV_WR_" + o.name()));
            assertThat(WrOpcode.of(o.value())).isSameAs(o);
            assertThat(SendWorkRequest.opcodeName(o.value())).isEqualTo(o.name());
        }
        for (WcOpcode o : WcOpcode.values()) {
            assertThat(o.value()).as(o.name()).isEqualTo(abi("IBV_WC_" + o.name()));
            assertThat(WcOpcode.of(o.value())).isSameAs(o);
            assertThat(WorkCompletion.opcodeName(o.value())).isEqualTo(o.name());
        }
        for (WcStatus s : WcStatus.values()) {
            assertThat(s.value()).as(s.name()).isEqualTo(abi("IBV_WC_" + s.name()));
            assertThat(WcStatus.of(s.value())).isSameAs(s);
            assertThat(WorkCompletion.statusName(s.value())).isEqualTo(s.name());
        }
        for (AsyncEvent.Type t : AsyncEvent.Type.values()) {
            assertThat(t.value()).as(t.name()).isEqualTo(abi("IBV_EVENT_" + t.name()));
            assertThat(AsyncEvent.Type.of(t.value())).isSameAs(t);
        }
        assertThat(AsyncEvent.Type.of(20)).isNull();
        assertThat(WcStatus.values()).hasSize(24); // IBV_WC_SUCCESS .. IBV_WC_TM_RNDV_INCOMPLETE
        assertThat(WcStatus.of(24)).isNull();
        assertThat(WcStatus.of(-1)).isNull();
        assertThat(WcOpcode.of(77)).isNull();
        assertThat(WrOpcode.of(99)).isNull();
        assertThat(WorkCompletion.statusName(99)).isEqualTo("STATUS_99");
    }

    @Test
    void setsAndBitsRoundTrip() {
        assertThat(AccessFlag.toBits(EnumSet.allOf(AccessFlag.class))).isEqualTo(Access.ALL);
        assertThat(AccessFlag.fromBits(Access.LOCAL_WRITE | Access.REMOTE_READ))
                .containsExactly(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ);
        assertThat(AccessFlag.fromBits(0)).isEmpty();
        assertThat(SendFlag.toBits(EnumSet.of(SendFlag.SIGNALED, SendFlag.INLINE)))
                .isEqualTo(SendWorkRequest.FLAG_SIGNALED | SendWorkRequest.FLAG_INLINE);
        for (int bits = 0; bits < 16; bits++) {
            assertThat(SendFlag.toBits(SendFlag.fromBits(bits))).isEqualTo(bits);
            assertThat(AccessFlag.toBits(AccessFlag.fromBits(bits))).isEqualTo(bits);
        }
    }

    @Test
    void theSetOverloadsWriteTheSameNativeBits() {
        try (SendWorkRequest a = new SendWorkRequest(1);
                SendWorkRequest b = new SendWorkRequest(1)) {
            a.signaled(true).solicited(true).rdmaRead(0x1000, 5);
            b.flags(EnumSet.of(SendFlag.SIGNALED, SendFlag.SOLICITED)).rdmaRead(0x1000, 5);
            assertThat(b.flags()).isEqualTo(a.flags());
            assertThat(b.flagSet()).containsExactly(SendFlag.SIGNALED, SendFlag.SOLICITED);
            assertThat(b.wrOpcode()).isEqualTo(WrOpcode.RDMA_READ);
        }
        try (WorkCompletions wcs = new WorkCompletions(1)) {
            wcs.segment().set(java.lang.foreign.ValueLayout.JAVA_INT, Abi.WC_STATUS, Abi.IBV_WC_RETRY_EXC_ERR);
            wcs.segment().set(java.lang.foreign.ValueLayout.JAVA_INT, Abi.WC_OPCODE, Abi.IBV_WC_RECV_RDMA_WITH_IMM);
            assertThat(wcs.get(0).wcStatus()).isEqualTo(WcStatus.RETRY_EXC_ERR);
            assertThat(wcs.get(0).wcOpcode()).isEqualTo(WcOpcode.RECV_RDMA_WITH_IMM);
            WorkCompletion.Snapshot s = wcs.get(0).snapshot();
            assertThat(s.wcStatus()).isEqualTo(WcStatus.RETRY_EXC_ERR);
            assertThat(s.wcOpcode()).isEqualTo(WcOpcode.RECV_RDMA_WITH_IMM);
        }
    }
}
