package io.metaroce.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A 16-byte GID ({@code union ibv_gid}), in network byte order as the verbs hold it. On RoCEv2
 * (and MetaRoCE) an IPv4 address appears IPv4-mapped: {@code ::ffff:198.18.0.1}.
 *
 * <p>Immutable, thread-safe.
 */
public final class Gid {

    /** The all-zero GID (what ibv_rc_pingpong sends when no -g is given). */
    public static final Gid ZERO = new Gid(new byte[16]);

    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    /** A GID from its 16 raw bytes (copied). */
    public static Gid of(byte[] raw) {
        if (raw.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + raw.length);
        }
        return new Gid(raw.clone());
    }

    /** The IPv4-mapped GID of an IPv4 address, or the GID of an IPv6 address. */
    public static Gid of(InetAddress addr) {
        byte[] a = addr.getAddress();
        if (a.length == 16) {
            return new Gid(a);
        }
        byte[] g = new byte[16];
        g[10] = (byte) 0xff;
        g[11] = (byte) 0xff;
        System.arraycopy(a, 0, g, 12, 4);
        return new Gid(g);
    }

    static Gid read(MemorySegment s, long offset) {
        return new Gid(s.asSlice(offset, 16).toArray(ValueLayout.JAVA_BYTE));
    }

    void write(MemorySegment s, long offset) {
        MemorySegment.copy(raw, 0, s, ValueLayout.JAVA_BYTE, offset, 16);
    }

    /** The 16 bytes (a copy). */
    public byte[] bytes() {
        return raw.clone();
    }

    /**
     * The wire form of ibv_rc_pingpong ({@code gid_to_wire_gid}): 32 lower-case hex digits, the
     * bytes in order.
     */
    public String toWire() {
        return HexFormat.of().formatHex(raw);
    }

    /** Parses {@link #toWire()}'s form (32 hex digits). */
    public static Gid fromWire(String hex) {
        if (hex.length() != 32) {
            throw new IllegalArgumentException("a wire GID has 32 hex digits: \"" + hex + "\"");
        }
        return new Gid(HexFormat.of().parseHex(hex));
    }

    /** The interface id (the low 8 bytes); ibv_rc_pingpong uses the GRH only when it is non-zero. */
    public long interfaceId() {
        long v = 0;
        for (int i = 8; i < 16; i++) {
            v = (v << 8) | (raw[i] & 0xff);
        }
        return v;
    }

    public boolean isZero() {
        for (byte b : raw) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    /** The GID as an IPv6 address text, as ibv_rc_pingpong prints it ({@code inet_ntop}). */
    @Override
    public String toString() {
        try {
            InetAddress a = InetAddress.getByAddress(raw);
            if (raw[10] == (byte) 0xff && raw[11] == (byte) 0xff && isPrefixZero()) {
                return "::ffff:" + (raw[12] & 0xff) + "." + (raw[13] & 0xff) + "." + (raw[14] & 0xff) + "."
                        + (raw[15] & 0xff);
            }
            return a.getHostAddress();
        } catch (UnknownHostException e) {
            return toWire();
        }
    }

    private boolean isPrefixZero() {
        for (int i = 0; i < 10; i++) {
            if (raw[i] != 0) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }
}
