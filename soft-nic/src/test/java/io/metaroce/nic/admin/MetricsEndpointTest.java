package io.metaroce.nic.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.engine.Telemetry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class MetricsEndpointTest {
    private final AtomicLong dataTx = new AtomicLong(5);
    private volatile boolean withQp = true;

    private static Telemetry.PathRow path(int id, long entropy, String state, long srttNs, long packetsSent) {
        long[] v = new long[Telemetry.PATH_KEYS.size()];
        v[Telemetry.PATH_KEYS.indexOf("entropy")] = entropy;
        v[Telemetry.PATH_KEYS.indexOf("srttNs")] = srttNs;
        v[Telemetry.PATH_KEYS.indexOf("packetsSent")] = packetsSent;
        return new Telemetry.PathRow(id, state, v);
    }

    private Telemetry snapshot() {
        List<Telemetry.QpRow> qps = withQp
                ? List.of(new Telemetry.QpRow(
                        17,
                        18,
                        3,
                        false,
                        0,
                        256,
                        0,
                        0,
                        0,
                        List.of(path(0, 4, "active", 1500, 11), path(1, 9, "dead", 0, 3))))
                : List.of();
        return new Telemetry(
                1,
                "metaroce",
                2,
                false,
                List.of(
                        new Telemetry.Group("counters", List.of("dataTx", "ecnMarksRx"), new long[] {dataTx.get(), 0}),
                        new Telemetry.Group("port", List.of("rxFrames"), new long[] {7})),
                qps,
                List.of());
    }

    @Test
    void exposesCountersAndPerPathGaugesOverHttp() throws Exception {
        try (MetricsEndpoint m = new MetricsEndpoint(new InetSocketAddress("127.0.0.1", 0), this::snapshot)) {
            HttpClient client = HttpClient.newHttpClient();
            HttpRequest get = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + m.port() + "/metrics"))
                    .build();
            HttpResponse<String> r = client.send(get, HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type"))
                    .hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
            String body = r.body();
            assertThat(body)
                    .contains("mrce_transport_data_tx_total 5.0")
                    .contains("mrce_port_rx_frames_total 7.0")
                    .contains("mrce_qps 1.0")
                    .containsPattern("mrce_path_packets_sent\\{path=\"0\",qpn=\"17\"} 11.0")
                    .containsPattern("mrce_path_packets_sent\\{path=\"1\",qpn=\"17\"} 3.0")
                    .containsPattern("mrce_path_srtt_ns\\{path=\"0\",qpn=\"17\"} 1500.0")
                    .containsPattern("mrce_path_entropy\\{path=\"1\",qpn=\"17\"} 9.0");

            dataTx.set(9);
            withQp = false;
            body = client.send(get, HttpResponse.BodyHandlers.ofString()).body();
            assertThat(body)
                    .contains("mrce_transport_data_tx_total 9.0")
                    .contains("mrce_qps 0.0")
                    .doesNotContain("qpn=\"17\"");
        }
    }

    @Test
    void camelCaseBecomesDotted() {
        assertThat(MetricsEndpoint.snake("deliveryRateBps")).isEqualTo("delivery.rate.bps");
    }
}
