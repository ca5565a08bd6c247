package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.transport.RequesterHarness.Pkt;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The gate in front of the per-path timer scan (spec 8, "Timers"): an idle QP's duty cycle scans
 * no path, and a timer that falls due still fires in the first duty cycle at or after its
 * deadline, as the ungated scan did: a tail-loss probe at the path's PTO, a path RTO, a
 * cross-path detection at srtt + k * rttvar; the requester's deadline (what a sleeping engine
 * waits for) names the earliest of them. 1 us steps, simulated time.
 */
class PathTimerGateTest {
    static final long US = 1_000;

    /** 8 paths, each sampled 8 times at a 20 us round trip (rttvar well below srtt / 4). */
    private static RequesterHarness warmed() throws Exception {
        RequesterHarness h = new RequesterHarness(8);
        for (int i = 0; i < 64; i++) {
            h.post(1);
            h.cleanRound(20 * US);
            h.step(US);
        }
        assertThat(h.pending()).isZero();
        for (int i = 0; i < 8; i++) {
            assertThat(h.path(i).hasRtt()).isTrue();
        }
        return h;
    }

    /** Steps 1 us at a time until {@code done} holds; returns the time it first held. */
    private static long stepUntil(RequesterHarness h, java.util.function.BooleanSupplier done, long limitNs) {
        long start = h.now();
        while (!done.getAsBoolean()) {
            assertThat(h.now() - start).as("still waiting").isLessThan(limitNs);
            h.step(US);
        }
        return h.now();
    }

    @Test
    void anIdleQpScansNoPathAndHasNoTimer() throws Exception {
        try (RequesterHarness h = warmed()) {
            h.step(US);
            long scans = h.req().pathTimerScans();
            long skipped = h.req().pathTimerScansSkipped();
            for (int i = 0; i < 1000; i++) {
                h.step(US);
            }
            assertThat(h.req().pathTimerScans()).isEqualTo(scans);
            // each cycle either steps the QP, whose gate spares the scan, or (the engine's QP
            // scheduling) leaves the idle QP asleep without a step at all
            assertThat(h.req().pathTimerScansSkipped() - skipped).isBetween(0L, 1000L);
            assertThat(h.req().hasTimer()).isFalse();
        }
    }

    @Test
    void aTailLossProbeAndThenThePathRtoFireAtTheirDeadlinesThoughTheScanIsGated() throws Exception {
        try (RequesterHarness h = warmed()) {
            TransportCounters c = h.dp().counters;
            h.post(1);
            List<Pkt> sent = RequesterHarness.data(h.pump());
            assertThat(sent).hasSize(1);
            Path p = h.path(sent.getFirst().path());
            long sentAt = h.now();
            long pto = sentAt + p.ptoNs(h.dp().rtoInitialNs, h.dp().tlpMinNs);
            long rto = sentAt + p.rtoNs;
            assertThat(pto).isLessThan(rto);
            // the next duty cycle scans once, then the gate holds until the PTO
            h.step(US);
            assertThat(h.req().deadlineNs())
                    .as("the sleeping engine's deadline")
                    .isEqualTo(pto);
            long scans = h.req().pathTimerScans();
            long tlps = c.tlps;
            long firedAt = stepUntil(h, () -> c.tlps > tlps, 100_000 * US);
            assertThat(firedAt).isGreaterThanOrEqualTo(pto).isLessThan(pto + US);
            assertThat(h.req().pathTimerScans() - scans)
                    .as("scans while waiting")
                    .isLessThanOrEqualTo(1);
            long timeouts = c.pathTimeouts;
            h.step(US); // the probe touched the paths: one scan
            assertThat(h.req().deadlineNs()).isLessThanOrEqualTo(rto);
            long timedOutAt = stepUntil(h, () -> c.pathTimeouts > timeouts, 100_000 * US);
            assertThat(timedOutAt).isGreaterThanOrEqualTo(rto).isLessThan(rto + US);
        }
    }

    @Test
    void crossPathDetectionFiresAtItsDeadlineThoughTheScanIsGated() throws Exception {
        try (RequesterHarness h = warmed()) {
            TransportCounters c = h.dp().counters;
            h.post(2);
            List<Pkt> sent = RequesterHarness.data(h.pump());
            assertThat(sent).hasSize(2);
            assertThat(sent.get(0).path()).isNotEqualTo(sent.get(1).path());
            Path p = h.path(sent.get(0).path());
            long sentAt = h.now();
            h.step(20 * US);
            h.ackPlaced(List.of(sent.get(1)), RcRequester.WINDOW); // the later packet arrived
            h.step(US);
            long overdue = sentAt + p.srttNs + h.dp().lossDetectVarFactor * p.rttvarNs;
            assertThat(overdue).isLessThan(sentAt + p.ptoNs(h.dp().rtoInitialNs, h.dp().tlpMinNs));
            assertThat(h.req().deadlineNs()).isEqualTo(overdue + 1);
            long losses = c.crossPathLosses;
            long tlps = c.tlps;
            long firedAt = stepUntil(h, () -> c.crossPathLosses > losses, 100_000 * US);
            assertThat(firedAt).isGreaterThan(overdue).isLessThanOrEqualTo(overdue + US);
            assertThat(c.tlps).isEqualTo(tlps);
        }
    }
}
