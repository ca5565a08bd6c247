package io.metaroce.nic.port;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * One port made of several, one per network plane (docs/spec/transport.md, "Multi-plane QPs"): a
 * multi-plane device's engine polls every plane's port and sends each frame out of the port of its
 * plane, {@link #planeOf the entropy mod the plane count}. Everything above the port speaks plane
 * 0's addresses: a frame to a peer's plane-0 address {@code d} leaves plane {@code k} to
 * {@code d + offset(k)}, and a frame that arrives on plane {@code k} from {@code s} is handed up as
 * from {@code s - offset(k)}, where {@code offset(k)} is this host's plane-k address minus its
 * plane-0 address. Hosts are therefore numbered alike on every plane (the same offset between
 * planes on every host, as rail numbering does: 198.18.1.h and 198.18.2.h). IPv4 only.
 *
 * <p>The frame being built is claimed from the plane the next frame most likely takes (the one
 * after the last committed, since the transport sprays its paths round robin and paths alternate
 * planes); a commit for another plane copies it there. The counters of the whole port
 * ({@link #counters}) hold the engine's receive checks and the sum of the planes' frame counters;
 * {@link #planeCounters} gives each plane's own. Engine thread only, allocation-free.
 */
public final class PlanePort implements Port {
    private final Port[] planes;
    private final int[] offsets;
    private final PortCounters counters = new PortCounters();
    /** The planes' frame counters summed at the last {@link #sync}, to add only what changed. */
    private final long[] summed = new long[SUMMED];

    private final PlaneHandler[] handlers;
    private final int maxFrame;
    private final boolean readsEcn;
    /** The plane the current claim was taken from, and the last one committed to. */
    private int claimedPlane;

    private MemorySegment claimed;
    private int lastPlane;

    private static final int SUMMED = 13;

    /**
     * A port over {@code planes} (2 or more, each open; plane 0 first, its address the device's),
     * each closed with this one.
     */
    public PlanePort(Port... planes) {
        if (planes.length < 2) {
            throw new IllegalArgumentException("a multi-plane port needs at least 2 planes, got " + planes.length);
        }
        this.planes = planes.clone();
        this.offsets = new int[planes.length];
        this.handlers = new PlaneHandler[planes.length];
        int max = Integer.MAX_VALUE;
        boolean ecn = true;
        for (int k = 0; k < planes.length; k++) {
            if (io.metaroce.abi.IpAddr.isV6(planes[k].localIp())) {
                throw new IllegalArgumentException("multi-plane devices serve IPv4 addresses only");
            }
            if (planes[k].localPort() != planes[0].localPort()) {
                throw new IllegalArgumentException("every plane serves the same UDP port");
            }
            offsets[k] = planes[k].localIp() - planes[0].localIp();
            for (int j = 0; j < k; j++) {
                if (offsets[j] == offsets[k]) {
                    throw new IllegalArgumentException(
                            "planes " + j + " and " + k + " serve the same address; each plane needs its own");
                }
            }
            handlers[k] = new PlaneHandler(offsets[k]);
            max = Math.min(max, planes[k].maxFrame());
            ecn &= planes[k].readsEcn();
        }
        this.maxFrame = max;
        this.readsEcn = ecn;
        this.lastPlane = planes.length - 1;
    }

    /** The plane of a frame with {@code entropy} among {@code planes}: the entropy mod the count. */
    public static int planeOf(int entropy, int planes) {
        return (entropy & 0xffff) % planes;
    }

    /** The address a peer has on plane {@code plane}, given its plane-0 address. */
    public int peerAddress(int plane0Address, int plane) {
        return plane0Address + offsets[plane];
    }

    @Override
    public int planes() {
        return planes.length;
    }

    @Override
    public PortCounters planeCounters(int plane) {
        return planes[plane].counters();
    }

    /** The port of plane {@code k}. */
    public Port plane(int k) {
        return planes[k];
    }

    @Override
    public boolean readsEcn() {
        return readsEcn;
    }

    /** The smallest of the planes' bursts (a path stays on one plane). */
    @Override
    public int sendBurst() {
        int b = Integer.MAX_VALUE;
        for (Port p : planes) {
            b = Math.min(b, p.sendBurst());
        }
        return b;
    }

    @Override
    public int poll(FrameHandler handler) {
        int n = 0;
        for (int k = 0; k < planes.length; k++) {
            PlaneHandler h = handlers[k];
            h.up = handler;
            n += planes[k].poll(h);
            h.up = null;
        }
        sync();
        return n;
    }

    @Override
    public MemorySegment claim() {
        int k = lastPlane + 1 == planes.length ? 0 : lastPlane + 1;
        claimedPlane = k;
        claimed = planes[k].claim();
        return claimed;
    }

    @Override
    public ByteBuffer claimedView() {
        return planes[claimedPlane].claimedView();
    }

    @Override
    public void commit(int length, int dstIp, int dstPort, int entropy) {
        int k = planeOf(entropy, planes.length);
        if (k != claimedPlane) {
            // Built in another plane's buffer: copy it over. That claim stays uncommitted, which
            // the next claim of that plane hands out again.
            MemorySegment.copy(claimed, 0, planes[k].claim(), 0, length);
        }
        planes[k].commit(length, dstIp + offsets[k], dstPort, entropy);
        lastPlane = k;
    }

    @Override
    public int flush() {
        int n = 0;
        for (Port p : planes) {
            n += p.flush();
        }
        sync();
        return n;
    }

    @Override
    public int maxFrame() {
        return maxFrame;
    }

    @Override
    public int localIp() {
        return planes[0].localIp();
    }

    @Override
    public int localPort() {
        return planes[0].localPort();
    }

    @Override
    public int fd() {
        return planes[0].fd();
    }

    @Override
    public int[] fds() {
        int count = 0;
        for (Port p : planes) {
            count += p.fds().length;
        }
        int[] all = new int[count];
        int i = 0;
        for (Port p : planes) {
            for (int fd : p.fds()) {
                all[i++] = fd;
            }
        }
        return all;
    }

    @Override
    public PortCounters counters() {
        return counters;
    }

    /** Adds to the whole port's frame counters what the planes counted since the last call. */
    private void sync() {
        long rxFrames = 0, txFrames = 0, txErrors = 0, rxTruncated = 0, rxShort = 0, rxBadChecksum = 0;
        long rxBatches = 0, txBatches = 0, txKicks = 0, txKicksBusy = 0, rxKicks = 0, txCoalesced = 0, rxCoalesced = 0;
        for (Port p : planes) {
            PortCounters c = p.counters();
            rxFrames += c.rxFrames;
            txFrames += c.txFrames;
            txErrors += c.txErrors;
            rxTruncated += c.rxTruncated;
            rxShort += c.rxShort;
            rxBadChecksum += c.rxBadChecksum;
            rxBatches += c.rxBatches;
            txBatches += c.txBatches;
            txKicks += c.txKicks;
            txKicksBusy += c.txKicksBusy;
            rxKicks += c.rxKicks;
            txCoalesced += c.txCoalesced;
            rxCoalesced += c.rxCoalesced;
        }
        PortCounters c = counters;
        c.rxFrames += delta(0, rxFrames);
        c.txFrames += delta(1, txFrames);
        c.txErrors += delta(2, txErrors);
        c.rxTruncated += delta(3, rxTruncated);
        c.rxShort += delta(4, rxShort);
        c.rxBadChecksum += delta(5, rxBadChecksum);
        c.rxBatches += delta(6, rxBatches);
        c.txBatches += delta(7, txBatches);
        c.txKicks += delta(8, txKicks);
        c.txKicksBusy += delta(9, txKicksBusy);
        c.rxKicks += delta(10, rxKicks);
        c.txCoalesced += delta(11, txCoalesced);
        c.rxCoalesced += delta(12, rxCoalesced);
    }

    private long delta(int i, long sum) {
        long d = sum - summed[i];
        summed[i] = sum;
        return d;
    }

    @Override
    public void close() {
        RuntimeException first = null;
        for (Port p : planes) {
            try {
                p.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Hands a plane's frames up with the sender's plane-0 address. */
    private static final class PlaneHandler implements FrameHandler {
        private final int offset;
        FrameHandler up;

        PlaneHandler(int offset) {
            this.offset = offset;
        }

        @Override
        public void onFrame(MemorySegment frame, ByteBuffer view, int length, int srcIp, int srcPort, int ecn) {
            up.onFrame(frame, view, length, srcIp - offset, srcPort, ecn);
        }
    }
}
