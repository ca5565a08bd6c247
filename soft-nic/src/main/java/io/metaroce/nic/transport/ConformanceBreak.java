package io.metaroce.nic.transport;

import java.util.List;

/**
 * A test hook, off by default: {@code -Dmetaroce.conformance.break=NAME} makes the daemon break one
 * rule of docs/spec/transport.md on purpose, so that a test can show the conformance suite
 * (conformance/, docs/conformance.md) catches it. Never set it outside such a test. The flags are
 * constants read once, so the checks cost nothing when the hook is off.
 */
public final class ConformanceBreak {
    public static final String PROPERTY = "metaroce.conformance.break";
    /** The names a test may set, one at a time. */
    public static final List<String> NAMES = java.util.stream.Stream.concat(
                    java.util.stream.Stream.of(
                            "ignore-token",
                            "ignore-crc",
                            "place-duplicate-twice",
                            "gap-unreported",
                            "retransmit-same-path",
                            "resend-whole-read",
                            "ignore-rwnd",
                            "ignore-rnr-timer",
                            "write-ignores-offset",
                            "drop-out-of-order",
                            "send-ignores-offset",
                            "write-imm-loses-imm",
                            "report-psn-ahead",
                            "accept-rsn-window-256",
                            "probe-unanswered",
                            "ignore-version",
                            "uncounted-unknown-qp",
                            "ignore-src-qpn",
                            "rnr-timer-zero",
                            "nak-once",
                            "length-nak-remote-op",
                            "misaligned-atomic-access-nak",
                            "read-resp-wrong-rsn",
                            "atomic-no-replay",
                            "rerequest-whole-read",
                            "ignore-qkey",
                            "ce-unreported",
                            "send-on-dead-path"),
                    io.metaroce.control.cm.CmConformanceBreak.NAMES.stream())
            .toList();

    static final String NAME = System.getProperty(PROPERTY, "");

    /** §2, connection-manager.md §4: a packet with another QP's token is processed anyway. */
    public static final boolean IGNORE_TOKEN = NAME.equals("ignore-token");
    /** §2, §12: a packet with a wrong CRC32C is processed anyway. */
    public static final boolean IGNORE_CRC = NAME.equals("ignore-crc");
    /** §5 rule 2: a duplicate RSN inside the window is placed again. */
    public static final boolean PLACE_DUPLICATE_TWICE = NAME.equals("place-duplicate-twice");
    /** §5 rule 1: a gap in a path's PSNs is neither counted in the report nor acknowledged at once. */
    public static final boolean GAP_UNREPORTED = NAME.equals("gap-unreported");
    /** §8: a lost RSN is resent on the path it was lost on. */
    public static final boolean RETRANSMIT_SAME_PATH = NAME.equals("retransmit-same-path");

    /** §5 rule 9: a re-request of a READ range is answered with the whole READ again. */
    public static final boolean RESEND_WHOLE_READ = NAME.equals("resend-whole-read");

    /** §7: the requester sends past the receive window the responder advertised. */
    public static final boolean IGNORE_RWND = NAME.equals("ignore-rwnd");
    /** §6 (NAK RNR): the requester resends at once instead of waiting the RNR timer. */
    public static final boolean IGNORE_RNR_TIMER = NAME.equals("ignore-rnr-timer");

    /** §4 (T-4.2): a WRITE's payload is placed at the RETH's va, whatever its offset. */
    public static final boolean WRITE_IGNORES_OFFSET = NAME.equals("write-ignores-offset");
    /** §4, §5 rule 2: only the expected RSN is accepted (go-back-N): a packet above it is dropped. */
    public static final boolean DROP_OUT_OF_ORDER = NAME.equals("drop-out-of-order");
    /** §4 (T-4.2): a SEND's payload is placed at the start of the receive, whatever its offset. */
    public static final boolean SEND_IGNORES_OFFSET = NAME.equals("send-ignores-offset");
    /** §5 rule 6: a WRITE_IMM completes its receive without the immediate data. */
    public static final boolean WRITE_IMM_LOSES_IMM = NAME.equals("write-imm-loses-imm");
    /** §6 (T-6.3): a path report carries a PSN one beyond the highest one received. */
    public static final boolean REPORT_PSN_AHEAD = NAME.equals("report-psn-ahead");
    /** §3, §5 rule 2: an RSN at d = 256 (out of the window) is placed. */
    public static final boolean ACCEPT_RSN_WINDOW_256 = NAME.equals("accept-rsn-window-256");
    /** T-5.11: a PROBE is not answered. */
    public static final boolean PROBE_UNANSWERED = NAME.equals("probe-unanswered");
    /** T-2.2: a packet of another version is processed. */
    public static final boolean IGNORE_VERSION = NAME.equals("ignore-version");
    /** T-2.6 (counter): a packet for no QP is dropped without counting it in rxUnknownQp. */
    public static final boolean UNCOUNTED_UNKNOWN_QP = NAME.equals("uncounted-unknown-qp");
    /** T-2.6: a packet whose source QPN is not the QP's dest_qp_num is processed. */
    public static final boolean IGNORE_SRC_QPN = NAME.equals("ignore-src-qpn");
    /** §6 (NAK RNR): the NAK carries timer code 0, not the QP's min_rnr_timer. */
    public static final boolean RNR_TIMER_ZERO = NAME.equals("rnr-timer-zero");
    /** §5 rule 8: a QP failed by a refusal does not answer later packets with its NAK again. */
    public static final boolean NAK_ONCE = NAME.equals("nak-once");
    /** §5 rule 3: a SEND longer than its receive is refused with REMOTE_OPERATIONAL, not INVALID_REQUEST. */
    public static final boolean LENGTH_NAK_REMOTE_OP = NAME.equals("length-nak-remote-op");
    /** §5 rule 7: a misaligned atomic is refused with REMOTE_ACCESS, not INVALID_REQUEST. */
    public static final boolean MISALIGNED_ATOMIC_ACCESS_NAK = NAME.equals("misaligned-atomic-access-nak");
    /** §2a, §5 rule 7: READ responses carry the request's RSN + 1. */
    public static final boolean READ_RESP_WRONG_RSN = NAME.equals("read-resp-wrong-rsn");
    /** §5 rule 9: a duplicate or re-request of an executed atomic is not answered from the result cache. */
    public static final boolean ATOMIC_NO_REPLAY = NAME.equals("atomic-no-replay");
    /** §8a (T-8a.4): a missing READ range is re-requested as the whole READ. */
    public static final boolean REREQUEST_WHOLE_READ = NAME.equals("rerequest-whole-read");
    /** §13 (T-13.2): a UD packet with another Q_Key is delivered. */
    public static final boolean IGNORE_QKEY = NAME.equals("ignore-qkey");
    /** §11.1 (T-11.2): path reports carry CE count 0 whatever arrived marked. */
    public static final boolean CE_UNREPORTED = NAME.equals("ce-unreported");

    /** §10 (T-10.2): a retired (DEAD) path is given new data like an ACTIVE one. */
    public static final boolean SEND_ON_DEAD_PATH = NAME.equals("send-on-dead-path");

    private ConformanceBreak() {}

    /** The hook's setting for the daemon's start-up log: null when off; unknown names are refused. */
    public static String describe() {
        if (NAME.isEmpty()) {
            return null;
        }
        if (!NAMES.contains(NAME)) {
            throw new IllegalArgumentException("-D" + PROPERTY + "=" + NAME + ": not one of " + NAMES);
        }
        return "conformance test hook ON: breaking rule '" + NAME + "' on purpose (-D" + PROPERTY + ")";
    }
}
