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
    /** IPv6 frames with UDP checksum 0, which RFC 8200 forbids (the AF_XDP port drops them). */
    public long rxBadChecksum;

    public long rxUnknownQp;
    public long rxBadOpcode;
    /** RC packets whose connection token is not the receiving QP's (connection manager, spec 4). */
    public long rxBadToken;
    /** RC packets from another address than the receiving QP's peer (spec, security section). */
    public long rxBadSource;
    // Duty cycle (ports that count them; 0 otherwise): what a profile of the data path needs.
    /** Polls that found at least one frame (rxFrames / rxBatches = frames per RX batch). */
    public long rxBatches;
    /** Flushes that sent at least one frame (txFrames / txBatches = frames per TX batch). */
    public long txBatches;
    /** TX wakeup syscalls (AF_XDP sendto kicks, UDP sendmmsg calls). */
    public long txKicks;
    /** TX kicks the kernel answered EAGAIN, EBUSY or ENOBUFS (ring still busy). */
    public long txKicksBusy;
    /** RX wakeup syscalls (AF_XDP fill-ring recvfrom). */
    public long rxKicks;
    /** Frames sent inside a GSO buffer of several (UDP port; in txFrames too). */
    public long txCoalesced;
    /** Frames received inside a coalesced (GRO) buffer of several (UDP port; in rxFrames too). */
    public long rxCoalesced;

    @Override
    public String toString() {
        return "rx " + rxFrames + " tx " + txFrames + " txErrors " + txErrors + " truncated "
                + rxTruncated + " short " + rxShort + " badVersion " + rxBadVersion + " badCrc "
                + rxBadCrc + " badChecksum " + rxBadChecksum + " unknownQp " + rxUnknownQp + " badOpcode " + rxBadOpcode
                + " badToken " + rxBadToken
                + " badSource " + rxBadSource
                + " rxBatches " + rxBatches + " txBatches " + txBatches + " txKicks " + txKicks
                + " txKicksBusy " + txKicksBusy + " rxKicks " + rxKicks + " txCoalesced " + txCoalesced
                + " rxCoalesced " + rxCoalesced;
    }
}
