package io.metaroce.verbs.netty;

/**
 * The credit-based flow control of an {@link RdmaChannel}: a sender only sends a message the
 * peer has a posted receive for, and a slow reader holds its sender back instead of piling up
 * messages (or RNR retries).
 *
 * <p>Every message starts with a 4-byte header (big-endian):
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-------------------------------+-------------------------------+
 * |  credits returned (u16)       |  credit messages seen (u16)   |
 * +-------------------------------+-------------------------------+
 * |  payload: the channel's bytes (none: a credit message) ...
 * </pre>
 *
 * <ul>
 *   <li>Each side keeps {@code recvDepth} receives posted and told the peer that number at
 *       connect. The peer may have {@code recvDepth - 1} data messages outstanding (its
 *       credits); the last receive is kept for one credit message.
 *   <li>A data message spends a credit. Its credit comes back once the receiving application has
 *       taken the message ({@code channelRead}), not when it arrived, so unread messages never
 *       exceed the credits: with auto-read off the sender stops, its outbound buffer fills and the
 *       channel turns unwritable.
 *   <li>Credits go back in the header of every message (piggybacked); when {@code threshold}
 *       ({@code (recvDepth - 1) / 2}, at least 1) are owed, a credit message (no payload) carries
 *       them. It takes the reserved receive, so at most one is outstanding: the next one waits
 *       until the peer's header counts it as seen. The peer handles a credit message as it
 *       arrives, whatever its reading, so the reserved receive is free again when its count says
 *       so.
 *   <li>Credits owed below the threshold wait for more reads or for the next data message: a
 *       pipeline that stops reading may hold a writer back with fewer than {@code recvDepth - 1}
 *       (at least {@code recvDepth - threshold}) messages unread here. A pipeline that goes on
 *       reading always frees it (all read means all owed, past the threshold).
 * </ul>
 *
 * <p><b>Thread safety:</b> confined to the channel's event loop.
 */
final class CreditFlow {

    /** Bytes of the header in front of every message. */
    static final int HEADER = 4;

    private final int window;
    private final int threshold;
    /** Data messages the peer has room for. */
    private int sendCredits;
    /** Data messages taken here whose credit has not gone back. */
    private int owed;
    /** Credit messages sent (mod 2^16). */
    private int creditMessagesSent;
    /** Credit messages received (mod 2^16), told back in every header. */
    private int creditMessagesReceived;
    /** The peer's count of our credit messages. */
    private int creditMessagesSeenByPeer;

    /**
     * @param recvDepth receives this side keeps posted
     * @param peerRecvDepth receives the peer keeps posted
     * @throws IllegalArgumentException when a depth is below 2 (one receive is kept for credit messages)
     */
    CreditFlow(int recvDepth, int peerRecvDepth) {
        if (recvDepth < 2 || peerRecvDepth < 2 || recvDepth > 0xffff || peerRecvDepth > 0xffff) {
            throw new IllegalArgumentException("an RDMA channel needs receive depths of 2..65535 on both sides (one"
                    + " receive is kept for credit messages): here " + recvDepth + ", the peer " + peerRecvDepth);
        }
        this.window = peerRecvDepth - 1;
        this.sendCredits = window;
        this.threshold = Math.max(1, (recvDepth - 1) / 2);
    }

    /** Whether the peer has room for a data message. */
    boolean canSendData() {
        return sendCredits > 0;
    }

    /** Data messages the peer has room for now. */
    int sendCredits() {
        return sendCredits;
    }

    /** Writes the header of the next message (data or credit) into {@code header}: what is owed, what was seen. */
    void writeHeader(byte[] header) {
        header[0] = (byte) (owed >>> 8);
        header[1] = (byte) owed;
        header[2] = (byte) (creditMessagesReceived >>> 8);
        header[3] = (byte) creditMessagesReceived;
    }

    /** A data message with the header of {@link #writeHeader} was posted. */
    void dataSent() {
        sendCredits--;
        owed = 0;
    }

    /** Whether a credit message should go now: enough owed and none outstanding. */
    boolean creditMessageDue() {
        return owed >= threshold && creditMessagesSent == creditMessagesSeenByPeer;
    }

    /** A credit message with the header of {@link #writeHeader} was posted. */
    void creditMessageSent() {
        creditMessagesSent = (creditMessagesSent + 1) & 0xffff;
        owed = 0;
    }

    /**
     * Takes a received message's header.
     *
     * @return whether it carries data (after the header)
     * @throws IllegalStateException when the peer breaks the protocol (a short message, more credits than it had)
     */
    boolean received(byte[] message) {
        if (message.length < HEADER) {
            throw new IllegalStateException("a message of " + message.length + " bytes, shorter than the " + HEADER
                    + "-byte header: is the peer an RdmaChannel?");
        }
        int returned = (message[0] & 0xff) << 8 | (message[1] & 0xff);
        int seen = (message[2] & 0xff) << 8 | (message[3] & 0xff);
        if (sendCredits + returned > window) {
            throw new IllegalStateException("the peer returned " + returned + " credits with " + sendCredits
                    + " held; its window is " + window);
        }
        sendCredits += returned;
        creditMessagesSeenByPeer = seen;
        if (message.length == HEADER) {
            creditMessagesReceived = (creditMessagesReceived + 1) & 0xffff;
            return false;
        }
        return true;
    }

    /** The application took a data message: its credit is owed to the peer. */
    void delivered() {
        owed++;
    }

    @Override
    public String toString() {
        return "CreditFlow[credits " + sendCredits + "/" + window + ", owed " + owed + "]";
    }
}
