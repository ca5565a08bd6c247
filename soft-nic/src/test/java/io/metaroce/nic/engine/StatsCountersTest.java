package io.metaroce.nic.engine;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.metaroce.nic.transport.TransportCounters;
import org.junit.jupiter.api.Test;

/**
 * The stats JSON carries the transport counters that mrce-ctl counters and the Prometheus endpoint
 * show (both list whatever the object holds), the gray-failure and path-scale ones included.
 */
class StatsCountersTest {

    @Test
    void theCountersObjectCarriesOpportunisticRetransmitsAndEntropyRedraws() throws Exception {
        TransportCounters c = new TransportCounters();
        c.opportunisticRetransmits = 7;
        c.entropyRedraws = 3;
        c.crossPathLosses = 2;
        StringBuilder b = new StringBuilder();
        Telemetry.appendGroup(b, Telemetry.transportCounters(c));
        JsonNode n = new ObjectMapper().readTree(b.toString());
        assertThat(n.path("opportunisticRetransmits").asLong()).isEqualTo(7);
        assertThat(n.path("entropyRedraws").asLong()).isEqualTo(3);
        assertThat(n.path("crossPathLosses").asLong()).isEqualTo(2);
    }
}
