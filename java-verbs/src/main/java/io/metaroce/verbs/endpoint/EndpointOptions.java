package io.metaroce.verbs.endpoint;

import io.metaroce.verbs.AccessFlag;
import io.metaroce.verbs.cm.ConnectOptions;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

/**
 * How an {@link Endpoint} is built and connected. Immutable, thread-safe; start from
 * {@link #defaults()} and change fields with the {@code with*} methods.
 *
 * @param connect port, GID index, MTU, first PSN, RC parameters (ack timeout, retries, RDMA READ
 *     depth) and the application's private data (at most {@link #MAX_PRIVATE_DATA} bytes here:
 *     the endpoint adds its own header)
 * @param sendDepth send queue depth: sends, RDMA WRITEs and READs in flight at once, each with its
 *     own registered buffer of {@code messageSize} bytes (a caller beyond it waits)
 * @param recvDepth receives kept posted, each a registered buffer of {@code messageSize} bytes:
 *     the peer may have this many messages in flight toward this side (told to it at connect)
 * @param messageSize the largest message, RDMA WRITE or READ in bytes
 * @param exposedSize bytes of registered memory the peer may READ/WRITE (0: none), see
 *     {@link Endpoint#exposedRegion()} and the peer's {@link Endpoint#remoteBuffer()}
 * @param exposedAccess the remote access to it ({@code REMOTE_READ}, {@code REMOTE_WRITE},
 *     {@code REMOTE_ATOMIC}); {@code LOCAL_WRITE} is always added
 * @param timeout how long a connect waits for the peer's answer (and the default for an accept)
 */
public record EndpointOptions(
        ConnectOptions connect,
        int sendDepth,
        int recvDepth,
        int messageSize,
        long exposedSize,
        Set<AccessFlag> exposedAccess,
        Duration timeout) {

    /** Bytes of the connection's private data the endpoint uses (its {@link RemoteBuffer} and receive depth). */
    public static final int HEADER = RemoteBuffer.WIRE_SIZE + 4;

    /** Most bytes of application private data. */
    public static final int MAX_PRIVATE_DATA = ConnectOptions.MAX_PRIVATE_DATA - HEADER;

    public EndpointOptions {
        if (connect == null) {
            throw new IllegalArgumentException("connect options are required");
        }
        if (sendDepth < 1 || sendDepth > 16384 || recvDepth < 1 || recvDepth > 16384) {
            throw new IllegalArgumentException("sendDepth and recvDepth 1..16384: " + sendDepth + ", " + recvDepth);
        }
        if (messageSize < 1 || messageSize > (1 << 30)) {
            throw new IllegalArgumentException("messageSize 1..2^30: " + messageSize);
        }
        if (exposedSize < 0) {
            throw new IllegalArgumentException("negative exposedSize " + exposedSize);
        }
        exposedAccess = exposedAccess == null || exposedAccess.isEmpty()
                ? EnumSet.noneOf(AccessFlag.class)
                : EnumSet.copyOf(exposedAccess);
        exposedAccess = Set.copyOf(exposedAccess);
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        if (connect.privateData().length > MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data of " + connect.privateData().length
                    + " bytes; an endpoint carries at most " + MAX_PRIVATE_DATA);
        }
    }

    /**
     * GID index 0 (RoCE), MTU 1024, a random PSN, ibv_rc_pingpong's RC parameters, 16 sends and
     * 16 receives of 4096 bytes, nothing exposed, a 10 s connect timeout.
     */
    public static EndpointOptions defaults() {
        return new EndpointOptions(ConnectOptions.defaults(0), 16, 16, 4096, 0, Set.of(), Duration.ofSeconds(10));
    }

    public EndpointOptions withConnect(ConnectOptions c) {
        return new EndpointOptions(c, sendDepth, recvDepth, messageSize, exposedSize, exposedAccess, timeout);
    }

    /** The RC parameters (ack timeout, retries, READ/atomic depth) of the connection. */
    public EndpointOptions withRc(ConnectOptions.RcParameters rc) {
        return withConnect(connect.withRc(rc));
    }

    /** The application's private data, sent with the request or the accept (at most {@link #MAX_PRIVATE_DATA} bytes). */
    public EndpointOptions withPrivateData(byte[] data) {
        return withConnect(connect.withPrivateData(data));
    }

    public EndpointOptions withDepths(int send, int recv) {
        return new EndpointOptions(connect, send, recv, messageSize, exposedSize, exposedAccess, timeout);
    }

    public EndpointOptions withMessageSize(int size) {
        return new EndpointOptions(connect, sendDepth, recvDepth, size, exposedSize, exposedAccess, timeout);
    }

    /** Exposes {@code size} bytes to the peer with {@code access} (e.g. {@code EnumSet.of(REMOTE_READ, REMOTE_WRITE)}). */
    public EndpointOptions withExposed(long size, Set<AccessFlag> access) {
        return new EndpointOptions(connect, sendDepth, recvDepth, messageSize, size, access, timeout);
    }

    public EndpointOptions withTimeout(Duration t) {
        return new EndpointOptions(connect, sendDepth, recvDepth, messageSize, exposedSize, exposedAccess, t);
    }

    /** The private data on the wire: {@code local}'s RemoteBuffer, the receive depth (u32 big-endian), then the application's. */
    byte[] wirePrivateData(RemoteBuffer local) {
        byte[] user = connect.privateData();
        byte[] w = new byte[HEADER + user.length];
        System.arraycopy(local.toBytes(), 0, w, 0, RemoteBuffer.WIRE_SIZE);
        int o = RemoteBuffer.WIRE_SIZE;
        w[o] = (byte) (recvDepth >>> 24);
        w[o + 1] = (byte) (recvDepth >>> 16);
        w[o + 2] = (byte) (recvDepth >>> 8);
        w[o + 3] = (byte) recvDepth;
        System.arraycopy(user, 0, w, HEADER, user.length);
        return w;
    }

    /** What the peer sent: its buffer, its receive depth and its application data. */
    record PeerHeader(RemoteBuffer buffer, int recvDepth, byte[] privateData) {
        static PeerHeader parse(byte[] w) {
            if (w.length < HEADER) {
                throw new IllegalArgumentException("the peer's private data has " + w.length + " bytes, fewer than an"
                        + " endpoint's " + HEADER + "-byte header: is the peer an Endpoint?");
            }
            RemoteBuffer b = RemoteBuffer.fromBytes(w, 0);
            int o = RemoteBuffer.WIRE_SIZE;
            int depth = (w[o] & 0xff) << 24 | (w[o + 1] & 0xff) << 16 | (w[o + 2] & 0xff) << 8 | (w[o + 3] & 0xff);
            if (depth < 1) {
                throw new IllegalArgumentException("the peer announced a receive depth of " + depth);
            }
            return new PeerHeader(b, depth, java.util.Arrays.copyOfRange(w, HEADER, w.length));
        }
    }
}
