package io.metaroce.nic.port;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Packet I/O for the engine: one UDP-payload frame at a time in, batches out. A port is driven by
 * the engine thread only.
 */
public interface Port extends AutoCloseable {

    /** Receives what a frame handler gets; the frame memory is valid until the next {@link #poll}. */
    interface FrameHandler {
        /**
         * @param frame the frame, exactly {@code length} bytes from offset 0
         * @param view a ByteBuffer over the same bytes (position 0, limit length), for CRC32C
         * @param ecn the ECN field of the frame's IP header (0..3, {@link Port#ECN_CE} = congestion
         *     experienced); 0 when the port cannot read it ({@link Port#readsEcn()})
         */
        void onFrame(MemorySegment frame, ByteBuffer view, int length, int srcIp, int srcPort, int ecn);
    }

    /** ECN codepoint "congestion experienced" (RFC 3168). */
    int ECN_CE = 3;

    /** Whether received frames report the ECN field of their IP header. */
    default boolean readsEcn() {
        return false;
    }

    /** Receives up to a batch of frames and hands each to {@code handler}; returns the count. */
    int poll(FrameHandler handler);

    /**
     * A buffer for the next outgoing frame, {@link #maxFrame()} bytes; call {@link #commit} to queue
     * it. Flushes the batch first when it is full. A buffer claimed and not committed is handed out
     * again by the next claim (the engine's loopback relies on it).
     */
    MemorySegment claim();

    /** The ByteBuffer view of the buffer the last {@link #claim} returned. */
    ByteBuffer claimedView();

    /**
     * Queues the claimed frame, {@code length} bytes, to {@code dstIp:dstPort}. {@code entropy}
     * (0..65535) names the path: frames with the same entropy take the same route through an ECMP
     * fabric (a UDP port sends them from the source port it maps the entropy to; a simulated fabric
     * picks the link from it), frames with different entropy may take different routes. Frames
     * leave in the order they were committed (the transport's cross-path loss detection relies
     * on it).
     */
    void commit(int length, int dstIp, int dstPort, int entropy);

    /**
     * How many frames the transport should commit to one path (one entropy, one destination)
     * back to back when it has that many to send: a port that hands the kernel such a run as one
     * buffer (the UDP port's GSO) spends less per frame. 1: no gain (the default).
     */
    default int sendBurst() {
        return 1;
    }

    /** Sends every queued frame; returns how many went out. */
    int flush();

    int maxFrame();

    /** The local IPv4 address (host order) and UDP port. */
    int localIp();

    int localPort();

    /** A file descriptor that polls readable when frames wait, or -1. */
    int fd();

    /**
     * Every file descriptor that polls readable when frames wait, one per receive queue (an AF_XDP
     * port has a socket per queue); empty when the port has none. The idle engine sleeps on all.
     */
    default int[] fds() {
        int fd = fd();
        return fd < 0 ? new int[0] : new int[] {fd};
    }

    PortCounters counters();

    /**
     * The network planes this port sends over (docs/spec/transport.md, "Multi-plane QPs"): 1 for a
     * port on one interface; a {@link PlanePort} sends a frame out of plane {@code entropy mod
     * planes()}.
     */
    default int planes() {
        return 1;
    }

    /** The frame counters of plane {@code plane} (0 .. {@link #planes()} - 1). */
    default PortCounters planeCounters(int plane) {
        return counters();
    }

    @Override
    void close();
}
