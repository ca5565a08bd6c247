package io.metaroce.verbs.cm;

import io.metaroce.verbs.Mtu;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * How to connect an RC queue pair: local port, GID index (-1: none, LID routing, as
 * ibv_rc_pingpong without -g), path MTU, service level, the first PSN to send, the private
 * data a {@link ConnectionService} that supports it sends with the request or the accept (at most
 * {@link #MAX_PRIVATE_DATA} bytes; empty by default), and the RC parameters of the RTR and RTS
 * transitions ({@link RcParameters}: RDMA READ/atomic depth, ack timeout, retries; by default
 * ibv_rc_pingpong's). Immutable, thread-safe.
 */
public record ConnectOptions(int port, int gidIndex, Mtu mtu, int sl, int psn, byte[] privateData, RcParameters rc) {

    /**
     * The RC attributes {@link RcConnector#connect} sets: at RTR {@code max_dest_rd_atomic}
     * (incoming RDMA READs/atomics in flight) and {@code min_rnr_timer}; at RTS
     * {@code max_rd_atomic} (outgoing ones), {@code timeout} (the ack timeout, 4.096 us * 2^timeout;
     * 0: infinite), {@code retry_cnt} and {@code rnr_retry} (7: infinite). Checked against the
     * fields' ranges in verbs.h.
     */
    public record RcParameters(
            int maxRdAtomic, int maxDestRdAtomic, int timeout, int retryCount, int rnrRetry, int minRnrTimer) {

        /** ibv_rc_pingpong's: one READ/atomic each way, timeout 14 (about 67 ms), 7 retries, 7 RNR retries, RNR timer 12. */
        public static final RcParameters DEFAULTS = new RcParameters(1, 1, 14, 7, 7, 12);

        public RcParameters {
            range("maxRdAtomic", maxRdAtomic, 0, 255);
            range("maxDestRdAtomic", maxDestRdAtomic, 0, 255);
            range("timeout", timeout, 0, 31);
            range("retryCount", retryCount, 0, 7);
            range("rnrRetry", rnrRetry, 0, 7);
            range("minRnrTimer", minRnrTimer, 0, 31);
        }

        private static void range(String name, int v, int min, int max) {
            if (v < min || v > max) {
                throw new IllegalArgumentException(name + " " + v + " outside " + min + ".." + max);
            }
        }

        public RcParameters withTimeout(int t) {
            return new RcParameters(maxRdAtomic, maxDestRdAtomic, t, retryCount, rnrRetry, minRnrTimer);
        }

        public RcParameters withRetries(int retry, int rnr) {
            return new RcParameters(maxRdAtomic, maxDestRdAtomic, timeout, retry, rnr, minRnrTimer);
        }

        /** Outgoing and incoming RDMA READs/atomics in flight. */
        public RcParameters withRdAtomic(int outgoing, int incoming) {
            return new RcParameters(outgoing, incoming, timeout, retryCount, rnrRetry, minRnrTimer);
        }

        public RcParameters withMinRnrTimer(int t) {
            return new RcParameters(maxRdAtomic, maxDestRdAtomic, timeout, retryCount, rnrRetry, t);
        }
    }

    /** Most private-data bytes a request, accept or reject carries (rdma_cm's REQ limit is 56; ours 192). */
    public static final int MAX_PRIVATE_DATA = 192;

    private static final SecureRandom RANDOM = new SecureRandom();

    public ConnectOptions {
        privateData = checkPrivateData(privateData);
        if (rc == null) {
            rc = RcParameters.DEFAULTS;
        }
    }

    /** The default RC parameters. */
    public ConnectOptions(int port, int gidIndex, Mtu mtu, int sl, int psn, byte[] privateData) {
        this(port, gidIndex, mtu, sl, psn, privateData, RcParameters.DEFAULTS);
    }

    /** No private data, the default RC parameters. */
    public ConnectOptions(int port, int gidIndex, Mtu mtu, int sl, int psn) {
        this(port, gidIndex, mtu, sl, psn, new byte[0]);
    }

    /** Port 1, the given GID index, MTU 1024, SL 0, a random 24-bit PSN. */
    public static ConnectOptions defaults(int gidIndex) {
        return new ConnectOptions(1, gidIndex, Mtu.MTU_1024, 0, randomPsn());
    }

    public ConnectOptions withMtu(Mtu m) {
        return new ConnectOptions(port, gidIndex, m, sl, psn, privateData, rc);
    }

    public ConnectOptions withPort(int p) {
        return new ConnectOptions(p, gidIndex, mtu, sl, psn, privateData, rc);
    }

    public ConnectOptions withSl(int s) {
        return new ConnectOptions(port, gidIndex, mtu, s, psn, privateData, rc);
    }

    /** The same options with {@code data} (copied; at most {@link #MAX_PRIVATE_DATA} bytes) as private data. */
    public ConnectOptions withPrivateData(byte[] data) {
        return new ConnectOptions(port, gidIndex, mtu, sl, psn, data, rc);
    }

    /** The same options with these RC parameters. */
    public ConnectOptions withRc(RcParameters parameters) {
        return new ConnectOptions(port, gidIndex, mtu, sl, psn, privateData, parameters);
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
            throw new IllegalArgumentException(
                    "private data of " + data.length + " bytes; at most " + MAX_PRIVATE_DATA);
        }
        return data.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnectOptions c
                && port == c.port
                && gidIndex == c.gidIndex
                && mtu == c.mtu
                && sl == c.sl
                && psn == c.psn
                && Arrays.equals(privateData, c.privateData)
                && rc.equals(c.rc);
    }

    @Override
    public int hashCode() {
        return ((port * 31 + gidIndex) * 31 + mtu.hashCode()) * 31
                + sl * 7
                + psn
                + Arrays.hashCode(privateData)
                + 31 * rc.hashCode();
    }

    @Override
    public String toString() {
        return "ConnectOptions[port=" + port + ", gidIndex=" + gidIndex + ", mtu=" + mtu + ", sl=" + sl + ", psn=" + psn
                + ", privateData=" + privateData.length + " bytes, rc=" + rc + "]";
    }
}
