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
    public static final List<String> NAMES =
            List.of("ignore-token", "ignore-crc", "place-duplicate-twice", "gap-unreported", "retransmit-same-path",
                    "resend-whole-read", "ignore-rwnd", "ignore-rnr-timer");
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
