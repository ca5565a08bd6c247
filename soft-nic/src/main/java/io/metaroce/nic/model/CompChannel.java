package io.metaroce.nic.model;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** A completion channel: an EFD_SEMAPHORE eventfd the daemon writes 1 to per CQ notification. */
public final class CompChannel {
    private static final MemorySegment ONE = Arena.global().allocateFrom(ValueLayout.JAVA_LONG, 1L);

    public final int handle;
    public final int eventFd;
    public int cqUsers;
    public long signals;
    /** Notifications raised on this channel (the CQ ring's notify_seq). Engine thread only. */
    private int seq;

    public CompChannel(int handle, int eventFd) {
        this.handle = handle;
        this.eventFd = eventFd;
    }

    /** The number of the next notification on this channel. */
    public int nextSeq() {
        return ++seq;
    }

    /** Called by the engine when an armed CQ got a matching completion. */
    public void signal() {
        signals++;
        LibC.write(eventFd, ONE, 8);
    }
}
