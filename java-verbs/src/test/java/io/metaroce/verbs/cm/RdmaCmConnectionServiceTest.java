package io.metaroce.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.metaroce.verbs.RdmaCm;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@link RdmaCmConnectionService} without an rdma_cm library (the unit tests run without
 * {@code bin/mrce-run}'s preload): a clear error names what is missing, and arguments are
 * checked before any native call. JverbsRdmaCmIT covers connections.
 */
class RdmaCmConnectionServiceTest {

    @Test
    void withoutTheLibraryEveryCallFailsSayingWhatIsMissing() {
        assumeFalse(RdmaCm.available(), "an rdma_cm library is loaded in this JVM");
        assertThat(RdmaCmConnectionService.available()).isFalse();
        assertThat(RdmaCm.library()).isEmpty();
        assertThatThrownBy(RdmaCm.Channel::new)
                .isInstanceOf(UnsatisfiedLinkError.class)
                .hasMessageMatching("(?s).*(rdma_cm library|libibverbs).*");
        assertThatThrownBy(() -> new RdmaCmConnectionService(Duration.ofSeconds(1)).listen(7000))
                .isInstanceOf(UnsatisfiedLinkError.class);
    }

    @Test
    void aPortOutsideOneTo65535IsRefusedBeforeAnyNativeCall() {
        RdmaCmConnectionService svc = new RdmaCmConnectionService(Duration.ZERO);
        assertThatThrownBy(() -> svc.listen(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1..65535");
        assertThatThrownBy(() -> svc.listen(70000)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void eventNamesAreLibrdmacmsWithoutThePrefix() {
        assertThat(RdmaCm.eventName(RdmaCm.CONNECT_RESPONSE)).isEqualTo("CONNECT_RESPONSE");
        assertThat(RdmaCm.eventName(RdmaCm.TIMEWAIT_EXIT)).isEqualTo("TIMEWAIT_EXIT");
        assertThat(RdmaCm.eventName(99)).isEqualTo("EVENT_99");
    }
}
