package io.metaroce.control.cm;

import java.util.List;

/**
 * The connection manager's part of the daemon's conformance test hook (soft-nic's
 * {@code ConformanceBreak}, docs/conformance.md): off by default, {@code
 * -Dmetaroce.conformance.break=NAME} breaks one rule of docs/spec/connection-manager.md on purpose.
 * Constants read once, so the checks cost nothing when the hook is off.
 */
public final class CmConformanceBreak {
    /** The names a test may set, one at a time. */
    public static final List<String> NAMES = List.of(
            "hello-heartbeat-zero",
            "no-disconnect",
            "ignore-reject",
            "no-peer-timeout",
            "no-reject-unknown-qp",
            "no-pong",
            "close-on-extension",
            "skip-bad-frame",
            "no-connect-timeout",
            "ignore-restart");

    static final String NAME = System.getProperty("metaroce.conformance.break", "");

    /** CM-2.1 (HELLO): the heartbeat field is sent as 0. */
    public static final boolean HELLO_HEARTBEAT_ZERO = NAME.equals("hello-heartbeat-zero");
    /** CM-5.3: a destroyed QP's DISCONNECT is not sent. */
    public static final boolean NO_DISCONNECT = NAME.equals("no-disconnect");
    /** CM-3.3: a REJECT does not fail the request (the QP stays up). */
    public static final boolean IGNORE_REJECT = NAME.equals("ignore-reject");
    /** CM-5.2: a silent peer is never declared lost. */
    public static final boolean NO_PEER_TIMEOUT = NAME.equals("no-peer-timeout");
    /** CM-3.2: a CONNECT naming no QP is not answered. */
    public static final boolean NO_REJECT_UNKNOWN_QP = NAME.equals("no-reject-unknown-qp");
    /** CM-5.1: a PING is not answered. */
    public static final boolean NO_PONG = NAME.equals("no-pong");
    /** CM-2.9: a frame of an ignorable type closes the connection. */
    public static final boolean CLOSE_ON_EXTENSION = NAME.equals("close-on-extension");
    /** CM-1.3, CM-2.1: a frame of an unknown type below 64 is skipped instead of closing the connection. */
    public static final boolean SKIP_BAD_FRAME = NAME.equals("skip-bad-frame");
    /** CM-3.3: a request nobody answers never times out. */
    public static final boolean NO_CONNECT_TIMEOUT = NAME.equals("no-connect-timeout");
    /** CM-5.2: a HELLO with a new boot id is not taken as the peer's restart. */
    public static final boolean IGNORE_RESTART = NAME.equals("ignore-restart");

    private CmConformanceBreak() {}
}
