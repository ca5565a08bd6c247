package io.metaroce.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.verbs.Mtu;
import org.junit.jupiter.api.Test;

/** The RC parameters carried by {@link ConnectOptions}: defaults, ranges, withers, equality. */
class ConnectOptionsTest {

    @Test
    void defaultsAreIbvRcPingpongs() {
        ConnectOptions o = new ConnectOptions(1, 0, Mtu.MTU_1024, 0, 5);
        assertThat(o.rc()).isEqualTo(ConnectOptions.RcParameters.DEFAULTS);
        assertThat(o.rc()).isEqualTo(new ConnectOptions.RcParameters(1, 1, 14, 7, 7, 12));
        assertThat(new ConnectOptions(1, 0, Mtu.MTU_1024, 0, 5, null, null).rc())
                .isEqualTo(o.rc());
    }

    @Test
    void rcParametersAreCheckedAgainstTheirFieldsRanges() {
        var d = ConnectOptions.RcParameters.DEFAULTS;
        assertThatThrownBy(() -> d.withTimeout(32))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("timeout 32 outside 0..31");
        assertThatThrownBy(() -> d.withRetries(8, 7)).hasMessage("retryCount 8 outside 0..7");
        assertThatThrownBy(() -> d.withRetries(7, -1)).hasMessage("rnrRetry -1 outside 0..7");
        assertThatThrownBy(() -> d.withRdAtomic(256, 1)).hasMessage("maxRdAtomic 256 outside 0..255");
        assertThatThrownBy(() -> d.withMinRnrTimer(32)).hasMessage("minRnrTimer 32 outside 0..31");
        var custom = d.withTimeout(10).withRetries(3, 2).withRdAtomic(16, 8).withMinRnrTimer(1);
        assertThat(custom).isEqualTo(new ConnectOptions.RcParameters(16, 8, 10, 3, 2, 1));
    }

    @Test
    void withersKeepTheRcParametersAndEqualityCoversThem() {
        var rc = ConnectOptions.RcParameters.DEFAULTS.withTimeout(18);
        ConnectOptions o = ConnectOptions.defaults(0)
                .withRc(rc)
                .withMtu(Mtu.MTU_4096)
                .withSl(2)
                .withPort(1)
                .withPrivateData(new byte[] {1, 2});
        assertThat(o.rc()).isEqualTo(rc);
        assertThat(o).isNotEqualTo(o.withRc(ConnectOptions.RcParameters.DEFAULTS));
        assertThat(o).isEqualTo(o.withRc(rc)).hasSameHashCodeAs(o.withRc(rc));
        assertThat(o.toString()).contains("timeout=18");
    }
}
