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
         */
        void onFrame(MemorySegment frame, ByteBuffer view, int length, int srcIp, int srcPort);
    }

    /** Receives up to a batch of frames and hands each to {@code handler}; returns the count. */
    int poll(FrameHandler handler);

    /**
     * A buffer for the next outgoing frame, {@link #maxFrame()} bytes; call {@link #commit} to queue
     * it. Flushes the batch first when it is full.
     */
    MemorySegment claim();

    /** The ByteBuffer view of the buffer the last {@link #claim} returned. */
    ByteBuffer claimedView();

    /** Queues the claimed frame, {@code length} bytes, to {@code dstIp:dstPort}. */
    void commit(int length, int dstIp, int dstPort);

    /** Sends every queued frame; returns how many went out. */
    int flush();

    int maxFrame();

    /** The local IPv4 address (host order) and UDP port. */
    int localIp();

    int localPort();

    /** A file descriptor that polls readable when frames wait, or -1. */
    int fd();

    PortCounters counters();

    @Override
    void close();
}
