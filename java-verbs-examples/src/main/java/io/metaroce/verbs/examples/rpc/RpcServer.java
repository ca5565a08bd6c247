package io.metaroce.verbs.examples.rpc;

import io.metaroce.verbs.endpoint.Endpoint;
import io.metaroce.verbs.endpoint.EndpointClosedException;
import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointListener;
import io.metaroce.verbs.endpoint.EndpointOptions;
import java.io.IOException;
import java.net.SocketException;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * The RPC example's server: accepts endpoints on a service and answers each request with
 * {@code handler(payload)}, one virtual thread per endpoint. A request is {@code [u64 id][payload]}
 * and its response {@code [u64 id][handler(payload)]} (ids big-endian, chosen by the client).
 * Flow control is the client's (credits, see {@link RpcClient}): each endpoint keeps
 * {@link EndpointOptions#recvDepth()} receives posted, reposts each before answering, and a
 * client never has more requests outstanding on an endpoint than that.
 *
 * <p><b>Thread safety:</b> start once; {@link #close()} from any thread.
 */
public final class RpcServer implements AutoCloseable {

    private final EndpointListener listener;
    private final UnaryOperator<byte[]> handler;
    private final Set<Endpoint> endpoints = ConcurrentHashMap.newKeySet();
    private final AtomicLong served = new AtomicLong();
    private final Thread acceptor;

    private RpcServer(EndpointListener listener, UnaryOperator<byte[]> handler) {
        this.listener = listener;
        this.handler = handler;
        this.acceptor = Thread.ofVirtual().name("rpc-acceptor").unstarted(this::acceptLoop);
    }

    /** Listens on {@code service} of {@code group} and serves every endpoint that connects. */
    public static RpcServer start(
            EndpointGroup group, int service, EndpointOptions options, UnaryOperator<byte[]> handler)
            throws IOException {
        RpcServer s = new RpcServer(group.bind(service, options), handler);
        s.acceptor.start();
        return s;
    }

    /** Requests answered so far. */
    public long served() {
        return served.get();
    }

    /** Endpoints connected now. */
    public int connections() {
        return endpoints.size();
    }

    private void acceptLoop() {
        while (true) {
            Endpoint ep;
            try {
                ep = listener.accept();
            } catch (SocketException e) {
                return; // closed
            } catch (IOException | RuntimeException e) {
                System.err.println("rpc-server: accept failed: " + e);
                continue;
            }
            endpoints.add(ep);
            Thread.ofVirtual().name("rpc-serve-" + ep.remoteEndpoint().qpn()).start(() -> serve(ep));
        }
    }

    private void serve(Endpoint ep) {
        try {
            while (true) {
                byte[] req = ep.receive().get();
                if (req.length < 8) {
                    throw new IllegalStateException("a request of " + req.length + " bytes (at least 8: the id)");
                }
                byte[] answer = handler.apply(Arrays.copyOfRange(req, 8, req.length));
                byte[] resp = new byte[8 + answer.length];
                System.arraycopy(req, 0, resp, 0, 8);
                System.arraycopy(answer, 0, resp, 8, answer.length);
                ep.send(resp); // waits (parks) while the send queue is full
                served.incrementAndGet();
            }
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof EndpointClosedException)) {
                System.err.println("rpc-server: " + ep + ": " + e.getCause());
            }
        } catch (EndpointClosedException e) {
            // the client went away, or we are closing
        } catch (InterruptedException | RuntimeException e) {
            System.err.println("rpc-server: " + ep + ": " + e);
        } finally {
            endpoints.remove(ep);
            ep.close();
        }
    }

    /** Stops accepting and closes every endpoint. */
    @Override
    public void close() throws IOException {
        listener.close();
        try {
            acceptor.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Endpoint ep : endpoints) {
            ep.close();
        }
    }
}
