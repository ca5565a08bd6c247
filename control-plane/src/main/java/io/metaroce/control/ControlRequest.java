package io.metaroce.control;

import java.nio.ByteBuffer;

/**
 * A request frame that passed validation: a known op, status 0, no fds, and a payload of exactly
 * that op's request size. The payload is the decoder's own little-endian heap copy, so it outlives
 * the network buffer and may be handed to another thread.
 */
record ControlRequest(int op, int seq, ByteBuffer payload) {}
