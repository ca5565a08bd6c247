package io.metaroce.nic.sim;

/**
 * Picks the link of a frame, as an ECMP switch would: a pure function of the frame's addresses and
 * entropy (its UDP source port on a real network), so one path always takes one link.
 */
@FunctionalInterface
public interface LinkSelector {

    /** Returns a link index in {@code [0, links)}. */
    int link(int srcIp, int dstIp, int dstPort, int entropy, int links);

    /** ECMP-like: a hash of the 4-tuple, modulo the link count; paths may collide, like in life. */
    LinkSelector HASH = LinkSelector::hash;

    /** Aims at a link: {@code entropy mod links}, for tests and benchmarks that want no collision. */
    LinkSelector ENTROPY_MOD = (srcIp, dstIp, dstPort, entropy, links) -> entropy % links;

    static int hash(int srcIp, int dstIp, int dstPort, int entropy, int links) {
        long h = srcIp * 0x9E3779B97F4A7C15L;
        h = (h ^ dstIp) * 0xBF58476D1CE4E5B9L;
        h = (h ^ ((long) dstPort << 16 | entropy)) * 0x94D049BB133111EBL;
        h ^= h >>> 31;
        return (int) Long.remainderUnsigned(h, links);
    }
}
