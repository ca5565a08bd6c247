package io.metaroce.nic.port.xdp;

import io.metaroce.abi.Errno;
import io.metaroce.abi.IpAddr;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.PortCounters;
import io.metaroce.nic.sys.NativeException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Packet I/O over AF_XDP: one socket per RX queue of the interface, each with its own UMEM, and
 * the steering program sending the daemon's UDP ports (data port and entropy ports) to them.
 *
 * <p>UMEM of each socket, in 4 KiB chunks:
 * <pre>
 *   [0, RX_CHUNKS)                   RX: owned by the fill ring / the kernel, or held until the
 *                                    next poll while the engine reads the frame in place
 *   [RX_CHUNKS, + 2 * TX_PAIRS)      TX: pairs of adjacent chunks, so that a claimed frame is
 *                                    8 KiB of contiguous memory; a frame over 4 KiB leaves as two
 *                                    descriptors (XDP_PKT_CONTD, multi-buffer AF_XDP)
 * </pre>
 * Only socket 0 transmits. Frames up to 4 KiB + headers need multi-buffer sockets (XDP_USE_SG,
 * Linux 6.6+) and an interface MTU of at least {@code 28 + maxFrame} (IPv6: {@code 48 + maxFrame}).
 *
 * <p>The port serves the family of its address. Over IPv4 it builds Ethernet, IPv4 (checksum, DF,
 * ECT(0)) and UDP headers (checksum 0, legal on IPv4). Over IPv6 ({@link IpAddr#isV6}) it builds
 * Ethernet, IPv6 (traffic class ECT(0), a flow label derived from the UDP source port, hop limit
 * 64, no extension headers) and UDP headers with the checksum RFC 8200 requires; received IPv6
 * frames must carry UDP as their first next header, consistent lengths and a non-zero UDP
 * checksum ({@link PortCounters#rxBadChecksum} counts checksum 0). The checksum's value is not
 * checked: a virtual interface (veth) hands XDP the frames of a kernel-socket peer with the
 * checksum still to be completed by an offload (only the pseudo-header's sum in the field), and
 * the protocol's own integrity check (the ICRC, docs/spec/transport.md §12) covers every frame.
 * The UDP source port comes from the entropy as in {@link io.metaroce.nic.port.UdpPort}. Received
 * frames are handed over in place when they fit one chunk, else copied into a scratch buffer.
 * Nothing on the data path allocates.
 *
 * <p>Long because the UMEM layout, the four rings, multi-buffer reassembly and both IP families' headers share one frame ownership scheme.
 */
public final class AfXdpPort implements Port {
    private static final Logger LOG = LoggerFactory.getLogger(AfXdpPort.class);
    /** Ethernet 14 + IPv4 20 + UDP 8. */
    public static final int HEADERS = 42;
    /** Ethernet 14 + IPv6 40 + UDP 8. */
    public static final int HEADERS_V6 = 62;
    /** The largest UDP payload over IPv6: two chunks less {@link #HEADERS_V6}. */
    public static final int MAX_FRAME_V6 = 2 * XskSocket.CHUNK - HEADERS_V6;

    static final int RX_CHUNKS = 4096;
    private static final int TX_PAIRS = 1024;
    static final int RING_SIZE = 4096;
    private static final int PAIR = 2 * XskSocket.CHUNK;
    private static final int ECT0 = 0x02;
    private static final int MAX_KICKS = 64;

    public enum Mode {
        SKB,
        NATIVE
    }

    private final int localIp;
    /** Serving IPv6: the family of every frame; the headers' length (42 or 62). */
    private final boolean v6;

    private final int headers;
    private final long localHi;
    private final long localLo;
    private final int localPort;
    private final int entropyPorts;
    private final int maxFrame;
    private final int batch;
    private final L2Resolver resolver;
    private final L2Header l2 = new L2Header();
    private final PortCounters counters = new PortCounters();
    private final Arena arena;
    private final XdpProgram program;
    private final XskSocket[] socks;
    // TX (socket 0)
    private final long txBase;
    private final MemorySegment[] txPayload;
    private final ByteBuffer[] txViews;
    private final int[] txFree;
    private int txFreeCount;
    private final byte[] txDescs;
    private final int[] txQueued;
    private final int[] txQueuedLen;
    private int txCount;
    private int claimed = -1;
    private final MemorySegment dropFrame;
    private final ByteBuffer dropView;
    // RX: per socket, chunks held since the last poll; in-place payload views per chunk
    private final long[][] held;
    private final int[] heldCount;
    // Refills that found the fill ring without room, and the most chunks held at once, per
    // socket: logged on close (see the constructor on why a refill can find no room).
    private final long[] refillsDeferred;
    private final int[] heldMax;
    private final MemorySegment[] rxPayload;
    private final ByteBuffer[] rxViews;
    private final MemorySegment[] scratch;
    private final ByteBuffer[] scratchViews;
    private int nextSock;
    /** Frames received per queue (socket). */
    private final long[] rxPerQueue;
    /** Per socket: inside a frame of more descriptors than a batch, being dropped to its end. */
    private final boolean[] dropping;

    /**
     * @param maxFrame the largest UDP payload (the engine's frame), at most 2 * 4096 - 42
     *     (IPv6: - 62)
     * @param batch frames per RX poll and per TX flush
     */
    public AfXdpPort(
            String ifname,
            int localIp,
            int localPort,
            int entropyPorts,
            int maxFrame,
            int batch,
            Mode mode,
            L2Resolver resolver)
            throws IOException {
        this(
                localIp,
                localPort,
                entropyPorts,
                maxFrame,
                batch,
                resolver,
                bind(ifname, localPort, entropyPorts, maxFrame, batch, mode, IpAddr.isV6(localIp)));
    }

    /** What {@link #bind} made: the sockets with their UMEMs (in {@code arena}) and the program. */
    record Bound(Arena arena, XdpProgram program, XskSocket[] socks) {}

    private static Bound bind(
            String ifname, int localPort, int entropyPorts, int maxFrame, int batch, Mode mode, boolean ipv6)
            throws IOException {
        if (maxFrame + (ipv6 ? HEADERS_V6 : HEADERS) > PAIR || batch < 1 || batch > 256) {
            throw new IllegalArgumentException("maxFrame " + maxFrame + " / batch " + batch);
        }
        int ifindex;
        try {
            ifindex = XskSys.ifindex(ifname);
        } catch (NativeException e) {
            throw new IOException("no interface " + ifname, e);
        }
        int queues = queueCount(ifname);
        Arena arena = Arena.ofShared();
        XdpProgram prog = null;
        XskSocket[] made = new XskSocket[queues];
        try {
            prog = XdpProgram.attach(ifname, ifindex, mode == Mode.NATIVE, localPort, localPort + entropyPorts, ipv6);
            long umemBytes = umemBytes();
            int flags = XskSys.XDP_USE_NEED_WAKEUP | XskSys.XDP_USE_SG | XskSys.XDP_COPY;
            for (int q = 0; q < queues; q++) {
                MemorySegment umem = arena.allocate(umemBytes, XskSocket.CHUNK);
                made[q] = bindRetrying(ifindex, q, umem, flags);
                prog.register(q, made[q].fd);
            }
        } catch (NativeException | RuntimeException | Error e) {
            for (XskSocket s : made) {
                if (s != null) {
                    s.close();
                }
            }
            if (prog != null) {
                prog.close();
            }
            arena.close();
            throw unavailable(e);
        }
        return new Bound(arena, prog, made);
    }

    /** Bytes of each socket's UMEM. */
    static long umemBytes() {
        return (long) (RX_CHUNKS + 2 * TX_PAIRS) * XskSocket.CHUNK;
    }

    /**
     * Over sockets already made; tests pass sockets over plain memory and no program (the
     * reassembly fuzzer plays the kernel's side of the rings).
     */
    AfXdpPort(int localIp, int localPort, int entropyPorts, int maxFrame, int batch, L2Resolver resolver, Bound bound) {
        this.v6 = IpAddr.isV6(localIp);
        this.headers = v6 ? HEADERS_V6 : HEADERS;
        if (maxFrame + headers > PAIR || batch < 1 || batch > 256) {
            throw new IllegalArgumentException("maxFrame " + maxFrame + " / batch " + batch);
        }
        this.localIp = localIp;
        this.localHi = v6 ? IpAddr.hi(localIp) : 0;
        this.localLo = v6 ? IpAddr.lo(localIp) : 0;
        this.localPort = localPort;
        this.entropyPorts = entropyPorts;
        this.maxFrame = maxFrame;
        this.batch = batch;
        this.resolver = resolver;
        this.arena = bound.arena();
        XdpProgram prog = bound.program();
        XskSocket[] made = bound.socks();
        this.program = prog;
        this.socks = made;
        // TX pool
        this.txBase = (long) RX_CHUNKS * XskSocket.CHUNK;
        this.txPayload = new MemorySegment[TX_PAIRS];
        this.txViews = new ByteBuffer[TX_PAIRS];
        this.txFree = new int[TX_PAIRS];
        this.txDescs = new byte[TX_PAIRS];
        for (int i = 0; i < TX_PAIRS; i++) {
            txPayload[i] = socks[0].umem.asSlice(txBase + (long) PAIR * i + headers, maxFrame);
            txViews[i] = txPayload[i].asByteBuffer();
            txFree[txFreeCount++] = TX_PAIRS - 1 - i;
        }
        this.txQueued = new int[batch];
        this.txQueuedLen = new int[batch];
        this.dropFrame = arena.allocate(maxFrame, 64);
        this.dropView = dropFrame.asByteBuffer();
        // RX
        this.rxPerQueue = new long[socks.length];
        this.dropping = new boolean[socks.length];
        // Room for every RX chunk, not one batch: a refill that finds the fill ring without room
        // keeps its chunks held into the next poll, which holds up to a batch more (with one batch
        // of room the engine thread died of an index out of bounds under ib_write_bw on the
        // 4-spine fabric, 2 runs of 18; docs/benchmarks.md, the 4-spine fabric). The ring does
        // lack room now and then although it has a slot for every chunk, most likely because the
        // kernel publishes a flush's RX descriptors before the fill ring's consumer index
        // (xsk_flush): a poll between the two stores holds chunks that the fill ring still counts
        // as its own. It passes at the next poll: 24 deferred refills in 209 thousand frames and
        // at most 38 chunks held in one fabric run, never more than a batch and a few.
        this.held = new long[socks.length][RX_CHUNKS];
        this.heldCount = new int[socks.length];
        this.refillsDeferred = new long[socks.length];
        this.heldMax = new int[socks.length];
        this.rxPayload = new MemorySegment[socks.length * RX_CHUNKS];
        this.rxViews = new ByteBuffer[socks.length * RX_CHUNKS];
        int inPlace = XskSocket.CHUNK - XskSys.XDP_PACKET_HEADROOM - headers;
        for (int q = 0; q < socks.length; q++) {
            for (int c = 0; c < RX_CHUNKS; c++) {
                MemorySegment m = socks[q].umem.asSlice(
                        (long) c * XskSocket.CHUNK + XskSys.XDP_PACKET_HEADROOM + headers, inPlace);
                rxPayload[q * RX_CHUNKS + c] = m;
                rxViews[q * RX_CHUNKS + c] = m.asByteBuffer();
            }
            XskRing fill = socks[q].fill;
            long idx = fill.reserve(RX_CHUNKS);
            for (int c = 0; c < RX_CHUNKS; c++) {
                fill.setAddr(idx + c, (long) c * XskSocket.CHUNK);
            }
            fill.submit();
        }
        this.scratch = new MemorySegment[batch];
        this.scratchViews = new ByteBuffer[batch];
        for (int i = 0; i < batch; i++) {
            scratch[i] = arena.allocate(PAIR, 64);
            scratchViews[i] = scratch[i].asByteBuffer();
        }
    }

    /**
     * The daemon's port: Ethernet next hops from the kernel's routing and neighbour tables through
     * netlink ({@link NetlinkL2Resolver}: ARP's neighbours for IPv4, NDP's for IPv6), so routed
     * peers get their gateway's MAC.
     */
    public static AfXdpPort open(
            String ifname, int localIp, int localPort, int entropyPorts, int maxFrame, int batch, Mode mode)
            throws IOException {
        return new AfXdpPort(ifname, localIp, localPort, entropyPorts, maxFrame, batch, mode, new NetlinkL2Resolver());
    }

    /** Re-binding a queue just after another socket left it can fail with EBUSY for a moment. */
    private static XskSocket bindRetrying(int ifindex, int q, MemorySegment umem, int flags) throws NativeException {
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (true) {
            try {
                return new XskSocket(ifindex, q, umem, RING_SIZE, flags);
            } catch (NativeException e) {
                if (e.errno() != Errno.EBUSY || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.onSpinWait();
            }
        }
    }

    private static IOException unavailable(Throwable e) {
        String reason;
        if (e instanceof NativeException ne && (ne.errno() == 1 || ne.errno() == 13)) {
            reason = "not privileged (needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF, or root): " + e.getMessage();
        } else if (e instanceof NativeException ne && ne.errno() == 97) {
            reason = "the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): " + e.getMessage();
        } else if (e instanceof UnsatisfiedLinkError
                || e instanceof ExceptionInInitializerError
                || e instanceof IllegalArgumentException
                        && String.valueOf(e.getMessage()).contains("libbpf")) {
            reason = "libbpf.so.1 not found (install libbpf1): " + e;
        } else {
            reason = String.valueOf(e.getMessage());
        }
        return new IOException("AF_XDP unavailable: " + reason + "; use --port udp", e);
    }

    /** RX queues of the interface ({@code /sys/class/net/IF/queues/rx-*}), at least 1. */
    static int queueCount(String ifname) throws IOException {
        Path dir = Path.of("/sys/class/net", ifname, "queues");
        if (!Files.isDirectory(dir)) {
            return 1;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return (int) Math.max(
                    1,
                    s.filter(p -> p.getFileName().toString().startsWith("rx-")).count());
        }
    }

    public int queues() {
        return socks.length;
    }

    /** Frames received on queue {@code q} so far (engine thread). */
    public long rxFrames(int q) {
        return rxPerQueue[q];
    }

    @Override
    public boolean readsEcn() {
        return true;
    }

    // ---------------------------------------------------------------- RX

    @Override
    public int poll(FrameHandler handler) {
        int total = 0;
        for (int k = 0; k < socks.length && total == 0; k++) {
            int q = nextSock;
            nextSock = nextSock + 1 == socks.length ? 0 : nextSock + 1;
            total += pollSocket(q, handler);
        }
        return total;
    }

    private int pollSocket(int q, FrameHandler handler) {
        XskSocket s = socks[q];
        refill(q);
        int n = s.rx.peek(batch);
        if (n == 0) {
            return 0;
        }
        int first = s.rx.peekIndex();
        int i = 0;
        // The rest of a frame of more descriptors than a batch: given back up to its last one.
        while (dropping[q] && i < n) {
            dropping[q] = (s.rx.descOptions(first + i) & XskSys.XDP_PKT_CONTD) != 0;
            hold(q, s.rx.descAddr(first + i));
            i++;
        }
        int complete = n;
        while (complete > i && (s.rx.descOptions(first + complete - 1) & XskSys.XDP_PKT_CONTD) != 0) {
            complete--; // the rest of that frame is not in the ring yet
        }
        if (complete == 0 && n == batch) {
            // A whole batch of one frame's descriptors (a kernel makes at most 18): waiting for its
            // end would never see it; it is dropped instead.
            counters.rxFrames++;
            counters.rxTruncated++;
            dropping[q] = true;
            for (; i < n; i++) {
                hold(q, s.rx.descAddr(first + i));
            }
            complete = n;
        } else if (complete < n) {
            s.rx.cancel(n - complete);
            s.rx.refresh(); // else the cached entries never run out and the frame's rest is never seen
        }
        int frames = 0;
        while (i < complete) {
            int descs = 1;
            while ((s.rx.descOptions(first + i + descs - 1) & XskSys.XDP_PKT_CONTD) != 0) {
                descs++;
            }
            deliver(q, first + i, descs, frames, handler);
            for (int d = 0; d < descs; d++) {
                hold(q, s.rx.descAddr(first + i + d));
            }
            i += descs;
            frames++;
        }
        s.rx.release(complete);
        if (frames > 0) {
            counters.rxBatches++;
            rxPerQueue[q] += frames;
        }
        return frames;
    }

    /** Keeps the chunk of a consumed descriptor until the next poll (the engine may still read it). */
    private void hold(int q, long addr) {
        int h = heldCount[q]++;
        held[q][h] = addr - addr % XskSocket.CHUNK;
        if (h >= heldMax[q]) {
            heldMax[q] = h + 1;
        }
    }

    /** Refills of socket {@code q} that found the fill ring without room (see the constructor). */
    long refillsDeferred(int q) {
        return refillsDeferred[q];
    }

    /** The most RX chunks socket {@code q} held at once. */
    int heldMax(int q) {
        return heldMax[q];
    }

    /** Gives the chunks held since the last poll back to the fill ring. */
    private void refill(int q) {
        XskSocket s = socks[q];
        int h = heldCount[q];
        if (h > 0) {
            long idx = s.fill.reserve(h);
            if (idx >= 0) { // always room: the ring holds every RX chunk
                for (int i = 0; i < h; i++) {
                    s.fill.setAddr(idx + i, held[q][i]);
                }
                s.fill.submit();
                heldCount[q] = 0;
            } else {
                refillsDeferred[q]++;
            }
        }
        if (s.fill.needsWakeup()) {
            counters.rxKicks++;
            XskSys.kickRx(s.fd);
        }
    }

    private void deliver(int q, long idx, int descs, int slot, FrameHandler handler) {
        if (v6) {
            deliver6(q, idx, descs, slot, handler);
            return;
        }
        XskSocket s = socks[q];
        MemorySegment umem = s.umem;
        long addr = s.rx.descAddr(idx);
        int len0 = s.rx.descLen(idx);
        counters.rxFrames++;
        if (len0 < HEADERS || umem.get(BE_SHORT, addr + 12) != 0x0800) {
            counters.rxShort++;
            return;
        }
        int vihl = umem.get(ValueLayout.JAVA_BYTE, addr + 14) & 0xff;
        int ihl = (vihl & 0x0f) * 4;
        int ecn = umem.get(ValueLayout.JAVA_BYTE, addr + 15) & 3;
        int srcIp = umem.get(BE_INT, addr + 26);
        long udp = addr + 14 + ihl;
        int srcPort = umem.get(BE_SHORT, udp) & 0xffff;
        int udpLen = umem.get(BE_SHORT, udp + 4) & 0xffff;
        int length = udpLen - 8;
        int total = len0;
        for (int d = 1; d < descs; d++) {
            total += s.rx.descLen(idx + d);
        }
        // The headers must lie in the first buffer (a kernel never splits them): the ones read
        // above are then the frame's, and the gather below never starts past that buffer.
        if (ihl < 20 || len0 < 14 + ihl + 8 || length < 0 || 14 + ihl + 8 + length > total) {
            counters.rxShort++;
            return;
        }
        if (length > maxFrame) {
            counters.rxTruncated++;
            return;
        }
        if (descs == 1 && ihl == 20 && addr % XskSocket.CHUNK == XskSys.XDP_PACKET_HEADROOM) {
            int c = (int) (addr / XskSocket.CHUNK);
            ByteBuffer view = rxViews[q * RX_CHUNKS + c];
            view.clear().limit(length);
            handler.onFrame(rxPayload[q * RX_CHUNKS + c], view, length, srcIp, srcPort, ecn);
            return;
        }
        // Gather: the payload after the headers, then the following descriptors.
        MemorySegment dst = scratch[slot];
        long payloadOff = 14 + ihl + 8;
        long copied = 0;
        long fromFirst = Math.min(length, len0 - payloadOff);
        MemorySegment.copy(umem, addr + payloadOff, dst, 0, fromFirst);
        copied += fromFirst;
        for (int d = 1; d < descs && copied < length; d++) {
            long a = s.rx.descAddr(idx + d);
            long n = Math.min(length - copied, s.rx.descLen(idx + d));
            MemorySegment.copy(umem, a, dst, copied, n);
            copied += n;
        }
        ByteBuffer view = scratchViews[slot];
        view.clear().limit(length);
        handler.onFrame(dst, view, length, srcIp, srcPort, ecn);
    }

    /**
     * An IPv6 frame: Ethernet, a 40-byte IPv6 header whose next header is UDP, UDP, payload. The
     * payload length must hold the UDP datagram, the frame the payload length (Ethernet padding
     * after it is ignored), and the UDP checksum must be non-zero (RFC 8200; its value is not
     * checked, see the class comment).
     */
    private void deliver6(int q, long idx, int descs, int slot, FrameHandler handler) {
        XskSocket s = socks[q];
        MemorySegment umem = s.umem;
        long addr = s.rx.descAddr(idx);
        int len0 = s.rx.descLen(idx);
        counters.rxFrames++;
        if (len0 < HEADERS_V6 || umem.get(BE_SHORT, addr + 12) != (short) 0x86dd) {
            counters.rxShort++;
            return;
        }
        int w0 = umem.get(BE_INT, addr + 14);
        int payloadLen = umem.get(BE_SHORT, addr + 18) & 0xffff;
        int next = umem.get(ValueLayout.JAVA_BYTE, addr + 20) & 0xff;
        long udp = addr + 54;
        int srcPort = umem.get(BE_SHORT, udp) & 0xffff;
        int udpLen = umem.get(BE_SHORT, udp + 4) & 0xffff;
        int length = udpLen - 8;
        int total = len0;
        for (int d = 1; d < descs; d++) {
            total += s.rx.descLen(idx + d);
        }
        if ((w0 >>> 28) != 6 || next != 17 || udpLen < 8 || udpLen > payloadLen || 54 + payloadLen > total) {
            counters.rxShort++;
            return;
        }
        if (length > maxFrame) {
            counters.rxTruncated++;
            return;
        }
        if (umem.get(BE_SHORT, udp + 6) == 0) {
            counters.rxBadChecksum++;
            return;
        }
        int ecn = (w0 >>> 20) & 3;
        long srcHi = umem.get(BE_LONG, addr + 22);
        long srcLo = umem.get(BE_LONG, addr + 30);
        MemorySegment payload;
        ByteBuffer view;
        if (descs == 1 && addr % XskSocket.CHUNK == XskSys.XDP_PACKET_HEADROOM) {
            int c = (int) (addr / XskSocket.CHUNK);
            payload = rxPayload[q * RX_CHUNKS + c];
            view = rxViews[q * RX_CHUNKS + c];
        } else {
            // Gather: the payload after the headers, then the following descriptors.
            payload = scratch[slot];
            view = scratchViews[slot];
            long copied = Math.min(length, len0 - HEADERS_V6);
            MemorySegment.copy(umem, addr + HEADERS_V6, payload, 0, copied);
            for (int d = 1; d < descs && copied < length; d++) {
                long n = Math.min(length - copied, s.rx.descLen(idx + d));
                MemorySegment.copy(umem, s.rx.descAddr(idx + d), payload, copied, n);
                copied += n;
            }
        }
        view.clear().limit(length);
        handler.onFrame(payload, view, length, IpAddr.intern(srcHi, srcLo), srcPort, ecn);
    }

    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort BE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    // ---------------------------------------------------------------- TX

    @Override
    public MemorySegment claim() {
        if (claimed >= 0) {
            return txPayload[claimed]; // claimed and never committed: reuse it
        }
        if (txCount == batch) {
            flush();
        }
        if (txFreeCount == 0) {
            reclaim();
            if (txFreeCount == 0) {
                flush();
                kickUntilDrained();
                reclaim();
            }
        }
        if (txFreeCount == 0) {
            claimed = -2; // no frame free: this one is lost, like a full NIC queue
            return dropFrame;
        }
        claimed = txFree[--txFreeCount];
        return txPayload[claimed];
    }

    @Override
    public ByteBuffer claimedView() {
        return claimed == -2 ? dropView.clear() : txViews[claimed].clear();
    }

    @Override
    public void commit(int length, int dstIp, int dstPort, int entropy) {
        int pair = claimed;
        claimed = -1;
        if (pair == -2) {
            counters.txErrors++;
            return;
        }
        if (!resolver.resolve(dstIp, l2)) {
            counters.txErrors++;
            txFree[txFreeCount++] = pair;
            return;
        }
        MemorySegment u = socks[0].umem;
        long f = txBase + (long) PAIR * pair;
        int srcPort = entropyPorts == 0 ? localPort : localPort + 1 + (entropy & 0xffff) % entropyPorts;
        if (v6) {
            if (!IpAddr.isV6(dstIp)) {
                counters.txErrors++; // the other family: never set up (spec T-1.3)
                txFree[txFreeCount++] = pair;
                return;
            }
            // Always from the served address (T-1.3), whatever source the route prefers.
            writeHeaders6(
                    u,
                    f,
                    l2.dstMac,
                    l2.srcMac,
                    localHi,
                    localLo,
                    IpAddr.hi(dstIp),
                    IpAddr.lo(dstIp),
                    srcPort,
                    dstPort,
                    length);
        } else {
            writeHeaders(
                    u, f, l2.dstMac, l2.srcMac, l2.srcIp != 0 ? l2.srcIp : localIp, dstIp, srcPort, dstPort, length);
        }
        txQueued[txCount] = pair;
        txQueuedLen[txCount] = headers + length;
        txCount++;
    }

    /** Ethernet + IPv4 + UDP headers at {@code off}, for a UDP payload of {@code length} bytes. */
    static void writeHeaders(
            MemorySegment u,
            long off,
            long dstMac,
            long srcMac,
            int srcIp,
            int dstIp,
            int srcPort,
            int dstPort,
            int length) {
        u.set(BE_INT, off, (int) (dstMac >>> 16));
        u.set(BE_SHORT, off + 4, (short) dstMac);
        u.set(BE_SHORT, off + 6, (short) (srcMac >>> 32));
        u.set(BE_INT, off + 8, (int) srcMac);
        u.set(BE_SHORT, off + 12, (short) 0x0800);
        long ip = off + 14;
        u.set(BE_SHORT, ip, (short) ((0x45 << 8) | ECT0));
        u.set(BE_SHORT, ip + 2, (short) (20 + 8 + length));
        u.set(BE_INT, ip + 4, 0x4000); // id 0, DF
        u.set(BE_SHORT, ip + 8, (short) ((64 << 8) | 17)); // TTL 64, UDP
        u.set(BE_SHORT, ip + 10, (short) 0);
        u.set(BE_INT, ip + 12, srcIp);
        u.set(BE_INT, ip + 16, dstIp);
        u.set(BE_SHORT, ip + 10, (short) ipChecksum(u, ip));
        long udp = ip + 20;
        u.set(BE_SHORT, udp, (short) srcPort);
        u.set(BE_SHORT, udp + 2, (short) dstPort);
        u.set(BE_SHORT, udp + 4, (short) (8 + length));
        u.set(BE_SHORT, udp + 6, (short) 0); // no checksum: legal on IPv4
    }

    /**
     * Ethernet + IPv6 + UDP headers at {@code off} for the UDP payload of {@code length} bytes
     * that follows them (already written: the UDP checksum covers it). Traffic class ECT(0), the
     * flow label {@link #flowLabel} of the source port, hop limit 64.
     */
    static void writeHeaders6(
            MemorySegment u,
            long off,
            long dstMac,
            long srcMac,
            long srcHi,
            long srcLo,
            long dstHi,
            long dstLo,
            int srcPort,
            int dstPort,
            int length) {
        u.set(BE_INT, off, (int) (dstMac >>> 16));
        u.set(BE_SHORT, off + 4, (short) dstMac);
        u.set(BE_SHORT, off + 6, (short) (srcMac >>> 32));
        u.set(BE_INT, off + 8, (int) srcMac);
        u.set(BE_SHORT, off + 12, (short) 0x86dd);
        long ip = off + 14;
        u.set(BE_INT, ip, (6 << 28) | (ECT0 << 20) | flowLabel(srcPort));
        u.set(BE_SHORT, ip + 4, (short) (8 + length));
        u.set(BE_SHORT, ip + 6, (short) ((17 << 8) | 64)); // next header UDP, hop limit 64
        u.set(BE_LONG, ip + 8, srcHi);
        u.set(BE_LONG, ip + 16, srcLo);
        u.set(BE_LONG, ip + 24, dstHi);
        u.set(BE_LONG, ip + 32, dstLo);
        long udp = ip + 40;
        u.set(BE_SHORT, udp, (short) srcPort);
        u.set(BE_SHORT, udp + 2, (short) dstPort);
        u.set(BE_SHORT, udp + 4, (short) (8 + length));
        u.set(BE_SHORT, udp + 6, (short) 0);
        int c = ~fold(pseudoSum6(srcHi, srcLo, dstHi, dstLo, 8 + length) + sum(u, udp, 8 + length)) & 0xffff;
        u.set(BE_SHORT, udp + 6, (short) (c == 0 ? 0xffff : c)); // 0 means "none", never sent over IPv6
    }

    /**
     * The flow label of a frame from UDP source port {@code srcPort}: 20 bits of a multiplicative
     * hash of the port, never 0 ("no label"). A path's entropy picks the source port, so the
     * flow label too: a fabric hashing the IPv6 3-tuple (addresses, flow label) spreads the paths
     * as one hashing the 5-tuple does.
     */
    static int flowLabel(int srcPort) {
        int label = ((srcPort & 0xffff) * 0x9E3779B1) >>> 12;
        return label == 0 ? 1 : label;
    }

    /** The RFC 1071 partial sum of the IPv6 pseudo-header (addresses, UDP length, next header 17). */
    static long pseudoSum6(long srcHi, long srcLo, long dstHi, long dstLo, int udpLen) {
        return halves(srcHi) + halves(srcLo) + halves(dstHi) + halves(dstLo) + udpLen + 17;
    }

    private static long halves(long v) {
        return (v >>> 32) + (v & 0xffffffffL);
    }

    /**
     * The RFC 1071 partial sum of {@code len} bytes at {@code off} as big-endian 16-bit words (an
     * odd last byte padded with zero), unfolded: 32-bit words added into a long, which folds to the
     * same 16-bit sum. At most 64 KiB at a time.
     */
    static long sum(MemorySegment u, long off, long len) {
        long s = 0;
        long i = 0;
        for (; i + 8 <= len; i += 8) {
            s += halves(u.get(BE_LONG, off + i));
        }
        for (; i + 2 <= len; i += 2) {
            s += u.get(BE_SHORT, off + i) & 0xffff;
        }
        if (i < len) {
            s += (u.get(ValueLayout.JAVA_BYTE, off + i) & 0xff) << 8;
        }
        return s;
    }

    /** A partial sum folded to 16 bits (one's complement addition). */
    static int fold(long s) {
        while ((s >>> 16) != 0) {
            s = (s & 0xffff) + (s >>> 16);
        }
        return (int) s;
    }

    /** The RFC 791 header checksum of the 20-byte header at {@code ip}. */
    static int ipChecksum(MemorySegment u, long ip) {
        int sum = 0;
        for (int i = 0; i < 20; i += 2) {
            sum += u.get(BE_SHORT, ip + i) & 0xffff;
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xffff) + (sum >>> 16);
        }
        return ~sum & 0xffff;
    }

    @Override
    public int flush() {
        reclaim();
        if (txCount == 0) {
            return 0;
        }
        XskRing tx = socks[0].tx;
        int sent = 0;
        for (int i = 0; i < txCount; i++) {
            int pair = txQueued[i];
            int len = txQueuedLen[i];
            int descs = len > XskSocket.CHUNK ? 2 : 1;
            long idx = tx.reserve(descs);
            if (idx < 0) {
                tx.submit();
                kickUntilDrained();
                reclaim();
                idx = tx.reserve(descs);
            }
            if (idx < 0) {
                counters.txErrors++;
                txFree[txFreeCount++] = pair;
                continue;
            }
            long f = txBase + (long) PAIR * pair;
            if (descs == 1) {
                tx.setDesc(idx, f, len, 0);
            } else {
                tx.setDesc(idx, f, XskSocket.CHUNK, XskSys.XDP_PKT_CONTD);
                tx.setDesc(idx + 1, f + XskSocket.CHUNK, len - XskSocket.CHUNK, 0);
            }
            txDescs[pair] = (byte) descs;
            sent++;
        }
        txCount = 0;
        tx.submit();
        kickUntilDrained();
        counters.txFrames += sent;
        if (sent > 0) {
            counters.txBatches++;
        }
        return sent;
    }

    /** Copy mode sends at most 32 frames a syscall: kick until the kernel took the TX ring. */
    private void kickUntilDrained() {
        XskSocket s = socks[0];
        for (int k = 0; k < MAX_KICKS && s.tx.outstanding() > 0; k++) {
            if (!s.tx.needsWakeup()) {
                return;
            }
            counters.txKicks++;
            int rc = XskSys.kickTx(s.fd);
            if (rc < 0 && rc != -Errno.EAGAIN && rc != -Errno.EBUSY && rc != -105 /* ENOBUFS */) {
                counters.txErrors++;
                return;
            }
            if (rc < 0) {
                counters.txKicksBusy++;
                reclaim();
            }
        }
    }

    /** Frees the TX pairs whose descriptors all completed. */
    private void reclaim() {
        XskRing comp = socks[0].comp;
        int n = comp.peek(RING_SIZE);
        if (n == 0) {
            return;
        }
        int first = comp.peekIndex();
        for (int i = 0; i < n; i++) {
            long addr = comp.addr(first + i);
            int pair = (int) ((addr - txBase) / PAIR);
            if (--txDescs[pair] == 0) {
                txFree[txFreeCount++] = pair;
            }
        }
        comp.release(n);
    }

    @Override
    public int maxFrame() {
        return maxFrame;
    }

    @Override
    public int localIp() {
        return localIp;
    }

    @Override
    public int localPort() {
        return localPort;
    }

    @Override
    public int fd() {
        return socks[0].fd;
    }

    /** One AF_XDP socket per queue: each polls readable when its RX ring holds frames. */
    @Override
    public int[] fds() {
        int[] fds = new int[socks.length];
        for (int q = 0; q < socks.length; q++) {
            fds[q] = socks[q].fd;
        }
        return fds;
    }

    @Override
    public PortCounters counters() {
        return counters;
    }

    /**
     * The kernel's counters of each socket (XDP_STATISTICS): frames it dropped on the way in
     * (RX ring full, fill ring empty, other) and invalid descriptors. Control path.
     */
    public String kernelStatistics() {
        StringBuilder b = new StringBuilder();
        for (XskSocket s : socks) {
            try {
                long[] v = XskSys.statistics(s.fd);
                b.append(b.isEmpty() ? "" : "; ")
                        .append("queue ")
                        .append(s.queue)
                        .append(": rx_frames ")
                        .append(rxPerQueue[s.queue])
                        .append(" rx_dropped ")
                        .append(v[0])
                        .append(" rx_invalid_descs ")
                        .append(v[1])
                        .append(" tx_invalid_descs ")
                        .append(v[2])
                        .append(" rx_ring_full ")
                        .append(v[3])
                        .append(" rx_fill_ring_empty_descs ")
                        .append(v[4])
                        .append(" tx_ring_empty_descs ")
                        .append(v[5])
                        .append("; refills deferred (fill ring without room) ")
                        .append(refillsDeferred[s.queue])
                        .append(", most chunks held ")
                        .append(heldMax[s.queue])
                        .append(", fill ring outstanding ")
                        .append(s.fill.outstanding());
            } catch (NativeException e) {
                b.append(b.isEmpty() ? "" : "; ")
                        .append("queue ")
                        .append(s.queue)
                        .append(": ")
                        .append(e.getMessage());
            }
        }
        return b.toString();
    }

    @Override
    public void close() {
        LOG.info("AF_XDP sockets on close: {}", kernelStatistics());
        if (program != null) {
            program.close(); // detach first: no frame is steered to a closing socket
        }
        for (XskSocket s : socks) {
            s.close();
        }
        if (resolver instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                // closing a netlink socket: nothing to recover
            }
        }
        arena.close();
    }
}
