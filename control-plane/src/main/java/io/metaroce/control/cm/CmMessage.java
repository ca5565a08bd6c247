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

    int type();

    /** First message on a connection, both ways. */
    record Hello(int version, int capabilities, long bootId, int dataPort, int heartbeatMs) implements CmMessage {
        public int type() {
            return TYPE_HELLO;
        }
    }

    /**
     * One QP's half of a connection: {@code qpn} wants to talk to {@code peerQpn}. {@code token}
     * is what the sender of this message requires in every data packet sent to {@code qpn};
     * {@code entropies} are the UDP source ports of its paths.
     */
    record Endpoint(int qpn, int peerQpn, int mtu, int window, int startPsn, int token, int[] entropies) {
        public Endpoint {
            entropies = entropies.clone();
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
            return o instanceof Endpoint e && qpn == e.qpn && peerQpn == e.peerQpn && mtu == e.mtu
                    && window == e.window && startPsn == e.startPsn && token == e.token
                    && java.util.Arrays.equals(entropies, e.entropies);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(qpn, peerQpn, mtu, window, startPsn, token)
                    + 31 * java.util.Arrays.hashCode(entropies);
        }

        @Override
        public String toString() {
            return "Endpoint[qpn=" + qpn + ", peerQpn=" + peerQpn + ", mtu=" + mtu + ", window=" + window
                    + ", startPsn=" + startPsn + ", paths=" + entropies.length + "]";
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

    /** {@code qpn} (the sender's) no longer talks to {@code peerQpn}. */
    record Disconnect(int qpn, int peerQpn, int reason) implements CmMessage {
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
}
