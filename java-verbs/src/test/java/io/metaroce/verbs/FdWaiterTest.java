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
 * JFR records no {@code jdk.VirtualThreadPinned}).
 */
class FdWaiterTest {

    @Test
    void readyTimeoutAndWake() throws Exception {
        int fd = Posix.eventfd();
        assertThat(fd).isPositive();
        try (FdWaiter w = new FdWaiter()) {
            assertThat(w.await(fd, 0, null)).isEqualTo(FdWaiter.TIMEOUT);
            Posix.writeCounter(fd, 1);
            assertThat(w.await(fd, TimeUnit.SECONDS.toNanos(60), null)).isEqualTo(FdWaiter.READY);
            assertThat(Posix.readCounter(fd)).isEqualTo(1);
            assertThat(Posix.readCounter(fd)).isEqualTo(-Posix.EAGAIN);
            w.wake();
            assertThat(w.await(fd, -1, null)).as("a woken waiter returns at once").isEqualTo(FdWaiter.WOKEN);
        } finally {
            Posix.close(fd);
        }
    }

    @Test
    void virtualThreadsWaitWithoutPinningAndAreWokenByClose() throws Exception {
        int carriers = Integer.getInteger("jdk.virtualThreadScheduler.parallelism",
                Runtime.getRuntime().availableProcessors());
        int waiters = 4 * carriers + 2;
        int fd = Posix.eventfd();
        Path jfr = Files.createTempFile("fdwaiter", ".jfr");
        try (FdWaiter w = new FdWaiter(); Recording rec = new Recording()) {
            rec.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            rec.start();
            CountDownLatch started = new CountDownLatch(waiters);
            AtomicInteger woken = new AtomicInteger();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                threads.add(Thread.ofVirtual().start(() -> {
                    started.countDown();
                    try {
                        if (w.await(fd, TimeUnit.MINUTES.toNanos(5), null) == FdWaiter.WOKEN) {
                            woken.incrementAndGet();
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }));
            }
            assertThat(started.await(60, TimeUnit.SECONDS)).isTrue();
            // every carrier would be blocked in poll() if the waits pinned them: this could not run
            CountDownLatch ran = new CountDownLatch(1);
            Thread.ofVirtual().start(ran::countDown);
            assertThat(ran.await(60, TimeUnit.SECONDS)).as("another virtual thread ran meanwhile").isTrue();
            w.wake();
            for (Thread t : threads) {
                t.join(60_000);
                assertThat(t.isAlive()).isFalse();
            }
            assertThat(woken.get()).isEqualTo(waiters);
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
