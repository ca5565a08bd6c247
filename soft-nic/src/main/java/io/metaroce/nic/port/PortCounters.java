package io.metaroce.nic.port;

/** Frame counters of a port and of the engine's receive checks (single writer: the engine). */
public final class PortCounters {
    public long rxFrames;
    public long txFrames;
    public long txErrors;
    public long rxTruncated;
    public long rxShort;
    public long rxBadVersion;
    public long rxBadCrc;
    public long rxUnknownQp;
    public long rxBadOpcode;
    /** RC packets whose connection token is not the receiving QP's (connection manager, spec 4). */
    public long rxBadToken;

    @Override
    public String toString() {
        return "rx " + rxFrames + " tx " + txFrames + " txErrors " + txErrors + " truncated "
                + rxTruncated + " short " + rxShort + " badVersion " + rxBadVersion + " badCrc "
                + rxBadCrc + " unknownQp " + rxUnknownQp + " badOpcode " + rxBadOpcode + " badToken " + rxBadToken;
    }
}
