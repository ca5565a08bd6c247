package io.metaroce.bench;

import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.transport.TransportSettings;
import java.util.List;

/**
 * A transport the benchmark can run: how to set an engine up for it, and what it tells about its
 * paths: the go-back-N baseline (classic RoCE's behaviour) and MetaRoCE's multipath transport.
 */
public interface TransportMode {

    String name();

    /** The transport settings a fresh engine of this mode is built with, from the simulation's. */
    TransportSettings settings(TransportSettings base);

    /**
     * Whether the engine currently holds any path as dead (or suspect, if the transport only has
     * that); false when the transport keeps no path states. Polled every step after a path is
     * black-holed to measure detection time.
     */
    boolean anyPathDown(EngineAgent engine);

    /** Whether {@link #anyPathDown} means something for this transport (else detection is "n/a"). */
    boolean exposesPathStates();

    /** One path, cumulative ACKs, go-back-N, fixed RTO: stands for classic RoCE. */
    TransportMode BASELINE = new Engines("baseline", true);

    /** MetaRoCE: packets sprayed over the QP's paths, per-path PSNs, selective retransmission. */
    TransportMode METAROCE = new Engines("metaroce", false);

    /** The two transports of soft-nic's {@code Datapath}, chosen per engine. */
    record Engines(String name, boolean baseline) implements TransportMode {
        @Override
        public TransportSettings settings(TransportSettings base) {
            return base.withBaseline(baseline);
        }

        @Override
        public boolean anyPathDown(EngineAgent engine) {
            return engine.pathsDown() > 0;
        }

        @Override
        public boolean exposesPathStates() {
            return !baseline;
        }
    }

    /** Every transport in this build, in the order the table shows them (the first is the base). */
    static List<TransportMode> available() {
        return List.of(BASELINE, METAROCE);
    }

    static TransportMode named(String name) {
        for (TransportMode m : available()) {
            if (m.name().equals(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("transport '" + name + "' is not in this build; known: "
                + available().stream().map(TransportMode::name).toList());
    }
}
