package io.metaroce.verbs.endpoint;

import io.metaroce.verbs.cm.ConnectionService;
import java.io.IOException;
import java.time.Duration;

/**
 * A listening service of an {@link EndpointGroup}: {@link #accept(Duration)} takes the next
 * connection request and returns a connected {@link Endpoint} (built with the listener's
 * {@link EndpointOptions}). A request whose private data is not an endpoint's is rejected.
 *
 * <p>{@link #close()} stops listening (the daemon refuses later requests and rejects those it
 * kept) and wakes an {@code accept} in progress, which then throws
 * {@link java.net.SocketException}; so an accept is cancelled by closing its listener (a
 * virtual thread waiting in it is parked, not pinned). <b>Thread safety:</b> safe to share;
 * concurrent accepts each take a different request; close from any thread.
 */
public final class EndpointListener implements AutoCloseable {

    private final EndpointGroup group;
    private final ConnectionService.Listener listener;
    private final int service;
    private final EndpointOptions options;

    EndpointListener(EndpointGroup group, ConnectionService.Listener listener, int service, EndpointOptions options) {
        this.group = group;
        this.listener = listener;
        this.service = service;
        this.options = options;
    }

    /** The service id. */
    public int service() {
        return service;
    }

    /** Waits without a limit for the next request and accepts it. */
    public Endpoint accept() throws IOException {
        return accept(Duration.ZERO);
    }

    /**
     * Waits at most {@code timeout} (zero: no limit) for the next request, accepts it and returns
     * the connected endpoint.
     *
     * @throws java.net.SocketTimeoutException when no request came within the timeout
     * @throws java.net.SocketException when the listener was closed (also during the wait)
     */
    public Endpoint accept(Duration timeout) throws IOException {
        ConnectionService.ConnectionRequest r = listener.next(timeout);
        try {
            EndpointOptions.PeerHeader.parse(r.privateData());
        } catch (IllegalArgumentException e) {
            r.reject("not an endpoint request".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            throw new IOException(
                    "rejected a request of " + r.peer().getAddress().getHostAddress() + ": " + e.getMessage(), e);
        }
        Endpoint e = new Endpoint(group, options, false);
        EndpointEvents.Connect ev = new EndpointEvents.Connect();
        ev.begin();
        try {
            ConnectionService.Connection c =
                    r.accept(e.qp, options.connect().withPrivateData(options.wirePrivateData(e.exposedBuffer())));
            e.connected(c, r.peer());
            ev.remoteQpn = c.remote().qpn();
            return e;
        } catch (IOException | RuntimeException ex) {
            ev.error = ex.toString();
            e.close();
            throw ex;
        } finally {
            ev.peer = r.peer().getAddress().getHostAddress();
            ev.service = Integer.toUnsignedLong(service);
            ev.passive = true;
            ev.localQpn = e.qp.qpNum();
            ev.commit();
        }
    }

    /** Stops listening and wakes an accept in progress. Closing again: no-op. */
    @Override
    public void close() throws IOException {
        listener.close();
    }

    @Override
    public String toString() {
        return "EndpointListener[service " + Integer.toUnsignedString(service) + " on " + group + "]";
    }
}
