package io.metaroce.verbs;

import java.util.Optional;

/**
 * Facts about the binding itself.
 *
 * <p>Stateless; thread-safe.
 */
public final class Verbs {

    private Verbs() {}

    /** True when libibverbs.so.1 could be loaded (no devices are needed). */
    public static boolean available() {
        return Native.available();
    }

    /**
     * The path of the shared object whose definition of {@code symbol} (e.g.
     * {@code "ibv_open_device"}) the binding calls: {@code .../libmetaroce.so} when MetaRoCE is
     * preloaded, {@code .../libibverbs.so.1} otherwise. Empty when no object defines it.
     */
    public static Optional<String> definingObject(String symbol) {
        return Native.definingObject(symbol);
    }
}
