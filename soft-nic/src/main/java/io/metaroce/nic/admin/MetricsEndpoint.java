package io.metaroce.nic.admin;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.metaroce.nic.engine.Telemetry;
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
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opt-in Prometheus endpoint ({@code mrce-nicd --metrics-port}): {@code GET /metrics} takes an
 * engine snapshot ({@link Telemetry}, what {@code mrce-ctl stats} shows as JSON) and exposes it
 * through Micrometer's Prometheus registry:
 *
 * <ul>
 *   <li>every daemon-wide transport counter as {@code mrce_transport_<name>_total}, and every
 *       counter of the snapshot's other groups (port, ud, loopback) as
 *       {@code mrce_<group>_<name>_total} (the snapshot's names, camelCase to snake);
 *   <li>{@code mrce_qps} (active QPs) and, per path of every active QP, each of its numbers
 *       ({@link Telemetry#PATH_KEYS}) as a gauge {@code mrce_path_<name>} with labels {@code qpn}
 *       and {@code path}.
 * </ul>
 *
 * Runs on its own small executor, which reads the counters; the engine only copies its QPs' numbers,
 * so a scrape costs the data path one command.
 */
public final class MetricsEndpoint implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetricsEndpoint.class);
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Supplier<Telemetry> snapshot;
    private final Map<String, Double> counters = new ConcurrentHashMap<>();
    private final Map<String, MultiGauge> pathGauges = new HashMap<>();
    private volatile double qps;
    private final HttpServer http;

    public MetricsEndpoint(InetSocketAddress bind, Supplier<Telemetry> snapshot) throws IOException {
        this.snapshot = snapshot;
        Gauge.builder("mrce.qps", this, m -> m.qps)
                .description("active queue pairs")
                .register(registry);
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
        update(snapshot.get());
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

    private void update(Telemetry t) {
        // Every group of daemon-wide counters: transport ("counters"), ud, loopback, port.
        for (Telemetry.Group g : t.groups()) {
            counterGroup(g, "counters".equals(g.name()) ? "mrce.transport." : "mrce." + snake(g.name()) + ".");
        }
        qps = t.qps().size();
        Map<String, List<MultiGauge.Row<?>>> rows = new HashMap<>();
        for (Telemetry.QpRow qp : t.qps()) {
            String qpn = Integer.toString(qp.qpn());
            for (Telemetry.PathRow path : qp.paths()) {
                Tags tags = Tags.of("qpn", qpn, "path", Integer.toString(path.id()));
                for (int k = 0; k < Telemetry.PATH_KEYS.size(); k++) {
                    rows.computeIfAbsent(Telemetry.PATH_KEYS.get(k), x -> new ArrayList<>())
                            .add(MultiGauge.Row.of(tags, path.values()[k]));
                }
            }
        }
        for (Map.Entry<String, List<MultiGauge.Row<?>>> e : rows.entrySet()) {
            pathGauges
                    .computeIfAbsent(
                            e.getKey(),
                            k -> MultiGauge.builder("mrce.path." + snake(k))
                                    .description("per-path telemetry: " + k)
                                    .register(registry))
                    .register(e.getValue(), true);
        }
        for (Map.Entry<String, MultiGauge> e : pathGauges.entrySet()) {
            if (!rows.containsKey(e.getKey())) {
                e.getValue().register(List.of(), true);
            }
        }
    }

    private void counterGroup(Telemetry.Group group, String prefix) {
        for (int i = 0; i < group.keys().size(); i++) {
            String key = prefix + snake(group.keys().get(i));
            if (counters.put(key, (double) group.values()[i]) == null) {
                FunctionCounter.builder(key, counters, m -> m.getOrDefault(key, 0.0))
                        .register(registry);
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
