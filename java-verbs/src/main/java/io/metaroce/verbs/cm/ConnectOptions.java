package io.metaroce.verbs.cm;

import io.metaroce.verbs.Mtu;
import java.security.SecureRandom;

/**
 * How to connect an RC queue pair: local port, GID index (-1: none, LID routing, as
 * ibv_rc_pingpong without -g), path MTU, service level and the first PSN to send.
 */
public record ConnectOptions(int port, int gidIndex, Mtu mtu, int sl, int psn) {

    private static final SecureRandom RANDOM = new SecureRandom();

    /** Port 1, the given GID index, MTU 1024, SL 0, a random 24-bit PSN. */
    public static ConnectOptions defaults(int gidIndex) {
        return new ConnectOptions(1, gidIndex, Mtu.MTU_1024, 0, randomPsn());
    }

    public ConnectOptions withMtu(Mtu m) {
        return new ConnectOptions(port, gidIndex, m, sl, psn);
    }

    public ConnectOptions withPort(int p) {
        return new ConnectOptions(p, gidIndex, mtu, sl, psn);
    }

    public ConnectOptions withSl(int s) {
        return new ConnectOptions(port, gidIndex, mtu, s, psn);
    }

    public static int randomPsn() {
        return RANDOM.nextInt() & 0xffffff;
    }
}
