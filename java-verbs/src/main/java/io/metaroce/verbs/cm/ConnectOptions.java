package io.metaroce.verbs.cm;

import io.metaroce.verbs.Mtu;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * How to connect an RC queue pair: local port, GID index (-1: none, LID routing, as
 * ibv_rc_pingpong without -g), path MTU, service level, the first PSN to send, and the private
 * data a {@link ConnectionService} that supports it sends with the request or the accept (at most
 * {@link #MAX_PRIVATE_DATA} bytes; empty by default).
 */
public record ConnectOptions(int port, int gidIndex, Mtu mtu, int sl, int psn, byte[] privateData) {

    /** Most private-data bytes a request, accept or reject carries (rdma_cm's REQ limit is 56; ours 192). */
    public static final int MAX_PRIVATE_DATA = 192;

    private static final SecureRandom RANDOM = new SecureRandom();

    public ConnectOptions {
        privateData = checkPrivateData(privateData);
    }

    /** No private data. */
    public ConnectOptions(int port, int gidIndex, Mtu mtu, int sl, int psn) {
        this(port, gidIndex, mtu, sl, psn, new byte[0]);
    }

    /** Port 1, the given GID index, MTU 1024, SL 0, a random 24-bit PSN. */
    public static ConnectOptions defaults(int gidIndex) {
        return new ConnectOptions(1, gidIndex, Mtu.MTU_1024, 0, randomPsn());
    }

    public ConnectOptions withMtu(Mtu m) {
        return new ConnectOptions(port, gidIndex, m, sl, psn, privateData);
    }

    public ConnectOptions withPort(int p) {
        return new ConnectOptions(p, gidIndex, mtu, sl, psn, privateData);
    }

    public ConnectOptions withSl(int s) {
        return new ConnectOptions(port, gidIndex, mtu, s, psn, privateData);
    }

    /** The same options with {@code data} (copied; at most {@link #MAX_PRIVATE_DATA} bytes) as private data. */
    public ConnectOptions withPrivateData(byte[] data) {
        return new ConnectOptions(port, gidIndex, mtu, sl, psn, data);
    }

    /** The private data (a copy). */
    @Override
    public byte[] privateData() {
        return privateData.clone();
    }

    public static int randomPsn() {
        return RANDOM.nextInt() & 0xffffff;
    }

    static byte[] checkPrivateData(byte[] data) {
        if (data == null) {
            return new byte[0];
        }
        if (data.length > MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data of " + data.length + " bytes; at most " + MAX_PRIVATE_DATA);
        }
        return data.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnectOptions c && port == c.port && gidIndex == c.gidIndex && mtu == c.mtu && sl == c.sl
                && psn == c.psn && Arrays.equals(privateData, c.privateData);
    }

    @Override
    public int hashCode() {
        return ((port * 31 + gidIndex) * 31 + mtu.hashCode()) * 31 + sl * 7 + psn + Arrays.hashCode(privateData);
    }

    @Override
    public String toString() {
        return "ConnectOptions[port=" + port + ", gidIndex=" + gidIndex + ", mtu=" + mtu + ", sl=" + sl + ", psn=" + psn
                + ", privateData=" + privateData.length + " bytes]";
    }
}
