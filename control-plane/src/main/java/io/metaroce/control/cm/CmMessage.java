package io.metaroce.control.cm;

/**
 * The messages daemons exchange over the connection manager's TCP connection
 * (docs/spec/connection-manager.md). Every field is validated by {@link CmCodec} before a message
 * object exists.
 */
public sealed interface CmMessage {
    int TYPE_HELLO = 1;
    int TYPE_CONNECT = 2;
    int TYPE_ACCEPT = 3;
    int TYPE_REJECT = 4;
    int TYPE_DISCONNECT = 5;
    int TYPE_PING = 6;
    int TYPE_PONG = 7;
    int TYPE_SVC_REQUEST = 8;
    int TYPE_SVC_REPLY = 9;
    int TYPE_SVC_REJECT = 10;
    int TYPE_SVC_READY = 11;
    int TYPE_SVC_CANCEL = 12;
    /** Authentication with the cluster secret (connection-manager.md section 8), far from the others. */
    int TYPE_AUTH_CHALLENGE = 32;

    int TYPE_AUTH_PROOF = 33;

    /** HELLO capability: the sender holds a cluster secret and authenticates (section 8). */
    int CAP_AUTH = 1;

    /** Most private-data bytes a service message carries. */
    int SVC_PRIVATE_DATA_MAX = 192;

    /** Reasons of {@link SvcReject} and {@link SvcCancel}. */
    int SVC_REJECTED = 1;

    int SVC_NO_LISTENER = 2;
    int SVC_LISTENER_GONE = 3;
    int SVC_BUSY = 4;
    int SVC_TIMEOUT = 5;
    int SVC_CANCELLED = 6;

    int type();

    /**
     * First message on a connection, both ways. {@code servedIp} (host-order IPv4) is the address
     * the sending daemon serves: the receiver checks that the connection comes from it.
     */
    record Hello(int version, int capabilities, long bootId, int dataPort, int heartbeatMs, int servedIp)
            implements CmMessage {
        public int type() {
            return TYPE_HELLO;
        }
    }

    /**
     * One QP's half of a connection: {@code qpn} wants to talk to {@code peerQpn}. {@code token}
     * is what the sender of this message requires in every data packet sent to {@code qpn};
     * {@code entropies} are the UDP source ports of its paths; {@code linkMtu} is the MTU of the
     * sender's link (0: not said), so that neither side sends packets the other's link drops.
     */
    record Endpoint(int qpn, int peerQpn, int mtu, int window, int startPsn, int token, int[] entropies, int linkMtu) {
        public Endpoint {
            entropies = entropies.clone();
        }

        public Endpoint(int qpn, int peerQpn, int mtu, int window, int startPsn, int token, int[] entropies) {
            this(qpn, peerQpn, mtu, window, startPsn, token, entropies, 0);
        }

        @Override
        public int[] entropies() {
            return entropies.clone();
        }

        public int paths() {
            return entropies.length;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Endpoint e
                    && qpn == e.qpn
                    && peerQpn == e.peerQpn
                    && mtu == e.mtu
                    && window == e.window
                    && startPsn == e.startPsn
                    && token == e.token
                    && linkMtu == e.linkMtu
                    && java.util.Arrays.equals(entropies, e.entropies);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(qpn, peerQpn, mtu, window, startPsn, token, linkMtu)
                    + 31 * java.util.Arrays.hashCode(entropies);
        }

        @Override
        public String toString() {
            return "Endpoint[qpn=" + qpn + ", peerQpn=" + peerQpn + ", mtu=" + mtu + ", window=" + window
                    + ", startPsn=" + startPsn + ", paths=" + entropies.length + ", linkMtu=" + linkMtu + "]";
        }
    }

    record Connect(int requestId, Endpoint endpoint) implements CmMessage {
        public int type() {
            return TYPE_CONNECT;
        }
    }

    record Accept(int requestId, Endpoint endpoint) implements CmMessage {
        public int type() {
            return TYPE_ACCEPT;
        }
    }

    /** Reasons of {@link Reject} and {@link Disconnect}. */
    int REASON_NO_QP = 1;

    int REASON_MISMATCH = 2;
    int REASON_BAD_STATE = 3;
    int REASON_DESTROYED = 4;
    int REASON_ERROR = 5;
    int REASON_SHUTDOWN = 6;
    int REASON_TIMEOUT = 7;

    record Reject(int requestId, int qpn, int peerQpn, int reason) implements CmMessage {
        public int type() {
            return TYPE_REJECT;
        }
    }

    /**
     * {@code qpn} (the sender's) no longer talks to {@code peerQpn}. {@code token} is the receive
     * token the sender's QP announced for that connection: it names the connection, so a late
     * DISCONNECT never hits a newer connection between QPs that reuse the same numbers. With
     * {@link #FLAG_PLACED}, every request of the receiver's QP below RSN {@code placedRsn} was
     * placed by the sender's QP before it went away: a last cumulative ACK.
     */
    record Disconnect(int qpn, int peerQpn, int reason, int token, int flags, int placedRsn) implements CmMessage {
        public static final int FLAG_PLACED = 1;

        public Disconnect(int qpn, int peerQpn, int reason, int token) {
            this(qpn, peerQpn, reason, token, 0, 0);
        }

        public boolean placedKnown() {
            return (flags & FLAG_PLACED) != 0;
        }

        public int type() {
            return TYPE_DISCONNECT;
        }
    }

    record Ping(long sequence) implements CmMessage {
        public int type() {
            return TYPE_PING;
        }
    }

    record Pong(long sequence) implements CmMessage {
        public int type() {
            return TYPE_PONG;
        }
    }

    /**
     * The service handshake (connection-manager.md, "Service"): {@code requestId} is the
     * requester daemon's; {@code qpn}, {@code psn} and {@code gid} are what the requesting
     * application gives for its QP; {@code privateData} is 0..192 bytes.
     */
    record SvcRequest(int requestId, int serviceId, int qpn, int psn, byte[] gid, byte[] privateData)
            implements CmMessage {
        public SvcRequest {
            gid = gid.clone();
            privateData = checked(privateData);
        }

        @Override
        public byte[] gid() {
            return gid.clone();
        }

        @Override
        public byte[] privateData() {
            return privateData.clone();
        }

        public int type() {
            return TYPE_SVC_REQUEST;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof SvcRequest r
                    && requestId == r.requestId
                    && serviceId == r.serviceId
                    && qpn == r.qpn
                    && psn == r.psn
                    && java.util.Arrays.equals(gid, r.gid)
                    && java.util.Arrays.equals(privateData, r.privateData);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(requestId, serviceId, qpn, psn) + 31 * java.util.Arrays.hashCode(privateData);
        }

        @Override
        public String toString() {
            return "SvcRequest[id=" + requestId + ", service=" + Integer.toUnsignedString(serviceId) + ", qpn=" + qpn
                    + ", psn=" + psn + ", privateData=" + privateData.length + " bytes]";
        }
    }

    /** The acceptor's answer: its QP's {@code qpn}, {@code psn}, {@code gid} and private data. */
    record SvcReply(int requestId, int qpn, int psn, byte[] gid, byte[] privateData) implements CmMessage {
        public SvcReply {
            gid = gid.clone();
            privateData = checked(privateData);
        }

        @Override
        public byte[] gid() {
            return gid.clone();
        }

        @Override
        public byte[] privateData() {
            return privateData.clone();
        }

        public int type() {
            return TYPE_SVC_REPLY;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof SvcReply r
                    && requestId == r.requestId
                    && qpn == r.qpn
                    && psn == r.psn
                    && java.util.Arrays.equals(gid, r.gid)
                    && java.util.Arrays.equals(privateData, r.privateData);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(requestId, qpn, psn) + 31 * java.util.Arrays.hashCode(privateData);
        }

        @Override
        public String toString() {
            return "SvcReply[id=" + requestId + ", qpn=" + qpn + ", psn=" + psn + ", privateData=" + privateData.length
                    + " bytes]";
        }
    }

    /** No connection: {@code reason} is one of the SVC_ reasons; private data only with {@link #SVC_REJECTED}. */
    record SvcReject(int requestId, int reason, byte[] privateData) implements CmMessage {
        public SvcReject {
            privateData = checked(privateData);
        }

        @Override
        public byte[] privateData() {
            return privateData.clone();
        }

        public int type() {
            return TYPE_SVC_REJECT;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof SvcReject r
                    && requestId == r.requestId
                    && reason == r.reason
                    && java.util.Arrays.equals(privateData, r.privateData);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(requestId, reason) + 31 * java.util.Arrays.hashCode(privateData);
        }

        @Override
        public String toString() {
            return "SvcReject[id=" + requestId + ", reason=" + reason + ", privateData=" + privateData.length
                    + " bytes]";
        }
    }

    /** The requester took the reply (the IB CM's RTU): the acceptor's accept completes. */
    record SvcReady(int requestId) implements CmMessage {
        public int type() {
            return TYPE_SVC_READY;
        }
    }

    /** The requester gave up on {@code requestId} (timeout, or its application went away). */
    record SvcCancel(int requestId, int reason) implements CmMessage {
        public int type() {
            return TYPE_SVC_CANCEL;
        }
    }

    /** The sender's fresh random nonce for this connection (section 8). */
    record AuthChallenge(byte[] nonce) implements CmMessage {
        public static final int NONCE_BYTES = 16;

        public AuthChallenge {
            if (nonce.length != NONCE_BYTES) {
                throw new IllegalArgumentException("nonce of " + nonce.length + " bytes");
            }
            nonce = nonce.clone();
        }

        @Override
        public byte[] nonce() {
            return nonce.clone();
        }

        public int type() {
            return TYPE_AUTH_CHALLENGE;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof AuthChallenge c && java.util.Arrays.equals(nonce, c.nonce);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(nonce);
        }

        @Override
        public String toString() {
            return "AuthChallenge";
        }
    }

    /** HMAC-SHA256 over the sender's HELLO and both nonces, keyed with the cluster secret (section 8). */
    record AuthProof(byte[] mac) implements CmMessage {
        public static final int MAC_BYTES = 32;

        public AuthProof {
            if (mac.length != MAC_BYTES) {
                throw new IllegalArgumentException("MAC of " + mac.length + " bytes");
            }
            mac = mac.clone();
        }

        @Override
        public byte[] mac() {
            return mac.clone();
        }

        public int type() {
            return TYPE_AUTH_PROOF;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof AuthProof p && java.util.Arrays.equals(mac, p.mac);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(mac);
        }

        @Override
        public String toString() {
            return "AuthProof";
        }
    }

    private static byte[] checked(byte[] privateData) {
        if (privateData.length > SVC_PRIVATE_DATA_MAX) {
            throw new IllegalArgumentException(
                    "private data of " + privateData.length + " bytes (at most " + SVC_PRIVATE_DATA_MAX + ")");
        }
        return privateData.clone();
    }
}
