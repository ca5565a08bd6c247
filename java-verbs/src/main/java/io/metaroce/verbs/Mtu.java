package io.metaroce.verbs;

/**
 * Path MTUs ({@code enum ibv_mtu}).
 *
 * <p>Immutable, thread-safe.
 */
public enum Mtu {
    MTU_256(256, Abi.IBV_MTU_256),
    MTU_512(512, Abi.IBV_MTU_512),
    MTU_1024(1024, Abi.IBV_MTU_1024),
    MTU_2048(2048, Abi.IBV_MTU_2048),
    MTU_4096(4096, Abi.IBV_MTU_4096);

    private final int bytes;
    private final int value;

    Mtu(int bytes, int value) {
        this.bytes = bytes;
        this.value = value;
    }

    public int bytes() {
        return bytes;
    }

    /** The {@code enum ibv_mtu} value. */
    public int value() {
        return value;
    }

    /** The MTU of this many bytes (256, 512, 1024, 2048 or 4096). */
    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) {
            if (m.bytes == bytes) {
                return m;
            }
        }
        throw new IllegalArgumentException("no path MTU of " + bytes + " bytes (256, 512, 1024, 2048, 4096)");
    }

    /** The MTU of an {@code enum ibv_mtu} value, or null for an unknown value. */
    public static Mtu ofValue(int value) {
        for (Mtu m : values()) {
            if (m.value == value) {
                return m;
            }
        }
        return null;
    }
}
