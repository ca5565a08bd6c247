package io.metaroce.nic.port.xdp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * An {@link AfXdpPort} over one socket made of plain memory (UMEM and rings), the test playing the
 * kernel's side: it takes chunks from the fill ring, writes a frame into them as one or more
 * buffers and produces their RX descriptors (XDP_PKT_CONTD on all but a frame's last), as
 * multi-buffer AF_XDP does. No socket, no program, no privilege.
 */
final class XskRxRig implements AutoCloseable {
    static final int CHUNK = XskSocket.CHUNK;
    static final int HEADROOM = XskSys.XDP_PACKET_HEADROOM;
    static final int CONTD = XskSys.XDP_PKT_CONTD;
    private static final long PROD = 0;
    private static final long CONS = 64;
    private static final long FLAGS = 128;
    private static final long DESC = 192;
    private static final int SIZE = AfXdpPort.RING_SIZE;

    final AfXdpPort port;
    final MemorySegment umem;
    private final MemorySegment fillMem;
    private final MemorySegment rxMem;
    private int laggedCons = -1;

    /** One frame the port delivered, copied out. */
    record Frame(byte[] payload, int srcIp, int srcPort, int ecn) {}

    /** An RX descriptor the kernel side made and has not produced yet. */
    record Desc(long addr, int len, int options) {}

    XskRxRig(int maxFrame, int batch) {
        this(0xc6120001, maxFrame, batch);
    }

    /** Serving {@code localIp} (an IPv6 handle: the port parses IPv6 frames). */
    XskRxRig(int localIp, int maxFrame, int batch) {
        Arena arena = Arena.ofShared();
        umem = arena.allocate(AfXdpPort.umemBytes(), CHUNK);
        fillMem = ring(arena, XskRing.ADDR_SIZE);
        rxMem = ring(arena, XskRing.XDP_DESC_SIZE);
        XskSocket s = new XskSocket(
                0,
                umem,
                new XskRing(fillMem, PROD, CONS, FLAGS, DESC, SIZE, XskRing.ADDR_SIZE, true),
                new XskRing(ring(arena, XskRing.ADDR_SIZE), PROD, CONS, FLAGS, DESC, SIZE, XskRing.ADDR_SIZE, false),
                new XskRing(rxMem, PROD, CONS, FLAGS, DESC, SIZE, XskRing.XDP_DESC_SIZE, false),
                new XskRing(
                        ring(arena, XskRing.XDP_DESC_SIZE),
                        PROD,
                        CONS,
                        FLAGS,
                        DESC,
                        SIZE,
                        XskRing.XDP_DESC_SIZE,
                        true));
        port = new AfXdpPort(
                localIp, 4793, 0, maxFrame, batch, null, new AfXdpPort.Bound(arena, null, new XskSocket[] {s}));
    }

    private static MemorySegment ring(Arena arena, int entry) {
        return arena.allocate(DESC + (long) SIZE * entry, 64);
    }

    /** Chunks the port has given to the kernel (fill ring entries not taken yet). */
    int fillEntries() {
        return fillMem.get(ValueLayout.JAVA_INT, PROD) - fillMem.get(ValueLayout.JAVA_INT, CONS);
    }

    /** RX descriptors produced and not consumed by the port yet. */
    int rxPending() {
        return rxMem.get(ValueLayout.JAVA_INT, PROD) - rxMem.get(ValueLayout.JAVA_INT, CONS);
    }

    /**
     * From now on the chunks taken from the fill ring are not published as consumed (the kernel's
     * cached consumer index) until {@link #publishFillConsumer}.
     */
    void holdFillConsumer() {
        laggedCons = fillMem.get(ValueLayout.JAVA_INT, CONS);
    }

    /** Publishes the fill ring's consumer index held back since {@link #holdFillConsumer}. */
    void publishFillConsumer() {
        fillMem.set(ValueLayout.JAVA_INT, CONS, laggedCons);
        laggedCons = -1;
    }

    private long takeChunk() {
        int cons = laggedCons >= 0 ? laggedCons : fillMem.get(ValueLayout.JAVA_INT, CONS);
        if (fillMem.get(ValueLayout.JAVA_INT, PROD) == cons) {
            throw new AssertionError("no chunk in the fill ring: the port did not give its chunks back");
        }
        long addr = fillMem.get(ValueLayout.JAVA_LONG, DESC + (long) (cons & (SIZE - 1)) * XskRing.ADDR_SIZE);
        if (laggedCons >= 0) {
            laggedCons = cons + 1;
        } else {
            fillMem.set(ValueLayout.JAVA_INT, CONS, cons + 1);
        }
        if (addr % CHUNK != 0 || addr < 0 || addr + CHUNK > (long) AfXdpPort.RX_CHUNKS * CHUNK) {
            throw new AssertionError("the fill ring gave address " + addr);
        }
        return addr;
    }

    /**
     * Writes {@code frame} into fresh chunks, piece {@code i} ({@code pieces[i]} bytes, the last
     * piece the rest) at {@code offsets[i]} into its chunk; returns the descriptors, not produced.
     */
    List<Desc> write(byte[] frame, int[] pieces, int[] offsets) {
        List<Desc> out = new ArrayList<>();
        int at = 0;
        for (int i = 0; i < pieces.length; i++) {
            int len = i == pieces.length - 1 ? frame.length - at : pieces[i];
            long chunk = takeChunk();
            long addr = chunk + offsets[i];
            if (offsets[i] + len > CHUNK) {
                throw new IllegalArgumentException("piece of " + len + " bytes at " + offsets[i]);
            }
            MemorySegment.copy(MemorySegment.ofArray(frame), at, umem, addr, len);
            out.add(new Desc(addr, len, i == pieces.length - 1 ? 0 : CONTD));
            at += len;
        }
        return out;
    }

    void produce(Desc d) {
        int prod = rxMem.get(ValueLayout.JAVA_INT, PROD);
        long slot = DESC + (long) (prod & (SIZE - 1)) * XskRing.XDP_DESC_SIZE;
        rxMem.set(ValueLayout.JAVA_LONG, slot, d.addr());
        rxMem.set(ValueLayout.JAVA_INT, slot + 8, d.len());
        rxMem.set(ValueLayout.JAVA_INT, slot + 12, d.options());
        rxMem.set(ValueLayout.JAVA_INT, PROD, prod + 1);
    }

    /** Polls once; the frames delivered, copied out and checked against their views. */
    List<Frame> poll() {
        List<Frame> got = new ArrayList<>();
        port.poll((MemorySegment frame, ByteBuffer view, int length, int srcIp, int srcPort, int ecn) -> {
            if (view.position() != 0 || view.limit() != length || frame.byteSize() < length) {
                throw new AssertionError(
                        "frame of " + length + " bytes: view " + view + ", segment " + frame.byteSize());
            }
            byte[] b = new byte[length];
            MemorySegment.copy(frame, ValueLayout.JAVA_BYTE, 0, b, 0, length);
            byte[] v = new byte[length];
            view.get(0, v);
            if (!java.util.Arrays.equals(v, b)) {
                throw new AssertionError("the view and the segment of a frame differ");
            }
            got.add(new Frame(b, srcIp, srcPort, ecn));
        });
        return got;
    }

    /** Polls until the RX ring is empty and a poll finds nothing, then once more (every chunk then back); at most {@code max} polls. */
    List<Frame> drain(int max) {
        List<Frame> got = new ArrayList<>();
        for (int i = 0; i < max; i++) {
            List<Frame> f = poll();
            got.addAll(f);
            if (f.isEmpty() && rxPending() == 0) {
                // the chunks of what the last poll consumed are held until the next one
                if (!poll().isEmpty()) {
                    throw new AssertionError("a frame out of an empty RX ring");
                }
                return got;
            }
        }
        throw new AssertionError("the port did not drain the RX ring in " + max + " polls (" + rxPending() + " left)");
    }

    /** A frame as the wire has it: Ethernet, IPv4 ({@code ihlWords} 32-bit words), UDP, payload, padding. */
    static byte[] frame(
            int etherType,
            int ihlWords,
            int tos,
            int srcIp,
            int srcPort,
            int udpLength,
            byte[] payload,
            int padding,
            int ipHeaderLength) {
        int ipLen = ipHeaderLength;
        byte[] f = new byte[14 + ipLen + 8 + payload.length + padding];
        ByteBuffer b = ByteBuffer.wrap(f);
        b.putShort(12, (short) etherType);
        b.put(14, (byte) (0x40 | (ihlWords & 0x0f)));
        b.put(15, (byte) tos);
        b.putShort(16, (short) (ipLen + 8 + payload.length));
        b.put(23, (byte) 17);
        b.putInt(26, srcIp);
        b.putInt(30, 0xc6120001);
        b.putShort(14 + ipLen, (short) srcPort);
        b.putShort(14 + ipLen + 2, (short) 4793);
        b.putShort(14 + ipLen + 4, (short) udpLength);
        System.arraycopy(payload, 0, f, 14 + ipLen + 8, payload.length);
        return f;
    }

    @Override
    public void close() {
        port.close();
    }
}
