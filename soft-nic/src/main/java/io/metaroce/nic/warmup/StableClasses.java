package io.metaroce.nic.warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Loads, at daemon start, the JDK classes that code off the data path loads late and whose loading
 * throws compiled data-path code away.
 *
 * <p>The JIT compiles the data path (every {@code MemorySegment} access of the wire format, the
 * rings, the DMA) on the assumption that the segment and var handle classes loaded so far are all
 * there are (class hierarchy analysis). A class loaded later that extends one of them breaks the
 * assumption, and the JVM deoptimizes every method compiled on it, at once. Two such loads came
 * with an application's first connection, after {@code ready} (seen with {@code
 * -XX:+PrintCompilation}, {@code -Xlog:class+load} and {@code -XX:LogClassLoadingCauseFor}):
 *
 * <ul>
 *   <li>{@code IndirectVarHandle}, when the control channel first stored a pointer ({@code
 *       ValueLayout.ADDRESS}) into the {@code msghdr} that passes the doorbell fd: 19 compiled
 *       methods, the segment accessors among them;
 *   <li>{@code HeapMemorySegmentImpl} and its {@code OfByte}, when the first route lookup copied a
 *       MAC address out of a netlink reply into a {@code byte[]}: 123 compiled methods, the
 *       requester, the responder, the wire format and the duty cycle among them.
 * </ul>
 *
 * With {@code --warmup} that was all of the warm-up's C2 code, thrown away at the first packet;
 * without it, whatever the JIT had compiled by then. Loading these classes first (a heap segment
 * of each primitive array type, a pointer stored and read through {@code ADDRESS}) costs well
 * under a millisecond and leaves nothing behind.
 */
public final class StableClasses {
    private StableClasses() {}

    private static boolean loaded;

    /** Loads them, once per JVM; before the warm-up and before the engine runs. */
    public static synchronized void load() {
        if (loaded) {
            return;
        }
        loaded = true;
        // HeapMemorySegmentImpl and one subclass per array type
        MemorySegment.ofArray(new byte[8]).get(ValueLayout.JAVA_BYTE, 0);
        MemorySegment.ofArray(new char[4]).get(ValueLayout.JAVA_CHAR, 0);
        MemorySegment.ofArray(new short[4]).get(ValueLayout.JAVA_SHORT, 0);
        MemorySegment.ofArray(new int[2]).get(ValueLayout.JAVA_INT, 0);
        MemorySegment.ofArray(new long[1]).get(ValueLayout.JAVA_LONG, 0);
        MemorySegment.ofArray(new float[2]).get(ValueLayout.JAVA_FLOAT, 0);
        MemorySegment.ofArray(new double[1]).get(ValueLayout.JAVA_DOUBLE, 0);
        try (Arena arena = Arena.ofConfined()) {
            // the ADDRESS var handle: IndirectVarHandle (a filtered view of the long one)
            MemorySegment cell = arena.allocate(ValueLayout.ADDRESS);
            cell.set(ValueLayout.ADDRESS, 0, cell);
            cell.get(ValueLayout.ADDRESS, 0);
            // a segment copied out to an array (the route lookup's MAC address)
            cell.asSlice(0, 1).toArray(ValueLayout.JAVA_BYTE);
        }
    }
}
