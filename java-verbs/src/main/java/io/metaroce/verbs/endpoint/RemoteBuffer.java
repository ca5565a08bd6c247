package io.metaroce.verbs.endpoint;

import io.metaroce.verbs.MemoryRegion;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A buffer of the peer's that this side may RDMA READ or WRITE: its virtual address, length and
 * rkey. Endpoints exchange one each way in the connection's private data
 * ({@link #WIRE_SIZE} bytes, big-endian: address u64, length u64, rkey u32); an endpoint that
 * exposes nothing sends {@link #NONE}. Immutable, thread-safe.
 *
 * @param address the first byte's virtual address in the peer's process
 * @param length its length in bytes
 * @param rkey the remote key of the peer's memory region
 */
public record RemoteBuffer(long address, long length, int rkey) {

    /** Bytes on the wire. */
    public static final int WIRE_SIZE = 20;

    /** No buffer (length 0). */
    public static final RemoteBuffer NONE = new RemoteBuffer(0, 0, 0);

    public RemoteBuffer {
        if (length < 0) {
            throw new IllegalArgumentException("negative length " + length);
        }
    }

    /** The whole of {@code mr}, as its peer sees it. */
    public static RemoteBuffer of(MemoryRegion mr) {
        return new RemoteBuffer(mr.address(), mr.length(), mr.rkey());
    }

    /** True for {@link #NONE} (or any zero-length buffer). */
    public boolean isNone() {
        return length == 0;
    }

    /**
     * The bytes {@code [offset, offset + len)} of this buffer.
     *
     * @throws IndexOutOfBoundsException when they do not lie inside it
     */
    public RemoteBuffer slice(long offset, long len) {
        check(offset, len);
        return new RemoteBuffer(address + offset, len, rkey);
    }

    /** Throws IndexOutOfBoundsException unless {@code [offset, offset + len)} lies inside this buffer. */
    public void check(long offset, long len) {
        if (offset < 0 || len < 0 || offset > length - len) {
            throw new IndexOutOfBoundsException("bytes [" + offset + ", " + offset + " + " + len
                    + ") outside the peer's " + length + "-byte buffer (rkey 0x" + Integer.toHexString(rkey) + ")");
        }
    }

    /** The {@link #WIRE_SIZE}-byte form. */
    public byte[] toBytes() {
        ByteBuffer b = ByteBuffer.allocate(WIRE_SIZE).order(ByteOrder.BIG_ENDIAN);
        b.putLong(address).putLong(length).putInt(rkey);
        return b.array();
    }

    /**
     * Parses the {@link #WIRE_SIZE} bytes at {@code offset} of {@code b}.
     *
     * @throws IllegalArgumentException when fewer bytes are there or the length is negative
     */
    public static RemoteBuffer fromBytes(byte[] b, int offset) {
        if (offset < 0 || b.length - offset < WIRE_SIZE) {
            throw new IllegalArgumentException("a remote buffer takes " + WIRE_SIZE + " bytes; "
                    + Math.max(0, b.length - offset) + " at offset " + offset);
        }
        ByteBuffer w = ByteBuffer.wrap(b, offset, WIRE_SIZE).order(ByteOrder.BIG_ENDIAN);
        long address = w.getLong();
        long length = w.getLong();
        int rkey = w.getInt();
        if (length < 0) {
            throw new IllegalArgumentException("a remote buffer of negative length " + length);
        }
        return new RemoteBuffer(address, length, rkey);
    }

    @Override
    public String toString() {
        return String.format("RemoteBuffer[0x%x, %d bytes, rkey 0x%x]", address, length, rkey);
    }
}
