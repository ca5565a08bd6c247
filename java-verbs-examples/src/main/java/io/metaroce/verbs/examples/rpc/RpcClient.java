package io.metaroce.verbs.examples.rpc;

import io.metaroce.verbs.endpoint.Endpoint;
import io.metaroce.verbs.endpoint.EndpointClosedException;
import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointOptions;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The RPC example's client: a pool of endpoints to one {@link RpcServer}; {@link #call} sends
 * a request on the next endpoint (round robin) and returns the future of its response.
 *
 * <p>Flow control by credits: an endpoint may have at most {@code window} requests outstanding,
 * the smaller of the server's receive depth (told at connect) and its own (each response needs a
 * posted receive here). A call waits (parks; a virtual thread's carrier stays free) for a credit;
 * the response returns it. So the server never sees a request without a posted receive (no RNR),
 * and the client's receives always cover the responses. A reader virtual thread per endpoint
 * completes the futures by id. An endpoint that ends (the server went away) fails its
 * outstanding calls with {@link EndpointClosedException}.
 *
 * <p><b>Thread safety:</b> safe to share: any number of threads may call concurrently.
 */
public final class RpcClient implements AutoCloseable {

    private final List<Conn> conns = new ArrayList<>();
    private final AtomicInteger next = new AtomicInteger();
    private final AtomicLong ids = new AtomicLong(1);

    private static final class Conn {
        final Endpoint ep;
        final Semaphore credits;
        final Map<Long, CompletableFuture<byte[]>> pending = new ConcurrentHashMap<>();
        final Thread reader;

        Conn(Endpoint ep) {
            this.ep = ep;
            this.credits =
                    new Semaphore(Math.min(ep.peerRecvDepth(), ep.options().recvDepth()));
            this.reader = Thread.ofVirtual()
                    .name("rpc-reader-" + ep.localEndpoint().qpn())
                    .unstarted(this::read);
        }

        private void read() {
            try {
                while (true) {
                    byte[] resp = ep.receive().get();
                    long id = getLong(resp);
                    CompletableFuture<byte[]> f = pending.remove(id);
                    credits.release();
                    if (f != null) {
                        f.complete(java.util.Arrays.copyOfRange(resp, 8, resp.length));
                    }
                }
            } catch (ExecutionException | InterruptedException | RuntimeException e) {
                Throwable why = e instanceof ExecutionException ? e.getCause() : e;
                credits.release(1 << 20); // wake callers waiting for a credit: they see the end
                for (Long id : pending.keySet()) {
                    CompletableFuture<byte[]> f = pending.remove(id);
                    if (f != null) {
                        f.completeExceptionally(why);
                    }
                }
            }
        }
    }

    private RpcClient() {}

    /** Connects {@code poolSize} endpoints of {@code group} to the server at {@code server}. */
    public static RpcClient connect(
            EndpointGroup group, InetSocketAddress server, EndpointOptions options, int poolSize) throws IOException {
        RpcClient c = new RpcClient();
        try {
            for (int i = 0; i < poolSize; i++) {
                Conn conn = new Conn(group.connect(server, options));
                c.conns.add(conn);
                conn.reader.start();
            }
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    /** The endpoints of the pool. */
    public List<Endpoint> endpoints() {
        return conns.stream().map(c -> c.ep).toList();
    }

    /**
     * Sends {@code payload} (at most the endpoints' message size less 8) and returns the future
     * of the response's payload. Waits for a credit of the chosen endpoint first.
     *
     * @throws EndpointClosedException when that endpoint has ended
     */
    public CompletableFuture<byte[]> call(byte[] payload) {
        Conn c = conns.get(Math.floorMod(next.getAndIncrement(), conns.size()));
        c.credits.acquireUninterruptibly();
        if (!c.ep.isOpen()) {
            c.credits.release();
            throw new EndpointClosedException(c.ep + " has ended", false, null);
        }
        long id = ids.getAndIncrement();
        CompletableFuture<byte[]> f = new CompletableFuture<>();
        c.pending.put(id, f);
        byte[] req = new byte[8 + payload.length];
        putLong(req, id);
        System.arraycopy(payload, 0, req, 8, payload.length);
        try {
            c.ep.send(req).whenComplete((v, ex) -> {
                if (ex != null && c.pending.remove(id, f)) {
                    f.completeExceptionally(ex);
                }
            });
        } catch (RuntimeException e) {
            c.pending.remove(id, f);
            c.credits.release();
            throw e;
        }
        return f;
    }

    static long getLong(byte[] b) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = v << 8 | (b[i] & 0xff);
        }
        return v;
    }

    static void putLong(byte[] b, long v) {
        for (int i = 7; i >= 0; i--) {
            b[i] = (byte) v;
            v >>>= 8;
        }
    }

    /** Closes every endpoint: outstanding calls fail with {@link EndpointClosedException}. */
    @Override
    public void close() {
        for (Conn c : conns) {
            c.ep.close();
        }
        for (Conn c : conns) {
            try {
                c.reader.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
