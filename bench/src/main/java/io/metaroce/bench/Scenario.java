package io.metaroce.bench;

import io.metaroce.nic.sim.SimFabric;

/**
 * An impairment of the fabric. The impaired link is the one the go-back-N baseline's single path
 * takes (from its entropy and the fabric's link selector; {@link BenchRun} checks it against the
 * links' counters), so a one-path transport is hit the way an ECMP flow on that link would be, and
 * the same link is impaired for every transport.
 */
public enum Scenario {
    NO_LOSS("no loss"),
    LOSS_1PCT_ONE("1 % loss on one path"),
    LOSS_1PCT_ALL("1 % loss on all paths"),
    BLACKHOLE_ONE("one path black-holed mid-run"),
    SLOW_ONE("one path 4x slower");

    public final String title;

    Scenario(String title) {
        this.title = title;
    }

    /** Sets the impairment of link {@code impaired} up before traffic starts. */
    void before(SimFabric fabric, long rateBitsPerSec, int impaired) {
        switch (this) {
            case LOSS_1PCT_ONE -> fabric.link(impaired).lossRate(0.01);
            case LOSS_1PCT_ALL -> fabric.forEachLink(l -> l.lossRate(0.01));
            case SLOW_ONE -> fabric.link(impaired).rateBitsPerSec(rateBitsPerSec / 4);
            default -> {}
        }
    }

    /** Whether {@link #midRun} does something. */
    boolean hasEvent() {
        return this == BLACKHOLE_ONE;
    }

    /** Applied to link {@code impaired} at the middle of the measured interval. */
    void midRun(SimFabric fabric, int impaired) {
        if (this == BLACKHOLE_ONE) {
            fabric.link(impaired).blackhole(true);
        }
    }

    /** The share of the nominal aggregate capacity the fabric offers over the measured interval. */
    double available(int links) {
        return switch (this) {
            case BLACKHOLE_ONE -> (links - 0.5) / links;
            case SLOW_ONE -> (links - 0.75) / links;
            default -> 1.0;
        };
    }

    static Scenario parse(String s) {
        return switch (s) {
            case "none", "no-loss" -> NO_LOSS;
            case "loss-one" -> LOSS_1PCT_ONE;
            case "loss-all" -> LOSS_1PCT_ALL;
            case "blackhole" -> BLACKHOLE_ONE;
            case "slow" -> SLOW_ONE;
            default ->
                throw new IllegalArgumentException(
                        "scenario " + s + ": one of no-loss, loss-one, loss-all, blackhole, slow");
        };
    }
}
