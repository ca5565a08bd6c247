package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Spec 10a rule 3: the QP window is {@code gain} bandwidth-delay products of its paths, in packets,
 * between {@link QpWindow#MIN} and {@link RcRequester#WINDOW}; the gain comes from the daemon's
 * {@code --qp-window-gain} ({@link TransportSettings#qpWindowGain}).
 */
class QpWindowTest {
    private static final long PACKET = 8192;

    /** Eight paths, each delivering {@code bps} at an srtt of {@code srttNs}. */
    private static Path[] paths(long bps, long srttNs) {
        Path[] p = new Path[8];
        for (int i = 0; i < p.length; i++) {
            p[i] = new Path(i);
            p[i].reset(i, 64 * PACKET, 5_000_000);
            p[i].rttSample(srttNs, 1, Long.MAX_VALUE);
            p[i].rateKnown = true;
            p[i].deliveryRateBps = bps;
        }
        return p;
    }

    private static int window(Path[] p, int gain) {
        QpWindow w = new QpWindow();
        w.invalidate();
        w.update(p, p.length, RcRequester.WINDOW, PACKET, gain);
        return w.window();
    }

    @Test
    void theWindowIsGainTimesTheBandwidthDelayProductWithinItsBounds() {
        // 8 paths of 25 MB/s at 2 ms: 400 KB in flight, 48.8 packets of 8 KiB
        Path[] p = paths(25_000_000, 2_000_000);
        assertThat(window(p, 2)).isEqualTo(98);
        assertThat(window(p, 4)).isEqualTo(196);
        assertThat(window(p, 8)).as("the wire's limit").isEqualTo(RcRequester.WINDOW);
        assertThat(window(paths(1_000_000, 1_000_000), 4)).as("the floor").isEqualTo(QpWindow.MIN);
    }

    @Test
    void theDaemonsDefaultIsTwoAndTheGainIsChecked() {
        assertThat(TransportSettings.SIMULATION.qpWindowGain()).isEqualTo(2);
        assertThat(TransportSettings.forRealPort(48, 64, false, 10_000_000, 5_000_000, 1_000_000)
                        .qpWindowGain())
                .isEqualTo(TransportSettings.QP_WINDOW_GAIN);
        assertThat(TransportSettings.SIMULATION.withQpWindowGain(4).qpWindowGain())
                .isEqualTo(4);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> TransportSettings.SIMULATION.withQpWindowGain(0))
                .isInstanceOf(IllegalArgumentException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> TransportSettings.SIMULATION.withQpWindowGain(TransportSettings.QP_WINDOW_GAIN_MAX + 1))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
