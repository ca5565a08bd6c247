package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/**
 * The wait behind {@link CompletionChannel#await}, on an eventfd standing in for the channel's
 * fd (no device needed): readiness, timeout, wake-on-close, and virtual threads that wait
 * without pinning their carriers (more waiters than carriers, another virtual thread still runs;
 * one platform thread polls for all of them; JFR records no {@code jdk.VirtualThreadPinned}).
 */
class FdWaiterTest {

    @Test
    void readyTimeoutAndWake() throws Exception {
        int fd = Posix.eventfd();
        assertThat(fd).isPositive();
        try (FdWaiter w = new FdWaiter(fd, null, "test")) {
            assertThat(w.await(0)).isEqualTo(FdWaiter.TIMEOUT);
            Posix.writeCounter(fd, 1);
            assertThat(w.await(TimeUnit.SECONDS.toNanos(60))).isEqualTo(FdWaiter.READY);
            assertThat(Posix.readCounter(fd)).isEqualTo(1);
            assertThat(Posix.readCounter(fd)).isEqualTo(-Native.Errno.EAGAIN);
            // the same on a virtual thread, through the shared poller
            AtomicInteger vt = new AtomicInteger(99);
            Thread t = Thread.ofVirtual().start(() -> {
                try {
                    vt.set(w.await(TimeUnit.MILLISECONDS.toNanos(20)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.join(60_000);
            assertThat(vt.get()).as("a virtual thread's wait times out").isEqualTo(FdWaiter.TIMEOUT);
            w.wake();
            assertThat(w.await(-1)).as("a woken waiter returns at once").isEqualTo(FdWaiter.WOKEN);
        } finally {
            Posix.close(fd);
        }
    }

    @Test
    void virtualThreadsWaitWithoutPinningOnOnePollerThreadAndAreWokenByReadinessAndClose() throws Exception {
        int carriers = Integer.getInteger(
                "jdk.virtualThreadScheduler.parallelism", Runtime.getRuntime().availableProcessors());
        int waiters = 4 * carriers + 200;
        int fd = Posix.eventfd();
        Path jfr = Files.createTempFile("fdwaiter", ".jfr");
        try (FdWaiter w = new FdWaiter(fd, null, "vt-test");
                Recording rec = new Recording()) {
            rec.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            rec.start();
            for (int phase = 0; phase < 2; phase++) {
                CountDownLatch started = new CountDownLatch(waiters);
                AtomicInteger ready = new AtomicInteger();
                AtomicInteger woken = new AtomicInteger();
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < waiters; i++) {
                    threads.add(Thread.ofVirtual().start(() -> {
                        started.countDown();
                        try {
                            int r = w.await(TimeUnit.MINUTES.toNanos(5));
                            (r == FdWaiter.READY ? ready : r == FdWaiter.WOKEN ? woken : new AtomicInteger())
                                    .incrementAndGet();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }));
                }
                assertThat(started.await(60, TimeUnit.SECONDS)).isTrue();
                // every carrier would be blocked in poll() if the waits pinned them: this could not run
                CountDownLatch ran = new CountDownLatch(1);
                Thread.ofVirtual().start(ran::countDown);
                assertThat(ran.await(60, TimeUnit.SECONDS))
                        .as("another virtual thread ran meanwhile")
                        .isTrue();
                long pollers = Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().startsWith("jverbs-fd-wait-vt-test"))
                        .count();
                assertThat(pollers)
                        .as("platform threads polling for %d virtual threads", waiters)
                        .isLessThanOrEqualTo(1);
                if (phase == 0) {
                    Posix.writeCounter(fd, 1); // readable: every waiter is told (nobody reads it here)
                } else {
                    w.wake();
                }
                for (Thread t : threads) {
                    t.join(60_000);
                    assertThat(t.isAlive()).isFalse();
                }
                if (phase == 0) {
                    assertThat(ready.get()).isEqualTo(waiters);
                    assertThat(Posix.readCounter(fd)).isEqualTo(1);
                } else {
                    assertThat(woken.get()).isEqualTo(waiters);
                }
            }
            rec.stop();
            rec.dump(jfr);
            List<RecordedEvent> pinned = RecordingFile.readAllEvents(jfr);
            assertThat(pinned).as("jdk.VirtualThreadPinned events").isEmpty();
        } finally {
            Posix.close(fd);
            Files.deleteIfExists(jfr);
        }
    }
}
