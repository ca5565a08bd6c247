package io.metaroce.nic.admin;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class MetricsEndpointTest {
    private final AtomicLong dataTx = new AtomicLong(5);
    private volatile boolean withQp = true;

    private String snapshot() {
        String qps = withQp
                ? "[{\"qpn\":17,\"destQpn\":18,\"state\":3,\"paths\":[{\"id\":0,\"entropy\":4,\"state\":\"ACTIVE\","
                        + "\"srttNs\":1500,\"packetsSent\":11},{\"id\":1,\"entropy\":9,\"state\":\"DEAD\","
                        + "\"srttNs\":0,\"packetsSent\":3}]}]"
                : "[]";
        return "{\"timeNs\":1,\"counters\":{\"dataTx\":" + dataTx.get() + ",\"ecnMarksRx\":0},"
                + "\"port\":{\"rxFrames\":7},\"qps\":" + qps + ",\"closedQps\":[]}";
    }

    @Test
    void exposesCountersAndPerPathGaugesOverHttp() throws Exception {
        try (MetricsEndpoint m = new MetricsEndpoint(new InetSocketAddress("127.0.0.1", 0), this::snapshot)) {
            HttpClient client = HttpClient.newHttpClient();
            HttpRequest get = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + m.port() + "/metrics")).build();
            HttpResponse<String> r = client.send(get, HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
            String body = r.body();
            assertThat(body).contains("mrce_transport_data_tx_total 5.0")
                    .contains("mrce_port_rx_frames_total 7.0")
                    .contains("mrce_qps 1.0")
                    .containsPattern("mrce_path_packets_sent\\{path=\"0\",qpn=\"17\"} 11.0")
                    .containsPattern("mrce_path_packets_sent\\{path=\"1\",qpn=\"17\"} 3.0")
                    .containsPattern("mrce_path_srtt_ns\\{path=\"0\",qpn=\"17\"} 1500.0");

            dataTx.set(9);
            withQp = false;
            body = client.send(get, HttpResponse.BodyHandlers.ofString()).body();
            assertThat(body).contains("mrce_transport_data_tx_total 9.0").contains("mrce_qps 0.0")
                    .doesNotContain("qpn=\"17\"");
        }
    }

    @Test
    void camelCaseBecomesDotted() {
        assertThat(MetricsEndpoint.snake("deliveryRateBps")).isEqualTo("delivery.rate.bps");
    }
}
