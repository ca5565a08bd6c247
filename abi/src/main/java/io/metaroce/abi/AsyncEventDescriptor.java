package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_async_event} of mrce_abi.h: GET_ASYNC_EVENT response. */
public final class AsyncEventDescriptor {
    public static final String C_NAME = "mrce_async_event";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("event_type"), Layouts.u32("element"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_EVENT_TYPE = Layouts.off(LAYOUT, "event_type");
    public static final int OFF_ELEMENT = Layouts.off(LAYOUT, "element");

    private AsyncEventDescriptor() {}
}
