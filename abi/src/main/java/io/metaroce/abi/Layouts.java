package io.metaroce.abi;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** Helpers to spell the ABI structs as named MemoryLayouts (offsets chain from field to field). */
public final class Layouts {
    private Layouts() {}

    public static MemoryLayout u8(String name) {
        return JAVA_BYTE.withName(name);
    }

    public static MemoryLayout u16(String name) {
        return JAVA_SHORT.withName(name);
    }

    public static MemoryLayout u32(String name) {
        return JAVA_INT.withName(name);
    }

    public static MemoryLayout u64(String name) {
        return JAVA_LONG.withName(name);
    }

    public static MemoryLayout bytes(String name, long count) {
        return MemoryLayout.sequenceLayout(count, JAVA_BYTE).withName(name);
    }

    public static MemoryLayout pad(String name, long count) {
        return MemoryLayout.paddingLayout(count).withName(name);
    }

    /** The byte offset of {@code field}, as an int (every ABI struct is far smaller than 2 GiB). */
    public static int off(StructLayout layout, String field) {
        return Math.toIntExact(layout.byteOffset(MemoryLayout.PathElement.groupElement(field)));
    }
}
