package io.metaroce.verbs.cm;

import io.metaroce.verbs.Gid;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What two peers exchange to connect their queue pairs by hand: LID, QP number, first PSN and
 * GID. {@link #toWire()} is ibv_rc_pingpong's text form {@code "LLLL:QQQQQQ:PPPPPP:GGGG...G"}
 * ({@code "%04x:%06x:%06x:%s"}, the GID as 32 hex digits) sent as a 52-byte NUL-terminated
 * message, so Java and C peers interoperate.
 *
 * <p>Immutable, thread-safe.
 */
public record QpEndpoint(int lid, int qpn, int psn, Gid gid) {

    /** sizeof "0000:000000:000000:00000000000000000000000000000000" (with its NUL). */
    public static final int WIRE_SIZE = 52;

    public QpEndpoint {
        if (gid == null) {
            gid = Gid.ZERO;
        }
    }

    /** The 52-byte message: the text and a NUL (the text is 51 characters for 16-bit/24-bit values). */
    public byte[] toWire() {
        String text = String.format("%04x:%06x:%06x:%s", lid, qpn, psn, gid.toWire());
        byte[] b = text.getBytes(StandardCharsets.US_ASCII);
        if (b.length >= WIRE_SIZE) {
            throw new IllegalArgumentException("endpoint does not fit the wire format: " + text);
        }
        return Arrays.copyOf(b, WIRE_SIZE);
    }

    /** Parses a message as C's {@code sscanf(msg, "%x:%x:%x:%s")} + {@code wire_gid_to_gid} does. */
    public static QpEndpoint fromWire(byte[] msg) {
        int end = 0;
        while (end < msg.length && msg[end] != 0) {
            end++;
        }
        String text = new String(msg, 0, end, StandardCharsets.US_ASCII).strip();
        String[] f = text.split(":");
        if (f.length != 4) {
            throw new IllegalArgumentException("not an LID:QPN:PSN:GID message: \"" + text + "\"");
        }
        try {
            return new QpEndpoint(
                    Integer.parseUnsignedInt(f[0], 16),
                    Integer.parseUnsignedInt(f[1], 16),
                    Integer.parseUnsignedInt(f[2], 16),
                    Gid.fromWire(f[3]));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("bad LID:QPN:PSN:GID message \"" + text + "\": " + e.getMessage(), e);
        }
    }

    /** As ibv_rc_pingpong prints an address: {@code LID 0x0000, QPN 0x000011, PSN 0x3c1d2e, GID ::ffff:...}. */
    public String describe() {
        return String.format("LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", lid, qpn, psn, gid);
    }
}
