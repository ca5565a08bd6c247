package io.metaroce.it.jverbs.apps;

import static io.metaroce.it.jverbs.apps.AppOutput.fail;
import static io.metaroce.it.jverbs.apps.AppOutput.say;

import io.metaroce.verbs.AccessFlag;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.ConnectionService;
import io.metaroce.verbs.cm.RdmaCmConnectionService;
import io.metaroce.verbs.endpoint.Disconnect;
import io.metaroce.verbs.endpoint.Endpoint;
import io.metaroce.verbs.endpoint.EndpointClosedException;
import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointListener;
import io.metaroce.verbs.endpoint.EndpointOptions;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Endpoints between two hosts, for JverbsEndpointIT. Modes:
 *
 * <pre>
 *   echo-server SERVICE          accept one endpoint (64 KiB exposed), echo every message, then print how it ended
 *   echo-client HOST SERVICE N   connect; check the private data and the remote buffer; N messages echoed and
 *                                checked; close while a virtual thread waits in receive(): it fails, local
 *   hold-server SERVICE          accept one endpoint and never answer (the test kills it)
 *   dead-peer-client HOST SERVICE [MARKER|- [TIMEOUT RETRY]]  connect (RC ack timeout and retry_cnt as given,
 *                                else as options(); printed as RC timeout=T retry=R); 4 receives and a send
 *                                pending; print READY; expect every future to fail once the peer is killed
 *                                (with MARKER: once MARKER exists, after one more send), and print how long
 *                                that took
 *   accept-timeout SERVICE       accept(200 ms) times out; then a close wakes a virtual thread in accept()
 *   reject-foreign SERVICE       the first request carries no endpoint header: accept rejects it and prints OK
 *   close-during-use HOST SERVICE  64 virtual threads send and receive while the endpoint is closed under them
 * </pre>
 *
 * <p>A mode prefixed {@code rdmacm:} (e.g. {@code rdmacm:echo-server}) connects and listens over rdma_cm
 * ({@link RdmaCmConnectionService}; SERVICE is then the rdma_cm port) instead of the daemons' service.
 */
public final class EndpointApp {
    static final String HELLO = "hello from the endpoint client";
    static final String WELCOME = "welcome from the endpoint server";
    static final int EXPOSED = 65536;
    static final int RW_OFFSET = 1000;
    static final int RW_SEED = 4011; // message(4011): 1 + 4011 * 37 % 4096 = 952 bytes

    private EndpointApp() {}

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    static EndpointOptions options() {
        // ack timeout 12 (about 17 ms), 3 retries: a dead path fails within a fraction of a second
        return EndpointOptions.defaults()
                .withDepths(8, 8)
                .withMessageSize(4096)
                .withRc(ConnectOptions.RcParameters.DEFAULTS.withTimeout(12).withRetries(3, 7))
                .withExposed(EXPOSED, EnumSet.of(AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE))
                .withTimeout(Duration.ofSeconds(30));
    }

    static byte[] message(int i) {
        byte[] b = new byte[1 + (i * 37) % 4096];
        for (int j = 0; j < b.length; j++) {
            b[j] = (byte) (i * 13 + j * 5 + 1);
        }
        return b;
    }

    /** The connection service of an {@code rdmacm:} mode, null for the daemons' own. */
    static ConnectionService cm;

    static EndpointListener bind(EndpointGroup g, int service, EndpointOptions o) throws java.io.IOException {
        return cm == null ? g.bind(service, o) : g.bind(service, o, cm);
    }

    static Endpoint connect(EndpointGroup g, InetSocketAddress a, EndpointOptions o) throws java.io.IOException {
        return cm == null ? g.connect(a, o) : g.connect(a, o, cm);
    }

    public static void main(String[] args) throws Exception {
        if (args[0].startsWith("rdmacm:")) {
            args[0] = args[0].substring("rdmacm:".length());
            cm = new RdmaCmConnectionService(Duration.ofSeconds(30));
            say("rdma_cm library " + io.metaroce.verbs.RdmaCm.library().orElse("(none)"));
        }
        switch (args[0]) {
            case "echo-server" -> echoServer(Integer.parseInt(args[1]));
            case "echo-client" -> echoClient(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            case "hold-server" -> holdServer(Integer.parseInt(args[1]));
            case "dead-peer-client" ->
                deadPeerClient(
                        args[1],
                        Integer.parseInt(args[2]),
                        args.length > 3 && !args[3].equals("-") ? java.nio.file.Path.of(args[3]) : null,
                        args.length > 5
                                ? options()
                                        .withRc(ConnectOptions.RcParameters.DEFAULTS
                                                .withTimeout(Integer.parseInt(args[4]))
                                                .withRetries(Integer.parseInt(args[5]), 7))
                                : options());
            case "accept-timeout" -> acceptTimeout(Integer.parseInt(args[1]));
            case "reject-foreign" -> rejectForeign(Integer.parseInt(args[1]));
            case "close-during-use" -> closeDuringUse(args[1], Integer.parseInt(args[2]));
            default -> fail("unknown mode " + args[0]);
        }
        System.exit(0);
    }

    static void echoServer(int service) throws Exception {
        try (EndpointGroup g = EndpointGroup.open("mrce0");
                EndpointListener l = bind(g, service, options().withPrivateData(ascii(WELCOME)))) {
            say("LISTENING");
            try (Endpoint ep = l.accept(Duration.ofSeconds(60))) {
                say("ACCEPTED private=" + new String(ep.peerPrivateData(), StandardCharsets.US_ASCII) + " remote="
                        + ep.remoteBuffer().length());
                int n = 0;
                try {
                    while (true) {
                        byte[] m = ep.receive().get(60, TimeUnit.SECONDS);
                        ep.send(m).get(60, TimeUnit.SECONDS);
                        n++;
                    }
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof EndpointClosedException c) || c.isLocal()) {
                        fail("the receive ended with " + e.getCause());
                    }
                }
                Disconnect d = ep.disconnected().get(10, TimeUnit.SECONDS);
                byte[] pattern = message(RW_SEED);
                byte[] landed = ep.exposedRegion()
                        .segment()
                        .asSlice(RW_OFFSET, pattern.length)
                        .toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                say("EXPOSED " + (Arrays.equals(landed, pattern) ? "holds the client's RDMA WRITE" : "differs"));
                say("OK echoed=" + n + " DISCONNECTED local=" + d.local() + " reason=" + d.reason());
            }
        }
    }

    /** A JFR recording of the binding's events. */
    static jdk.jfr.Recording recordVerbsEvents() {
        jdk.jfr.Recording r = new jdk.jfr.Recording();
        r.enable("io.metaroce.verbs.Connect");
        r.enable("io.metaroce.verbs.Disconnect");
        r.enable("io.metaroce.verbs.CompletionError");
        r.start();
        return r;
    }

    /** The recorded events of type {@code name}. */
    static List<jdk.jfr.consumer.RecordedEvent> events(jdk.jfr.Recording r, String name) throws Exception {
        if (r.getState() == jdk.jfr.RecordingState.RUNNING) {
            r.stop();
        }
        java.nio.file.Path f = java.nio.file.Files.createTempFile("endpoint-events", ".jfr");
        try {
            r.dump(f);
            return jdk.jfr.consumer.RecordingFile.readAllEvents(f).stream()
                    .filter(e -> e.getEventType().getName().equals(name))
                    .toList();
        } finally {
            java.nio.file.Files.deleteIfExists(f);
        }
    }

    static void echoClient(String host, int service, int n) throws Exception {
        jdk.jfr.Recording rec = recordVerbsEvents();
        try (EndpointGroup g = EndpointGroup.open("mrce0")) {
            Endpoint ep =
                    connect(g, new InetSocketAddress(host, service), options().withPrivateData(ascii(HELLO)));
            String priv = new String(ep.peerPrivateData(), StandardCharsets.US_ASCII);
            if (!priv.equals(WELCOME)) {
                fail("private data " + priv);
            }
            if (ep.remoteBuffer().length() != EXPOSED || ep.remoteBuffer().rkey() == 0 || ep.peerRecvDepth() != 8) {
                fail("remote buffer " + ep.remoteBuffer() + ", depth " + ep.peerRecvDepth());
            }
            // one-sided: RDMA WRITE into the server's exposed region, READ it back
            byte[] pattern = message(RW_SEED);
            ep.write(RW_OFFSET, java.lang.foreign.MemorySegment.ofArray(pattern))
                    .get(30, TimeUnit.SECONDS);
            byte[] back = ep.read(RW_OFFSET, pattern.length).get(30, TimeUnit.SECONDS);
            if (!Arrays.equals(back, pattern)) {
                fail("RDMA READ did not return what RDMA WRITE wrote");
            }
            try {
                ep.read(EXPOSED - 10, 11);
                fail("a READ past the peer's buffer was not refused");
            } catch (IndexOutOfBoundsException expected) {
                // ok
            }
            // keep up to 8 in flight (the server's receive depth), check each echo in order
            List<byte[]> sent = new ArrayList<>();
            List<CompletableFuture<Void>> sends = new ArrayList<>();
            long bytes = 0;
            int got = 0;
            for (int i = 0; i < n; i++) {
                if (i - got >= 8) {
                    byte[] e = ep.receive().get(60, TimeUnit.SECONDS);
                    if (!Arrays.equals(e, sent.get(got))) {
                        fail("echo " + got + " differs");
                    }
                    got++;
                }
                byte[] m = message(i);
                sent.add(m);
                bytes += m.length;
                sends.add(ep.send(m));
            }
            while (got < n) {
                byte[] e = ep.receive().get(60, TimeUnit.SECONDS);
                if (!Arrays.equals(e, sent.get(got))) {
                    fail("echo " + got + " differs");
                }
                got++;
            }
            CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            Endpoint.Stats st = ep.stats(); // every send acknowledged, every echo taken
            if (st.sentMessages() != n
                    || st.receivedMessages() != n
                    || st.sentBytes() != bytes
                    || st.receivedBytes() != bytes
                    || st.failedRequests() != 0) {
                fail("counters " + st + " after " + n + " messages of " + bytes + " bytes");
            }
            // a virtual thread waits for a message that never comes; closing the endpoint fails it (local)
            AtomicReference<Throwable> end = new AtomicReference<>();
            CompletableFuture<byte[]> pending = ep.receive();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    pending.get();
                    end.set(new AssertionError("a message arrived"));
                } catch (Throwable t) {
                    end.set(t);
                }
            });
            ep.close();
            waiter.join();
            if (!(end.get() instanceof ExecutionException ee
                    && ee.getCause() instanceof EndpointClosedException c
                    && c.isLocal())) {
                fail("the pending receive ended with " + end.get());
            }
            try {
                ep.send(new byte[1]);
                fail("a send after close did not throw");
            } catch (EndpointClosedException expected) {
                // ok
            }
            Disconnect d = ep.disconnected().getNow(null);
            if (d == null || !d.local()) {
                fail("disconnected() " + d);
            }
            List<jdk.jfr.consumer.RecordedEvent> connects = events(rec, "io.metaroce.verbs.Connect");
            List<jdk.jfr.consumer.RecordedEvent> disconnects = events(rec, "io.metaroce.verbs.Disconnect");
            if (connects.size() != 1
                    || connects.get(0).getString("error") != null
                    || connects.get(0).getInt("remoteQpn")
                            != ep.remoteEndpoint().qpn()) {
                fail("JFR Connect events " + connects);
            }
            if (disconnects.size() != 1 || !disconnects.get(0).getBoolean("local")) {
                fail("JFR Disconnect events " + disconnects);
            }
            say("OK messages=" + n + " bytes=" + bytes
                    + " closeFailedPendingReceive=true jfrConnect=1 jfrDisconnect=1");
        }
    }

    static void holdServer(int service) throws Exception {
        try (EndpointGroup g = EndpointGroup.open("mrce0");
                EndpointListener l = bind(g, service, options())) {
            say("LISTENING");
            Endpoint ep = l.accept(Duration.ofSeconds(60));
            say("HOLDING " + ep);
            ep.disconnected().get(); // until killed
        }
    }

    /**
     * With {@code goneMarker}, waits after READY until the test creates that file (the peer is
     * off the fabric by then), then sends: that send's retries are what notice the silent peer.
     */
    static void deadPeerClient(String host, int service, java.nio.file.Path goneMarker, EndpointOptions opts)
            throws Exception {
        jdk.jfr.Recording rec = recordVerbsEvents();
        try (EndpointGroup g = EndpointGroup.open("mrce0")) {
            Endpoint ep = connect(g, new InetSocketAddress(host, service), opts);
            ConnectOptions.RcParameters rc = ep.options().connect().rc();
            say("RC timeout=" + rc.timeout() + " retry=" + rc.retryCount());
            List<CompletableFuture<byte[]>> recvs = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                recvs.add(ep.receive());
            }
            ep.send(message(1)).get(30, TimeUnit.SECONDS); // the peer's receive took it
            say("READY");
            long t0 = System.nanoTime();
            CompletableFuture<Void> late = null;
            if (goneMarker != null) {
                while (!java.nio.file.Files.exists(goneMarker) && ep.isOpen()) {
                    Thread.onSpinWait();
                }
                t0 = System.nanoTime();
                late = ep.send(message(3));
            }
            CompletableFuture<Disconnect> d = ep.disconnected();
            Disconnect why = d.get(60, TimeUnit.SECONDS);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            for (CompletableFuture<byte[]> r : recvs) {
                try {
                    r.get(10, TimeUnit.SECONDS);
                    fail("a receive completed");
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof EndpointClosedException c) || c.isLocal()) {
                        fail("a receive ended with " + e.getCause());
                    }
                }
            }
            try {
                ep.send(message(2));
                fail("a send after the peer's death did not throw");
            } catch (EndpointClosedException expected) {
                // ok
            }
            if (late != null && !late.isCompletedExceptionally()) {
                fail("the send in flight did not fail: " + late);
            }
            // the failed send (retries exhausted) is recorded before its future fails; after a
            // QP_FATAL event the flushes may still be on their way, so only the disconnect is sure
            List<jdk.jfr.consumer.RecordedEvent> errors = events(rec, "io.metaroce.verbs.CompletionError");
            if (goneMarker != null && errors.isEmpty()) {
                fail("no JFR CompletionError event for the failed requests");
            }
            List<jdk.jfr.consumer.RecordedEvent> ends = events(rec, "io.metaroce.verbs.Disconnect");
            if (ends.size() != 1 || ends.get(0).getBoolean("local")) {
                fail("JFR Disconnect events " + ends);
            }
            say("DEAD ms=" + ms + " local=" + why.local() + " jfrCompletionErrors=" + errors.size() + " reason="
                    + why.reason());
            ep.close();
        }
    }

    static void closeDuringUse(String host, int service) throws Exception {
        try (EndpointGroup g = EndpointGroup.open("mrce0")) {
            Endpoint ep = connect(g, new InetSocketAddress(host, service), options());
            int threads = 64;
            java.util.concurrent.ConcurrentHashMap<String, java.util.concurrent.atomic.AtomicInteger> ends =
                    new java.util.concurrent.ConcurrentHashMap<>();
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(threads);
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread.ofVirtual().start(() -> {
                    String end;
                    try {
                        for (int i = 0; ; i++) {
                            ep.send(message(id * 1000 + i)); // parks while 8 sends are in flight
                            if (i % 4 == 0) {
                                ep.receive().get(); // an echo (any: 64 threads share the stream)
                            }
                        }
                    } catch (EndpointClosedException e) {
                        end = "EndpointClosedException";
                    } catch (ExecutionException e) {
                        end = e.getCause() instanceof EndpointClosedException
                                ? "EndpointClosedException"
                                : "other: " + e.getCause();
                    } catch (IllegalStateException e) {
                        end = "IllegalStateException";
                    } catch (Throwable e) {
                        end = "other: " + e;
                    }
                    ends.computeIfAbsent(end, k -> new java.util.concurrent.atomic.AtomicInteger())
                            .incrementAndGet();
                    done.countDown();
                });
            }
            while (ep.stats().sentMessages() < 500) { // a point the test controls: 500 messages acknowledged
                Thread.onSpinWait();
            }
            ep.close();
            if (!done.await(60, TimeUnit.SECONDS)) {
                fail("threads still running after the close: " + done.getCount());
            }
            if (ends.keySet().stream().anyMatch(k -> k.startsWith("other"))) {
                fail("threads ended with " + ends);
            }
            say("OK closedUnder=" + threads + " sent=" + ep.stats().sentMessages() + " ends="
                    + new java.util.TreeMap<>(ends));
        }
    }

    /** Listens; the first request is not an endpoint's (no header): accept rejects it and says so. */
    static void rejectForeign(int service) throws Exception {
        try (EndpointGroup g = EndpointGroup.open("mrce0");
                EndpointListener l = bind(g, service, options())) {
            say("LISTENING");
            try {
                l.accept(Duration.ofSeconds(60));
                fail("accepted a request without an endpoint header");
            } catch (java.io.IOException expected) {
                if (!expected.getMessage().contains("rejected a request")) {
                    throw expected;
                }
                say("OK " + expected.getMessage());
            }
        }
    }

    static void acceptTimeout(int service) throws Exception {
        try (EndpointGroup g = EndpointGroup.open("mrce0")) {
            EndpointListener l = bind(g, service, options());
            try {
                l.accept(Duration.ofMillis(200));
                fail("accept returned");
            } catch (SocketTimeoutException expected) {
                say("TIMED OUT " + expected.getMessage());
            }
            AtomicReference<Throwable> end = new AtomicReference<>();
            Thread waiter = Thread.ofVirtual().start(() -> {
                try {
                    l.accept();
                    end.set(new AssertionError("accept returned"));
                } catch (Throwable t) {
                    end.set(t);
                }
            });
            // close once the virtual thread is parked in accept (its state says so; no sleep)
            while (waiter.getState() != Thread.State.WAITING && waiter.getState() != Thread.State.TIMED_WAITING) {
                Thread.onSpinWait();
            }
            l.close();
            waiter.join();
            if (!(end.get() instanceof SocketException)) {
                fail("accept ended with " + end.get());
            }
            say("OK closeWokeAccept " + end.get().getMessage());
        }
    }
}
