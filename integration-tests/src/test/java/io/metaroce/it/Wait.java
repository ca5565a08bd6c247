package io.metaroce.it;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Bounded busy-waits: poll a condition until it holds or a deadline passes. */
public final class Wait {

    private static final long POLL_NS = Duration.ofMillis(20).toNanos();

    private Wait() {}

    /** True as soon as {@code condition} holds, false once {@code timeout} passed without it. */
    public static boolean until(Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (condition.getAsBoolean()) {
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            LockSupport.parkNanos(POLL_NS);
        }
    }

    /** Lets {@code period} pass (used only to let traffic flow before an injected fault). */
    public static void let(Duration period) {
        until(period, () -> false);
    }
}
