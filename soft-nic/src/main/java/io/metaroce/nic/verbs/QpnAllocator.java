package io.metaroce.nic.verbs;

import io.metaroce.nic.engine.EngineAgent;

/**
 * QP numbers: a QPN is a slot index of the engine's QP table (the low
 * {@link EngineAgent#QP_INDEX_BITS} bits) and a generation above it; also counts the device's QPs
 * against max_qp. Guarded by itself.
 */
final class QpnAllocator {
    /** A slot's generations: the 24-bit QPN's bits above the slot index (1..1023). */
    private static final int QP_GENERATIONS = (1 << (24 - EngineAgent.QP_INDEX_BITS)) - 1;

    private final short[] qpGeneration = new short[EngineAgent.MAX_QP];
    private final boolean[] qpIndexUsed = new boolean[EngineAgent.MAX_QP];
    /** Draws QPNs' random bits (SecureRandom; a seeded one in tests, see identifierRandom). */
    private java.util.Random random = new java.security.SecureRandom();

    private final int maxQp;
    private int qpCount;

    QpnAllocator(int maxQp) {
        this.maxQp = maxQp;
    }

    /** Tests: QPNs from {@code r} instead of SecureRandom (null: sequential QPNs, as before). */
    synchronized void random(java.util.Random r) {
        this.random = r;
    }

    /** A free QPN (the device-wide QP count taken with it), or -1 when max_qp QPs exist or no index is free. */
    synchronized int allocate() {
        if (qpCount >= maxQp) {
            return -1;
        }
        // Unpredictable QPNs: a random free index and a random generation above it (1..0x3ff,
        // never the slot's previous one), so a QPN can be neither guessed nor reused at once.
        // (No random: the first free index and the slot's next generation, for tests whose
        // outcome depends on the QPNs, which pick the paths' entropies.)
        int start = random != null ? random.nextInt(EngineAgent.MAX_QP) : 0;
        for (int k = 0; k < EngineAgent.MAX_QP; k++) {
            int i = (start + k) & (EngineAgent.MAX_QP - 1);
            if (!qpIndexUsed[i]) {
                qpIndexUsed[i] = true;
                int gen;
                if (random == null) {
                    gen = (qpGeneration[i] % QP_GENERATIONS) + 1;
                } else {
                    do {
                        gen = 1 + random.nextInt(QP_GENERATIONS);
                    } while (gen == qpGeneration[i]);
                }
                qpGeneration[i] = (short) gen;
                qpCount++;
                return (gen << EngineAgent.QP_INDEX_BITS) | i;
            }
        }
        return -1;
    }

    /** Gives back {@code qpn} and its count; the slot keeps its generation. */
    synchronized void free(int qpn) {
        qpIndexUsed[qpn & (EngineAgent.MAX_QP - 1)] = false;
        qpCount--;
    }
}
