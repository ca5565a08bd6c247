package io.metaroce.nic.model;

import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Every MR of the daemon by key. Key = random bits above the index | table index << 8 | a random
 * 7-bit tag (never the slot's previous one) | 0x80 for the rkey: a stale key of a freed slot does
 * not match its next user, and a key cannot be guessed from another (docs/spec/transport.md,
 * security). Control threads publish and remove entries (under the table lock); the engine looks
 * them up lock-free.
 */
public final class MrTable {
    private final AtomicReferenceArray<Mr> slots;
    private final byte[] generation;
    private final int indexMask;
    /** Draws the keys' random bits; null: sequential keys (tests that need the old numbering). */
    private final java.util.Random random;

    private int nextSlot;

    public MrTable(int capacity) {
        this(capacity, new java.security.SecureRandom());
    }

    /** With {@code random} for the keys' random bits (null: sequential keys, for tests). */
    public MrTable(int capacity, java.util.Random random) {
        this.random = random;
        if (capacity > (1 << 23)) {
            throw new IllegalArgumentException("capacity " + capacity);
        }
        slots = new AtomicReferenceArray<>(capacity);
        generation = new byte[capacity];
        indexMask = capacity <= 1 ? 0 : -1 >>> Integer.numberOfLeadingZeros(capacity - 1);
    }

    /** Allocates keys and publishes a new MR; returns null when the table is full. */
    public synchronized Mr register(int handle, Pd pd, int pid, long addr, long length, long iova, int access) {
        int n = slots.length();
        int searchFrom = random != null ? random.nextInt(n) : nextSlot;
        for (int k = 0; k < n; k++) {
            int i = (searchFrom + k) % n;
            if (slots.get(i) == null) {
                int gen;
                if (random == null) { // sequential (tests): the next generation, the next slot
                    gen = (generation[i] + 1) & 0x7f;
                    nextSlot = i + 1;
                } else {
                    do {
                        gen = 1 + random.nextInt(0x7f);
                    } while (gen == generation[i]);
                }
                generation[i] = (byte) gen;
                int high = random == null ? 0 : random.nextInt() & ~((indexMask << 8) | 0xff);
                int lkey = high | (i << 8) | gen;
                Mr mr = new Mr(handle, pd, pid, addr, length, iova, access, lkey, lkey | 0x80, i);
                slots.set(i, mr);
                return mr;
            }
        }
        return null;
    }

    public synchronized void remove(Mr mr) {
        slots.compareAndSet(mr.tableIndex, mr, null);
    }

    /** The MR whose lkey is {@code lkey}, or null. */
    public Mr byLkey(int lkey) {
        int i = (lkey >>> 8) & indexMask;
        if (i >= slots.length() || (lkey & 0x80) != 0) {
            return null;
        }
        Mr mr = slots.get(i);
        return mr != null && mr.lkey == lkey ? mr : null;
    }

    /** The MR whose rkey is {@code rkey}, or null. */
    public Mr byRkey(int rkey) {
        int i = (rkey >>> 8) & indexMask;
        if (i >= slots.length()) {
            return null;
        }
        Mr mr = slots.get(i);
        return mr != null && mr.rkey == rkey ? mr : null;
    }
}
