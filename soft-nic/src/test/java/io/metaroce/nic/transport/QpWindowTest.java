package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RequesterHarness.data;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.transport.RequesterHarness.Pkt;
import io.metaroce.nic.verbs.TestNode;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Spec 10a rule 3: the QP window is {@code gain} bandwidth-delay products of its paths, in packets,
 * between {@link QpWindow#MIN} and {@link RcRequester#WINDOW}; the gain comes from the daemon's
 * {@code --qp-window-gain} ({@link TransportSettings#qpWindowGain}). Spec 7: it bounds the RSNs in
 * flight (neither acknowledged nor SACKed), so a hole at {@code una} holds one packet of it, while
 * the span from {@code una} is bounded by the SACK bitmap's 256.
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

    @Test
    void aHoleAtTheLeftEdgeHoldsOnePacketOfTheWindowNotAll() throws Exception {
        try (RequesterHarness h = new RequesterHarness(8)) {
            // Clean rounds until the paths' rates are known and the window follows them.
            for (int i = 0; i < 50 && h.req().window() == RcRequester.WINDOW; i++) {
                h.post(8);
                h.cleanRound(20_000);
            }
            h.pump();
            int w = h.req().window();
            assertThat(w).as("the window from the rates").isLessThan(RcRequester.WINDOW);
            assertThat(h.req().unacknowledged()).isZero();
            h.post(RcRequester.WINDOW - h.pending());
            List<Pkt> first = sendAll(h);
            assertThat(first).as("a window's worth, at most").isNotEmpty().hasSizeLessThanOrEqualTo(w);
            // The oldest packet is lost; everything after it arrives and is SACKed.
            Pkt hole = first.get(0);
            h.clock.addAndGet(20_000);
            h.ackPlaced(first.subList(1, first.size()), RcRequester.WINDOW);
            List<Pkt> next = sendAll(h);
            assertThat(next).as("the hole resent").anyMatch(p -> p.rsn() == hole.rsn() && p.retransmit());
            List<Pkt> fresh = next.stream().filter(p -> !p.retransmit()).toList();
            assertThat(fresh).as("new packets while the hole waits").isNotEmpty();
            assertThat(h.req().unacknowledged())
                    .as("RSNs from una: beyond the window, within the SACK bitmap")
                    .isGreaterThan(w)
                    .isLessThanOrEqualTo(RcRequester.WINDOW);
            assertThat(h.req().unackedInFlight())
                    .as("in flight: within the window")
                    .isLessThanOrEqualTo(w);
            // The copy arrives, then the rest: everything completes, in order.
            List<Pkt> out = next;
            for (int i = 0; i < 100 && h.pending() > 0; i++) {
                h.clock.addAndGet(20_000);
                h.ackPlaced(out, RcRequester.WINDOW);
                out = sendAll(h);
            }
            assertThat(h.pending()).isZero();
            assertThat(h.req().unacknowledged()).isZero();
            assertThat(h.req().unackedInFlight()).isZero();
            assertThat(h.completions).extracting(TestNode.Cqe::wrId).isSorted();
            assertThat(h.completions).allMatch(c -> c.status() == Ibv.WC_SUCCESS);
        }
    }

    /** Duty cycles until one sends nothing (a cycle sends one burst at most); the data sent. */
    private static List<Pkt> sendAll(RequesterHarness h) {
        List<Pkt> all = new java.util.ArrayList<>();
        for (List<Pkt> out = data(h.pump()); !out.isEmpty(); out = data(h.pump())) {
            all.addAll(out);
        }
        return all;
    }
}
