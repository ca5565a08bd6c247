package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The acquire/release guard of {@link VerbsObject}: a close that races with calls on other
 * threads never destroys the native object under a call in flight; the calls either complete or
 * throw IllegalStateException. The "native object" here is a flag the fake destroy sets and every
 * guarded call checks (a real one would crash the JVM instead of counting a violation).
 */
class GuardTest {

    /** A verbs object whose native side is a flag; {@link #call()} is a guarded "native" call. */
    static final class FakeNative extends VerbsObject {
        volatile boolean freed;
        final AtomicInteger violations = new AtomicInteger();
        CountDownLatch insideCall;
        CountDownLatch finishCall;

        FakeNative(VerbsObject... deps) {
            super(deps);
            attach();
        }

        void call() {
            acquire();
            try {
                if (freed) {
                    violations.incrementAndGet(); // a use after the native object was destroyed
                }
                if (insideCall != null) {
                    insideCall.countDown();
                    await(finishCall);
                }
                if (freed) {
                    violations.incrementAndGet();
                }
            } finally {
                release();
            }
        }

        @Override
        public String describe() {
            return "FakeNative";
        }

        @Override
        void destroy() {
            if (inFlight() != 0) {
                violations.incrementAndGet();
            }
            freed = true;
        }
    }

    static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(60, TimeUnit.SECONDS)).as("latch").isTrue();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void closeFromAnotherThreadWhileAPollerLoopsEndsTheLoopWithAnExceptionNeverAUseAfterFree() throws Exception {
        for (int round = 0; round < 200; round++) {
            FakeNative cq = new FakeNative();
            AtomicLong calls = new AtomicLong();
            AtomicReference<Throwable> ended = new AtomicReference<>();
            CountDownLatch looping = new CountDownLatch(1);
            Thread poller = Thread.ofPlatform().start(() -> {
                try {
                    for (; ; ) {
                        cq.call();
                        if (calls.incrementAndGet() == 100) {
                            looping.countDown();
                        }
                    }
                } catch (Throwable t) {
                    ended.set(t);
                }
            });
            await(looping);
            cq.close();
            poller.join(60_000);
            assertThat(poller.isAlive()).isFalse();
            assertThat(ended.get()).isInstanceOf(IllegalStateException.class).hasMessage("FakeNative is closed");
            assertThat(cq.violations.get())
                    .as("calls that ran over the destroyed object")
                    .isZero();
            assertThat(cq.isClosed()).isTrue();
            assertThat(cq.inFlight()).isZero();
        }
    }

    @Test
    void closeWaitsForTheCallInFlightThenDestroys() throws Exception {
        FakeNative qp = new FakeNative();
        qp.insideCall = new CountDownLatch(1);
        qp.finishCall = new CountDownLatch(1);
        Thread caller = Thread.ofPlatform().start(qp::call);
        await(qp.insideCall);
        Thread closer = Thread.ofPlatform().start(qp::close);
        while (!qp.isClosing()) {
            Thread.onSpinWait();
        }
        // new calls are refused at once, while the one in flight still holds the object
        qp.insideCall = null;
        assertThatThrownBy(qp::call).isInstanceOf(IllegalStateException.class).hasMessage("FakeNative is closed");
        assertThat(qp.freed).isFalse();
        assertThat(qp.isClosed()).isFalse();
        qp.finishCall.countDown();
        caller.join(60_000);
        closer.join(60_000);
        assertThat(qp.freed).isTrue();
        assertThat(qp.isClosed()).isTrue();
        assertThat(qp.violations.get()).isZero();
    }

    @Test
    void aSecondCloseWhileTheFirstWaitsIsANoOpOnceItIsDone() throws Exception {
        FakeNative cq = new FakeNative();
        cq.insideCall = new CountDownLatch(1);
        cq.finishCall = new CountDownLatch(1);
        Thread caller = Thread.ofPlatform().start(cq::call);
        await(cq.insideCall);
        Thread first = Thread.ofPlatform().start(cq::close);
        while (!cq.isClosing()) {
            Thread.onSpinWait();
        }
        AtomicReference<Throwable> secondFailed = new AtomicReference<>();
        Thread second = Thread.ofPlatform().start(() -> {
            try {
                cq.close();
            } catch (Throwable t) {
                secondFailed.set(t);
            }
        });
        cq.finishCall.countDown();
        caller.join(60_000);
        first.join(60_000);
        second.join(60_000);
        assertThat(secondFailed.get()).isNull();
        assertThat(cq.isClosed()).isTrue();
        assertThat(cq.violations.get()).isZero();
    }

    @Test
    void aFailedDestroyReopensTheObject() {
        OwnershipTest.Fake cq = new OwnershipTest.Fake("cq");
        cq.failDestroy = true;
        assertThatThrownBy(cq::close).isInstanceOf(VerbsException.class);
        assertThat(cq.isClosing()).isFalse();
        cq.acquire(); // usable again
        cq.release();
        cq.failDestroy = false;
        cq.close();
        assertThatThrownBy(cq::acquire)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("cq is closed");
    }

    @Test
    void aChildCreatedWhileItsParentClosesIsDestroyedAgain() throws Exception {
        FakeNative pd = new FakeNative();
        pd.insideCall = new CountDownLatch(1);
        pd.finishCall = new CountDownLatch(1);
        AtomicReference<Throwable> childResult = new AtomicReference<>();
        AtomicReference<OwnershipTest.Fake> child = new AtomicReference<>();
        // a creation in flight on the parent (e.g. ibv_reg_mr) ...
        Thread creator = Thread.ofPlatform().start(() -> {
            pd.call();
            try {
                child.set(new OwnershipTest.Fake("mr", pd));
            } catch (Throwable t) {
                childResult.set(t);
            }
        });
        await(pd.insideCall);
        Thread closer = Thread.ofPlatform().start(pd::close);
        while (!pd.isClosing()) {
            Thread.onSpinWait();
        }
        pd.finishCall.countDown();
        creator.join(60_000);
        closer.join(60_000);
        // ... finishes after the parent started closing: the child cannot attach and is undone
        assertThat(childResult.get()).isInstanceOf(IllegalStateException.class).hasMessage("FakeNative is closed");
        assertThat(child.get()).isNull();
        assertThat(pd.isClosed()).isTrue();
    }

    @Test
    void acquireAndReleaseAllocateNothing() {
        FakeNative mr = new FakeNative();
        var bean = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().threadId();
        for (int i = 0; i < 100_000; i++) { // warm up
            mr.acquire();
            mr.release();
        }
        long before = bean.getThreadAllocatedBytes(tid);
        for (int i = 0; i < 1_000_000; i++) {
            mr.acquire();
            mr.release();
        }
        long after = bean.getThreadAllocatedBytes(tid);
        assertThat(after - before)
                .as("bytes allocated by 10^6 acquire/release pairs")
                .isLessThan(1024);
        mr.close();
    }
}
