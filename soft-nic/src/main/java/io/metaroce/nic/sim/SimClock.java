package io.metaroce.nic.sim;

import java.util.function.LongSupplier;

/** A clock that only moves when told to: the time source of a simulation, in nanoseconds. */
public final class SimClock implements LongSupplier {
    private long nowNs;

    public SimClock(long startNs) {
        this.nowNs = startNs;
    }

    @Override
    public long getAsLong() {
        return nowNs;
    }

    public long nowNs() {
        return nowNs;
    }

    public void advance(long deltaNs) {
        if (deltaNs < 0) {
            throw new IllegalArgumentException("time runs forward: " + deltaNs);
        }
        nowNs += deltaNs;
    }
}
