package io.metaroce.bench;

import io.metaroce.nic.engine.EngineAgent;
import java.util.List;

/**
 * A transport the benchmark can run: how to set an engine up for it, and what it tells about its
 * paths. Main has one transport today (the walking skeleton's one-path RC); the multipath
 * transport and the go-back-N baseline join here when they land.
 */
public interface TransportMode {

    String name();

    /** Configures a fresh engine, before any QP exists. */
    void configure(EngineAgent engine);

    /**
     * Whether the engine currently holds any path as dead (or suspect, if the transport only has
     * that); false when the transport keeps no path states. Polled every step after a path is
     * black-holed to measure detection time.
     */
    boolean anyPathDown(EngineAgent engine);

    /** Whether {@link #anyPathDown} means something for this transport (else detection is "n/a"). */
    boolean exposesPathStates();

    /** The one-path transport of the walking skeleton: every packet on entropy 0. */
    TransportMode SKELETON = new TransportMode() {
        @Override
        public String name() {
            return "skeleton";
        }

        @Override
        public void configure(EngineAgent engine) {
            // nothing to choose: one transport
        }

        @Override
        public boolean anyPathDown(EngineAgent engine) {
            return false;
        }

        @Override
        public boolean exposesPathStates() {
            return false;
        }
    };

    /** Every transport in this build, in the order the table shows them (the first is the base). */
    static List<TransportMode> available() {
        return List.of(SKELETON);
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
