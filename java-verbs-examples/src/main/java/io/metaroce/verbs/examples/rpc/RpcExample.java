package io.metaroce.verbs.examples.rpc;

import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointOptions;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * {@code bin/jverbs rpc-server} and {@code rpc-client}: the RPC example between two hosts. The
 * server answers each request with its payload reversed; the client runs {@code -t} virtual
 * threads, each making {@code -c} calls of 1..{@code -s} bytes (contents from the thread and call
 * number) over a pool of {@code -e} endpoints with {@code -w} credits each, checks every response
 * byte and prints {@code OK calls=N bytes=B bad=0 ...}. {@code --warmup N} first makes N calls
 * from the main thread (not counted in {@code calls}), so that the classes the calls use are
 * initialised before the virtual threads start: a class initialiser that two virtual threads reach
 * at once pins the second one for as long as the first runs it (a JDK limit, once per class, not
 * this library's doing). With {@code --jfr} it records {@code jdk.VirtualThreadPinned} (threshold 0)
 * during the calls after the warm-up and prints {@code pinned=N}.
 *
 * <p><b>Thread safety:</b> the entry points are meant to be run once per process, from main.
 */
public final class RpcExample {

    private RpcExample() {}

    static Map<String, String> parse(String[] args, List<String> positional) {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--jfr")) {
                o.put("jfr", "1");
            } else if (a.startsWith("-") && i + 1 < args.length) {
                o.put(a.replaceFirst("^-+", ""), args[++i]);
            } else {
                positional.add(a);
            }
        }
        return o;
    }

    static EndpointOptions options(Map<String, String> o) {
        int window = Integer.parseInt(o.getOrDefault("w", "16"));
        int size = Integer.parseInt(o.getOrDefault("s", "1024"));
        return EndpointOptions.defaults()
                .withDepths(window, window)
                .withMessageSize(size + 8)
                .withTimeout(Duration.ofSeconds(30));
    }

    /** The payload of call {@code call} of thread {@code thread}: 1..max bytes. */
    public static byte[] payload(int thread, int call, int max) {
        int len = 1 + (int) (((thread * 7919L) + call * 104729L) % max);
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) {
            b[i] = (byte) (thread * 31 + call * 17 + i * 7);
        }
        return b;
    }

    static byte[] reversed(byte[] b) {
        byte[] r = new byte[b.length];
        for (int i = 0; i < b.length; i++) {
            r[i] = b[b.length - 1 - i];
        }
        return r;
    }

    public static int server(String[] args) {
        List<String> pos = new ArrayList<>();
        Map<String, String> o = parse(args, pos);
        long stopAfter = Long.parseLong(o.getOrDefault("n", "0"));
        try (EndpointGroup g = EndpointGroup.open(o.getOrDefault("d", "mrce0"));
                RpcServer s = RpcServer.start(
                        g, Integer.parseInt(o.getOrDefault("p", "7100")), options(o), RpcExample::reversed)) {
            System.out.println("rpc-server: listening on service " + o.getOrDefault("p", "7100"));
            System.out.flush();
            while (stopAfter == 0 || s.served() < stopAfter) {
                Thread.sleep(20); // a status poll, not synchronisation: the clients drive the work
            }
            System.out.println("rpc-server: OK served=" + s.served());
            return 0;
        } catch (Exception e) {
            System.out.println("rpc-server: FAIL " + e);
            return 1;
        }
    }

    /**
     * One virtual thread parks on a semaphore and is released: the classes only contention
     * reaches (the semaphore's wait-queue nodes, a virtual thread's park and unpark) are
     * initialised before the measured calls, as the warm-up calls do for the rest (a CI run
     * caught a pin, "Contended monitor enter" in {@code AbstractQueuedSynchronizer.acquire},
     * after a warm-up whose calls never waited for a credit).
     */
    private static void contendOnce() throws InterruptedException {
        Semaphore s = new Semaphore(0);
        Thread t = Thread.ofVirtual().start(s::acquireUninterruptibly);
        while (!s.hasQueuedThreads()) {
            Thread.sleep(1); // until it waits in the queue
        }
        s.release();
        t.join();
    }

    public static int client(String[] args) {
        List<String> pos = new ArrayList<>();
        Map<String, String> o = parse(args, pos);
        if (pos.size() != 1) {
            System.err.println("rpc-client: the server's address is required");
            return 2;
        }
        int threads = Integer.parseInt(o.getOrDefault("t", "10000"));
        int calls = Integer.parseInt(o.getOrDefault("c", "1"));
        int pool = Integer.parseInt(o.getOrDefault("e", "4"));
        int max = Integer.parseInt(o.getOrDefault("s", "1024"));
        boolean jfr = o.containsKey("jfr");
        int warmup = Integer.parseInt(o.getOrDefault("warmup", "0"));
        InetSocketAddress server = new InetSocketAddress(pos.get(0), Integer.parseInt(o.getOrDefault("p", "7100")));
        AtomicLong done = new AtomicLong();
        AtomicLong bytes = new AtomicLong();
        AtomicLong bad = new AtomicLong();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        try (EndpointGroup g = EndpointGroup.open(o.getOrDefault("d", "mrce0"));
                RpcClient c = RpcClient.connect(g, server, options(o), pool)) {
            for (int k = 0; k < warmup; k++) {
                byte[] p = payload(threads + k, 0, max);
                if (!java.util.Arrays.equals(c.call(p).get(120, TimeUnit.SECONDS), reversed(p))) {
                    System.out.println("rpc-client: FAIL warm-up call " + k + " came back wrong");
                    return 1;
                }
            }
            if (warmup > 0) {
                contendOnce();
            }
            Recording rec = null;
            if (jfr) {
                rec = new Recording();
                rec.enable("jdk.VirtualThreadPinned")
                        .withThreshold(Duration.ZERO)
                        .withStackTrace();
                rec.start();
            }
            long t0 = System.nanoTime();
            CountDownLatch finished = new CountDownLatch(threads);
            for (int t = 0; t < threads; t++) {
                int thread = t;
                Thread.ofVirtual().start(() -> {
                    try {
                        for (int k = 0; k < calls; k++) {
                            byte[] p = payload(thread, k, max);
                            byte[] r = c.call(p).get(120, TimeUnit.SECONDS);
                            if (java.util.Arrays.equals(r, reversed(p))) {
                                done.incrementAndGet();
                                bytes.addAndGet(p.length);
                            } else {
                                bad.incrementAndGet();
                            }
                        }
                    } catch (Throwable e) {
                        firstError.compareAndSet(null, e);
                    } finally {
                        finished.countDown();
                    }
                });
            }
            finished.await();
            double s = (System.nanoTime() - t0) / 1e9;
            int pinned = 0;
            if (rec != null) {
                rec.stop();
                Path f = Files.createTempFile("rpc-pinned", ".jfr");
                try {
                    rec.dump(f);
                    List<RecordedEvent> ev = RecordingFile.readAllEvents(f).stream()
                            .filter(e -> e.getEventType().getName().equals("jdk.VirtualThreadPinned"))
                            .toList();
                    pinned = ev.size();
                    if (!ev.isEmpty()) {
                        System.out.println("rpc-client: first pinned event: " + ev.get(0));
                    }
                } finally {
                    rec.close();
                    Files.deleteIfExists(f);
                }
            }
            if (firstError.get() != null) {
                System.out.println("rpc-client: FAIL after " + done.get() + " calls: " + firstError.get());
                return 1;
            }
            System.out.printf(
                    "rpc-client: OK calls=%d bytes=%d bad=%d threads=%d endpoints=%d seconds=%.3f%s%n",
                    done.get(), bytes.get(), bad.get(), threads, pool, s, jfr ? " pinned=" + pinned : "");
            return bad.get() == 0 ? 0 : 1;
        } catch (Exception e) {
            System.out.println("rpc-client: FAIL " + e);
            return 1;
        }
    }
}
