package io.metaroce.nic.port.xdp;

/**
 * Resolves an IPv4 destination to its L2 header (route, source address, next-hop MAC). The
 * daemon's implementation reads the kernel's routing and neighbour tables (netlink); tests use
 * {@link StaticL2Resolver}. Called on the engine thread for every frame sent: an implementation answers from its own table without allocating
 * and starts a resolution in the background when it has no answer yet.
 */
public interface L2Resolver {
    /** Fills {@code out} and returns true, or returns false when the destination is unresolved. */
    boolean resolve(int dstIp, L2Header out);

    /** Bumped whenever an answer may have changed, so callers drop cached headers. */
    default long generation() {
        return 0;
    }
}
