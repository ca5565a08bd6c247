package io.metaroce.nic.engine;

import static io.metaroce.abi.AbiConstants.MRCE_DB_BITS_OFF;
import static io.metaroce.abi.AbiConstants.MRCE_DB_SLEEPING_OFF;
import static io.metaroce.abi.AbiConstants.MRCE_DB_SUMMARY_OFF;
import static io.metaroce.abi.AbiConstants.MRCE_DB_SUMMARY_WORDS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * The doorbell pages of an engine's sessions (docs/spec/control-protocol.md, section 6): where a
 * provider marks the QPs it posted to while their rings asked for a wakeup, so that the engine
 * finds them without reading the rings of every idle QP. Engine thread only.
 */
final class DoorbellPages {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle().withInvokeExactBehavior();
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle().withInvokeExactBehavior();

    private MemorySegment[] pages = new MemorySegment[4];
    private int count;
    /** QPs a bit named, since the engine started (a count for tests and the exit log). */
    long rung;

    void add(MemorySegment page) {
        if (count == pages.length) {
            pages = Arrays.copyOf(pages, count * 2);
        }
        pages[count++] = page;
    }

    /** Forgets {@code page} (its session is gone); the caller unmaps it after this. */
    void remove(MemorySegment page) {
        for (int i = 0; i < count; i++) {
            if (pages[i] == page) {
                pages[i] = pages[--count];
                pages[count] = null;
                return;
            }
        }
    }

    int count() {
        return count;
    }

    /**
     * Takes every bit set in every page and wakes the QPs they name ({@link EngineAgent#awaken}: a
     * bit for an index that holds no QP is dropped), counting them in {@link #rung}.
     */
    void take(EngineAgent engine) {
        for (int p = 0; p < count; p++) {
            MemorySegment page = pages[p];
            for (int w = 0; w < MRCE_DB_SUMMARY_WORDS; w++) {
                long summaryOff = MRCE_DB_SUMMARY_OFF + 8L * w;
                if ((long) LONG.getAcquire(page, summaryOff) == 0) {
                    continue;
                }
                long groups = (long) LONG.getAndSet(page, summaryOff, 0L);
                while (groups != 0) {
                    int g = w * 64 + Long.numberOfTrailingZeros(groups);
                    groups &= groups - 1;
                    long bits = (long) LONG.getAndSet(page, MRCE_DB_BITS_OFF + 8L * g, 0L);
                    while (bits != 0) {
                        int x = g * 64 + Long.numberOfTrailingZeros(bits);
                        bits &= bits - 1;
                        rung++;
                        engine.awaken(x);
                    }
                }
            }
        }
    }

    /**
     * Before a sleep ({@code true}): the providers write the doorbell eventfd after setting a bit;
     * after it ({@code false}) they set the bit only. The caller fences after {@code true} and
     * then takes the bits once more before it sleeps.
     */
    void sleeping(boolean on) {
        for (int p = 0; p < count; p++) {
            INT.setVolatile(pages[p], (long) MRCE_DB_SLEEPING_OFF, on ? 1 : 0);
        }
    }
}
