package io.metaroce.control;

import io.netty.channel.unix.FileDescriptor;
import java.nio.ByteBuffer;

/**
 * A response on its way out: header fields, a little-endian payload copy (position to limit), and
 * the fds (already duplicated, owned by this response) that follow the frame as SCM_RIGHTS.
 */
record ControlResponse(int op, int seq, int status, ByteBuffer payload, FileDescriptor[] fds) {}
