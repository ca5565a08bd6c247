package io.metaroce.verbs.endpoint;

/**
 * Why an endpoint's connection ended: {@link Endpoint#disconnected()} completes with it.
 *
 * <p>Immutable, thread-safe.
 *
 * @param local true when this side closed it, false when the peer went away or the connection broke
 * @param reason a line for people
 * @param cause the completion error, async event or exception that showed it (null on a local close)
 */
public record Disconnect(boolean local, String reason, Throwable cause) {}
