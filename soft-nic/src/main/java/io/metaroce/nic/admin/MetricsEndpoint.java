package io.metaroce.nic.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opt-in Prometheus endpoint ({@code mrce-nicd --metrics-port}): {@code GET /metrics} takes an
 * engine snapshot (the same JSON as {@code mrce-ctl stats}) and exposes it through Micrometer's
 * Prometheus registry:
 *
 * <ul>
 *   <li>every daemon-wide transport counter as {@code mrce_transport_<name>_total}, and every
 *       counter of the snapshot's other groups (port, ud, loopback) as
 *       {@code mrce_<group>_<name>_total} (names from the snapshot, camelCase to snake);
 *   <li>{@code mrce_qps} (active QPs) and, per path of every active QP, each numeric path field as
 *       a gauge {@code mrce_path_<name>} with labels {@code qpn} and {@code path}.
 * </ul>
 *
 * Runs on its own small executor; the engine only builds the snapshot, so scrapes cost the data
 * path one command.
 */
public final class MetricsEndpoint implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetricsEndpoint.class);
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final ObjectMapper json = new ObjectMapper();
    private final Supplier<String> snapshot;
    private final Map<String, Double> counters = new ConcurrentHashMap<>();
    private final Map<String, MultiGauge> pathGauges = new HashMap<>();
    private volatile double qps;
    private final HttpServer http;

    public MetricsEndpoint(InetSocketAddress bind, Supplier<String> snapshot) throws IOException {
        this.snapshot = snapshot;
        Gauge.builder("mrce.qps", this, m -> m.qps).description("active queue pairs").register(registry);
        http = HttpServer.create(bind, 8);
        http.createContext("/metrics", this::serve);
        http.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "mrce-metrics");
            t.setDaemon(true);
            return t;
        }));
        http.start();
        LOG.info("Prometheus metrics on http://{}:{}/metrics", bind.getHostString(), port());
    }

    public int port() {
        return http.getAddress().getPort();
    }

    /** The Prometheus text of a fresh snapshot (what a scrape returns). */
    public synchronized String scrape() throws IOException {
        update(json.readTree(snapshot.get()));
        return registry.scrape();
    }

    private void serve(HttpExchange ex) throws IOException {
        try (ex) {
            if (!"GET".equals(ex.getRequestMethod())) {
                ex.sendResponseHeaders(405, -1);
                return;
            }
            byte[] body;
            int status = 200;
            try {
                body = scrape().getBytes(StandardCharsets.UTF_8);
            } catch (RuntimeException | IOException e) {
                status = 503;
                body = ("snapshot failed: " + e.getMessage() + "\n").getBytes(StandardCharsets.UTF_8);
            }
            ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            ex.sendResponseHeaders(status, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        }
    }

    private void update(JsonNode root) {
        // Every object of counters at the top of the snapshot: transport ("counters"), port, ud, loopback ...
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> g = it.next();
            if (g.getValue().isObject()) {
                counterGroup(g.getValue(), "counters".equals(g.getKey()) ? "mrce.transport." : "mrce." + snake(g.getKey()) + ".");
            }
        }
        JsonNode qpList = root.path("qps");
        qps = qpList.size();
        Map<String, List<MultiGauge.Row<?>>> rows = new HashMap<>();
        for (JsonNode qp : qpList) {
            String qpn = qp.path("qpn").asText();
            for (JsonNode path : qp.path("paths")) {
                Tags tags = Tags.of("qpn", qpn, "path", path.path("id").asText());
                for (Iterator<Map.Entry<String, JsonNode>> it = path.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> f = it.next();
                    if (f.getValue().isNumber() && !"id".equals(f.getKey())) {
                        rows.computeIfAbsent(f.getKey(), k -> new ArrayList<>())
                                .add(MultiGauge.Row.of(tags, f.getValue().asDouble()));
                    }
                }
            }
        }
        for (Map.Entry<String, List<MultiGauge.Row<?>>> e : rows.entrySet()) {
            pathGauges.computeIfAbsent(e.getKey(), k -> MultiGauge.builder("mrce.path." + snake(k))
                    .description("per-path telemetry: " + k).register(registry))
                    .register(e.getValue(), true);
        }
        for (Map.Entry<String, MultiGauge> e : pathGauges.entrySet()) {
            if (!rows.containsKey(e.getKey())) {
                e.getValue().register(List.of(), true);
            }
        }
    }

    private void counterGroup(JsonNode group, String prefix) {
        for (Iterator<Map.Entry<String, JsonNode>> it = group.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            if (!f.getValue().isNumber()) {
                continue;
            }
            String key = prefix + snake(f.getKey());
            if (counters.put(key, f.getValue().asDouble()) == null) {
                FunctionCounter.builder(key, counters, m -> m.getOrDefault(key, 0.0)).register(registry);
            }
        }
    }

    /** camelCase to dot.separated (Micrometer's Prometheus naming makes it snake_case). */
    static String snake(String camel) {
        StringBuilder b = new StringBuilder(camel.length() + 4);
        for (int i = 0; i < camel.length(); i++) {
            char c = camel.charAt(i);
            if (Character.isUpperCase(c)) {
                b.append('.').append(Character.toLowerCase(c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    @Override
    public void close() {
        http.stop(0);
        registry.close();
    }
}
