package io.metaroce.nic.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import org.junit.jupiter.api.Test;

/** Range checks of the MR table's regions, implicit on-demand-paging ones included. */
class MrRangeTest {
    private static final int ODP = Ibv.ACCESS_ON_DEMAND | Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE;

    @Test
    void anExplicitRegionHoldsOnlyItsRange() {
        MrTable t = new MrTable(4, null);
        Mr mr = t.register(1, new Pd(1, 1), 0, 0x10000, 0x2000, 0x10000, ODP);
        assertThat(mr.contains(0x10000, 0x2000)).isTrue();
        assertThat(mr.contains(0x11fff, 1)).isTrue();
        assertThat(mr.contains(0x12000, 0)).as("empty range at the end").isTrue();
        assertThat(mr.contains(0x12000, 1)).isFalse();
        assertThat(mr.contains(0xffff, 1)).as("below").isFalse();
        assertThat(mr.contains(0xffff, 2)).isFalse();
        assertThat(mr.contains(0x10000, 0x2001)).isFalse();
        assertThat(mr.contains(0x11000, -1)).as("negative length").isFalse();
        assertThat(mr.contains(-1L, 2)).as("wraps past the top").isFalse();
        assertThat(mr.contains(Long.MIN_VALUE + 0x10000, 1)).as("sign bit set").isFalse();
    }

    @Test
    void anImplicitRegionHoldsEveryAddressAndNeverOverflows() {
        MrTable t = new MrTable(4, null);
        // ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...)
        Mr mr = t.register(1, new Pd(1, 1), 0, 0, -1L, 0, ODP);
        assertThat(t.byRkey(mr.rkey)).isSameAs(mr);
        assertThat(t.byLkey(mr.lkey)).isSameAs(mr);
        assertThat(mr.contains(0, 1)).isTrue();
        assertThat(mr.contains(0x7f12_3456_7000L, 1 << 20)).as("a user address").isTrue();
        assertThat(mr.contains(0x7fff_ffff_ffffL, Integer.MAX_VALUE)).isTrue();
        assertThat(mr.contains(Long.MAX_VALUE, 1)).as("across the sign bit").isTrue();
        assertThat(mr.contains(-2L, 1)).as("last byte").isTrue();
        assertThat(mr.contains(-1L, 0)).isTrue();
        assertThat(mr.contains(-1L, 1)).as("would end past 2^64 - 1").isFalse();
        assertThat(mr.contains(-16L, 32)).as("wraps past the top").isFalse();
        assertThat(mr.contains(0x1000, -1)).isFalse();
        assertThat(mr.translate(0x7f12_3456_7000L)).as("identity").isEqualTo(0x7f12_3456_7000L);
        t.remove(mr);
        assertThat(t.byRkey(mr.rkey)).isNull();
    }
}
