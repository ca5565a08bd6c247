package io.metaroce.nic.model;

/** A protection domain. {@code users} (MRs and QPs) is guarded by the owning session's lock. */
public final class Pd {
    public final int handle;
    public final long sessionId;
    public int users;

    public Pd(int handle, long sessionId) {
        this.handle = handle;
        this.sessionId = sessionId;
    }
}
