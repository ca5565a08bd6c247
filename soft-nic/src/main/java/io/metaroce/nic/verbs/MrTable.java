package io.metaroce.nic.verbs;

import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Every MR of the daemon by key. Key = table index << 8 | generation (7 bits) | 0x80 for the rkey,
 * so a stale key of a freed slot does not match its next user. Control threads publish and remove
 * entries (under the table lock); the engine looks them up lock-free.
 */
public final class MrTable {
    private final AtomicReferenceArray<Mr> slots;
    private final byte[] generation;
    private int searchFrom;

    public MrTable(int capacity) {
        if (capacity > (1 << 23)) {
            throw new IllegalArgumentException("capacity " + capacity);
        }
        slots = new AtomicReferenceArray<>(capacity);
        generation = new byte[capacity];
    }

    /** Allocates keys and publishes a new MR; returns null when the table is full. */
    synchronized Mr register(int handle, Pd pd, int pid, long addr, long length, long iova,
            int access) {
        int n = slots.length();
        for (int k = 0; k < n; k++) {
            int i = (searchFrom + k) % n;
            if (slots.get(i) == null) {
                int gen = (generation[i] + 1) & 0x7f;
                generation[i] = (byte) gen;
                int lkey = (i << 8) | gen;
                Mr mr = new Mr(handle, pd, pid, addr, length, iova, access, lkey, lkey | 0x80, i);
                slots.set(i, mr);
                searchFrom = i + 1;
                return mr;
            }
        }
        return null;
    }

    synchronized void remove(Mr mr) {
        slots.compareAndSet(mr.tableIndex, mr, null);
    }

    /** The MR whose lkey is {@code lkey}, or null. */
    public Mr byLkey(int lkey) {
        int i = lkey >>> 8;
        if (i >= slots.length() || (lkey & 0x80) != 0) {
            return null;
        }
        Mr mr = slots.get(i);
        return mr != null && mr.lkey == lkey ? mr : null;
    }

    /** The MR whose rkey is {@code rkey}, or null. */
    public Mr byRkey(int rkey) {
        int i = rkey >>> 8;
        if (i >= slots.length()) {
            return null;
        }
        Mr mr = slots.get(i);
        return mr != null && mr.rkey == rkey ? mr : null;
    }
}
