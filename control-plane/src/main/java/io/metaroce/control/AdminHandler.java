package io.metaroce.control;

/**
 * Answers operator queries ({@code mrce-ctl}) on the daemon's admin socket. Called on the admin
 * server's event loop; may block briefly (it takes engine snapshots).
 */
@FunctionalInterface
public interface AdminHandler {
    /**
     * Answers one command.
     *
     * @param command the request line, trimmed (e.g. {@code "stats"})
     * @return one JSON document
     * @throws IllegalArgumentException for an unknown or malformed command (the client gets
     *     {@code {"error": message}})
     */
    String handle(String command);
}
