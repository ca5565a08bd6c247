package io.metaroce.control;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Builds request frames the way the provider does. */
final class Frames {

    private Frames() {}

    static byte[] frame(int len, int op, int status, int seq, int nfds, byte[] payload) {
        ByteBuffer b = ByteBuffer.allocate(ControlProtocol.HEADER_SIZE + payload.length)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(len)
                .putShort((short) op)
                .putShort((short) status)
                .putInt(seq)
                .putShort((short) nfds)
                .putShort((short) 0)
                .put(payload);
        return b.array();
    }

    static byte[] request(int op, int seq, byte[] payload) {
        return frame(ControlProtocol.HEADER_SIZE + payload.length, op, 0, seq, 0, payload);
    }

    /** A valid request of {@code op} whose payload bytes are 1, 2, 3 ... */
    static byte[] request(int op, int seq) {
        return request(op, seq, pattern(ControlProtocol.requestSize(op), seq));
    }

    static byte[] hello(int seq) {
        return request(
                ControlProtocol.OP_HELLO,
                seq,
                ByteBuffer.allocate(8)
                        .order(ByteOrder.LITTLE_ENDIAN)
                        .putInt(ControlProtocol.ABI_VERSION)
                        .array());
    }

    static byte[] pattern(int size, int salt) {
        byte[] p = new byte[size];
        for (int i = 0; i < size; i++) {
            p[i] = (byte) (i * 7 + salt);
        }
        return p;
    }

    static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] all = new byte[n];
        int off = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, all, off, p.length);
            off += p.length;
        }
        return all;
    }
}
