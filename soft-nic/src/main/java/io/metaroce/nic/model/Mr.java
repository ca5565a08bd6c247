package io.metaroce.nic.model;

/**
 * A registered memory region: immutable once published in the {@link MrTable}, except for
 * {@link #revoke()}. {@code iova} is the address the keys are used with; {@code addr} where those
 * bytes live in address space {@code pid} (a {@link io.metaroce.nic.dma.ProcessMemory} id).
 */
public final class Mr {
    public final int handle;
    public final Pd pd;
    /** The owner's address space: a {@link io.metaroce.nic.dma.ProcessMemory} id, not the OS PID. */
    public final int pid;

    public final long addr;
    public final long length;
    public final long iova;
    public final int access;
    public final int lkey;
    public final int rkey;
    final int tableIndex;
    /** Set by the engine thread when the region is deregistered; read only by that thread. */
    private boolean revoked;
    /** The daemon's mapping of the region's memfd (SHARE_MR), closed with the region; engine thread. */
    private AutoCloseable shared;

    Mr(int handle, Pd pd, int pid, long addr, long length, long iova, int access, int lkey, int rkey, int tableIndex) {
        this.handle = handle;
        this.pd = pd;
        this.pid = pid;
        this.addr = addr;
        this.length = length;
        this.iova = iova;
        this.access = access;
        this.lkey = lkey;
        this.rkey = rkey;
        this.tableIndex = tableIndex;
    }

    /**
     * Engine thread only: no copy to or from this region happens from now on, even for work
     * requests validated against it before (their copies fail with a protection error).
     */
    public void revoke() {
        revoked = true;
        closeShared();
    }

    /**
     * Engine thread only: {@code mapping} (the daemon's mapping of the memfd the application backs
     * this region with) is closed when the region is revoked, and at once if it already was or if
     * the region has one. Returns whether the region took it.
     */
    public boolean attachShared(AutoCloseable mapping) {
        if (revoked || shared != null) {
            close(mapping);
            return false;
        }
        shared = mapping;
        return true;
    }

    private void closeShared() {
        AutoCloseable m = shared;
        shared = null;
        if (m != null) {
            close(m);
        }
    }

    private static void close(AutoCloseable m) {
        try {
            m.close();
        } catch (Exception e) {
            throw new IllegalStateException("unmapping a shared region", e);
        }
    }

    /** Engine thread only: false once {@link #revoke()} ran. */
    public boolean live() {
        return !revoked;
    }

    /**
     * True when [va, va + len) lies inside this region. Addresses and the length are unsigned
     * 64-bit and the test never adds, so it cannot overflow: an implicit on-demand-paging region
     * (iova 0, length 2^64 - 1) holds every range that does not wrap past the top.
     */
    public boolean contains(long va, long len) {
        long start = va - iova; // wraps below iova to a huge unsigned offset, refused next
        return len >= 0 && Long.compareUnsigned(start, length) <= 0 && Long.compareUnsigned(len, length - start) <= 0;
    }

    /** The application address of iova {@code va}. */
    public long translate(long va) {
        return addr + (va - iova);
    }
}
