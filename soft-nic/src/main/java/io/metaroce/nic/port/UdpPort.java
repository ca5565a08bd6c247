package io.metaroce.nic.port;

import io.metaroce.abi.Errno;
import io.metaroce.abi.IpAddr;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * A plain non-blocking UDP socket bound to the served address and port, where every frame comes
 * in (recvmmsg, a batch per call), plus a pool of send sockets bound to the consecutive ports
 * above it: a frame's entropy picks the socket ({@code entropy mod pool}), so its source port,
 * so its ECMP route. A flush sends the frames in the order they were committed, one sendmmsg per
 * run of frames from the same socket (the transport reads the wire order). With no pool, everything leaves from the data socket. The kernel builds
 * IP/UDP headers, marking frames ECN-capable (ECT(0)). The data socket asks for each
 * datagram's TOS byte (IP_RECVTOS, one control buffer per batch slot), so every frame reports its
 * ECN field. A port serving an IPv6 address ({@link IpAddr#isV6}) does the same with AF_INET6
 * sockets (IPV6_TCLASS, IPV6_RECVTCLASS); the kernel then derives each datagram's flow label
 * from its 5-tuple (net.ipv6.auto_flowlabels), so the entropy's source port picks the flow label
 * too.
 *
 * <p>With offload on (the default), a flush hands the kernel each run of consecutive frames that
 * leave from one socket to one address, all of one length but the last, which may be shorter, as
 * one UDP GSO buffer (a UDP_SEGMENT control message: up to {@link #GSO_MAX_SEGMENTS} frames, at
 * most {@link #GSO_MAX_BYTES}), which the kernel cuts into the same datagrams: one trip through the
 * stack, and on veth and through a forwarding namespace one buffer, for the whole run. The data
 * socket reads with UDP_GRO, so such a run (or datagrams the kernel coalesced on the way) comes in
 * as one buffer with its segment size, which {@link #poll} cuts back into frames. Nothing on the
 * wire changes: the peer sees the same datagrams in the same order. A kernel or device that
 * refuses GSO (EIO, EINVAL) turns it off for the port; the refused frames go again one by one.
 */
public final class UdpPort implements Port {
    private static final int MSG_TRUNC = 0x20;
    /** Control buffer per received datagram: room for the IP_TOS message and one more. */
    private static final int CONTROL_BYTES = 64;
    /** ECN codepoint ECT(0): "ECN-capable transport". */
    private static final int ECT0 = 0x02;
    /** The kernel's limit of datagrams in one GSO buffer (UDP_MAX_SEGMENTS). */
    public static final int GSO_MAX_SEGMENTS = 64;
    /** The largest GSO buffer: an IPv4 datagram's 65535 bytes less its IP and UDP headers. */
    public static final int GSO_MAX_BYTES = 65535 - 20 - 8;
    /** The most frames {@link #sendBurst} asks the transport to give one path at once. */
    static final int BURST_MAX = 16;
    /** Receive buffer per batch slot with GRO: a whole coalesced buffer. */
    private static final int GRO_BUFFER = 65536;
    /** CMSG_SPACE(sizeof(uint16_t)): the UDP_SEGMENT control message of one GSO send. */
    private static final long GSO_CONTROL = 24;

    private final int fd;
    private final int localIp;
    /** AF_INET or AF_INET6, the sockaddr size of that family, the control message of the ECN. */
    private final int family;

    private final long saSize;
    private final int tosLevel;
    private final int tosType;
    private final int localPort;
    private final int maxFrame;
    private final int batch;
    private final Arena arena = Arena.ofShared();
    private final PortCounters counters = new PortCounters();
    // RX: recvmmsg array, one buffer, iovec and sockaddr per slot
    private final MemorySegment rxMsgs;
    private final MemorySegment[] rxBufs;
    private final ByteBuffer[] rxViews;
    private final MemorySegment rxAddrs;
    private final MemorySegment rxControl;
    private final boolean readsEcn;
    // TX: same shape
    private final MemorySegment txMsgs;
    private final MemorySegment[] txBufs;
    private final ByteBuffer[] txViews;
    private final MemorySegment txIovs;
    private final MemorySegment txAddrs;
    private int txCount;
    private int claimed = -1;
    /** Send sockets by entropy (entropy mod length); empty: the data socket sends. */
    private final int[] entropyFds;

    private final int[] txSock;
    /** Each queued frame's length and destination, to find the runs a GSO buffer can carry. */
    private final int[] txLen;

    private final int[] txDstIp;
    private final int[] txDstPort;
    /** The messages of one flush: one per GSO run (or single frame), their sockets and frame counts. */
    private final MemorySegment gsoMsgs;

    private final MemorySegment gsoControl;
    private final int[] msgSock;
    private final int[] msgFrames;
    /** Frames per GSO buffer at most; 1: offload off (asked, or refused by the kernel). */
    private int gsoSegments;
    /** Whether the data socket reads with UDP_GRO. */
    private final boolean gro;
    /** Per receive slot, the frames of a coalesced buffer cut at one segment size (cached, 2 sizes). */
    private final GroCuts[] rxCuts;

    public UdpPort(int localIp, int localPort, int maxFrame, int batch) throws NativeException {
        this(localIp, localPort, maxFrame, batch, 0);
    }

    /**
     * {@code entropyPorts} send sockets bound to localPort + 1 .. localPort + entropyPorts;
     * offload (GSO sends, GRO receives) on.
     */
    public UdpPort(int localIp, int localPort, int maxFrame, int batch, int entropyPorts) throws NativeException {
        this(localIp, localPort, maxFrame, batch, entropyPorts, true);
    }

    /** As above; {@code offload} false sends one datagram per frame and reads without GRO. */
    public UdpPort(int localIp, int localPort, int maxFrame, int batch, int entropyPorts, boolean offload)
            throws NativeException {
        this.localIp = localIp;
        this.localPort = localPort;
        this.maxFrame = maxFrame;
        this.batch = batch;
        this.family = LibC.family(localIp);
        this.saSize = LibC.sockaddrSize(localIp);
        boolean v6 = family == LibC.AF_INET6;
        this.tosLevel = v6 ? LibC.IPPROTO_IPV6 : LibC.IPPROTO_IP;
        this.tosType = v6 ? LibC.IPV6_TCLASS : LibC.IP_TOS;
        int s = LibC.socket(family, LibC.SOCK_DGRAM | LibC.SOCK_NONBLOCK | LibC.SOCK_CLOEXEC, 0);
        try {
            receiveBuffer(s);
            LibC.setsockoptInt(s, LibC.SOL_SOCKET, LibC.SO_SNDBUF, 8 << 20);
            LibC.bindInet4(s, localIp, localPort);
        } catch (NativeException e) {
            LibC.close(s);
            throw e;
        }
        boolean tos = true;
        try {
            LibC.setsockoptInt(s, tosLevel, v6 ? LibC.IPV6_RECVTCLASS : LibC.IP_RECVTOS, 1);
        } catch (NativeException e) {
            tos = false; // frames then report ECN 0, like a port that cannot read it
        }
        markEct(s, tosLevel, tosType);
        this.readsEcn = tos;
        this.gro = offload && enableGro(s);
        this.gsoSegments = offload ? Math.min(GSO_MAX_SEGMENTS, Math.max(1, GSO_MAX_BYTES / maxFrame)) : 1;
        this.fd = s;
        this.entropyFds = new int[entropyPorts];
        for (int i = 0; i < entropyPorts; i++) {
            int e = -1;
            try {
                e = LibC.socket(family, LibC.SOCK_DGRAM | LibC.SOCK_NONBLOCK | LibC.SOCK_CLOEXEC, 0);
                LibC.setsockoptInt(e, LibC.SOL_SOCKET, LibC.SO_SNDBUF, 4 << 20);
                LibC.bindInet4(e, localIp, localPort + 1 + i);
                markEct(e, tosLevel, tosType);
                entropyFds[i] = e;
            } catch (NativeException ex) {
                if (e >= 0) {
                    LibC.close(e);
                }
                for (int k = 0; k < i; k++) {
                    LibC.close(entropyFds[k]);
                }
                LibC.close(s);
                throw new NativeException("bind of entropy port " + (localPort + 1 + i), ex.errno());
            }
        }
        this.txSock = new int[batch];
        this.txLen = new int[batch];
        this.txDstIp = new int[batch];
        this.txDstPort = new int[batch];
        this.msgSock = new int[batch];
        this.msgFrames = new int[batch];
        gsoMsgs = arena.allocate(LibC.MMSGHDR_SIZE * batch, 8);
        gsoControl = arena.allocate(GSO_CONTROL * batch, 8);
        int rxBytes = gro ? Math.max(GRO_BUFFER, maxFrame) : maxFrame;
        rxCuts = new GroCuts[gro ? batch : 0];
        rxMsgs = arena.allocate(LibC.MMSGHDR_SIZE * batch, 8);
        txMsgs = arena.allocate(LibC.MMSGHDR_SIZE * batch, 8);
        rxAddrs = arena.allocate(LibC.SOCKADDR_IN6_SIZE * batch, 8);
        rxControl = arena.allocate((long) CONTROL_BYTES * batch, 8);
        txAddrs = arena.allocate(LibC.SOCKADDR_IN6_SIZE * batch, 8);
        MemorySegment rxIovs = arena.allocate(16L * batch, 8);
        txIovs = arena.allocate(16L * batch, 8);
        rxBufs = new MemorySegment[batch];
        rxViews = new ByteBuffer[batch];
        txBufs = new MemorySegment[batch];
        txViews = new ByteBuffer[batch];
        for (int i = 0; i < batch; i++) {
            rxBufs[i] = arena.allocate(rxBytes, 64);
            rxViews[i] = rxBufs[i].asByteBuffer();
            txBufs[i] = arena.allocate(maxFrame, 64);
            txViews[i] = txBufs[i].asByteBuffer();
            rxIovs.set(ValueLayout.JAVA_LONG, 16L * i, rxBufs[i].address());
            rxIovs.set(ValueLayout.JAVA_LONG, 16L * i + 8, rxBytes);
            txIovs.set(ValueLayout.JAVA_LONG, 16L * i, txBufs[i].address());
            long m = LibC.MMSGHDR_SIZE * i;
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOV, rxIovs.address() + 16L * i);
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOVLEN, 1L);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_NAME, txAddrs.address() + LibC.SOCKADDR_IN6_SIZE * i);
            txMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_NAMELEN, (int) saSize);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOV, txIovs.address() + 16L * i);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOVLEN, 1L);
            long c = GSO_CONTROL * i; // cmsghdr {len = CMSG_LEN(2), SOL_UDP, UDP_SEGMENT}, then the u16
            gsoControl.set(ValueLayout.JAVA_LONG, c, LibC.CMSGHDR_SIZE + 2);
            gsoControl.set(ValueLayout.JAVA_INT, c + 8, LibC.SOL_UDP);
            gsoControl.set(ValueLayout.JAVA_INT, c + 12, LibC.UDP_SEGMENT);
            if (gro) {
                rxCuts[i] = new GroCuts(rxBufs[i]);
            }
        }
    }

    /** UDP_GRO on the data socket (Linux 5.0); false when the kernel refuses it. */
    private static boolean enableGro(int s) {
        try {
            LibC.setsockoptInt(s, LibC.SOL_UDP, LibC.UDP_GRO, 1);
            return true;
        } catch (NativeException e) {
            return false;
        }
    }

    /**
     * The frames of one receive slot's coalesced buffers: slices (and their ByteBuffer views) at
     * every multiple of a segment size, built once per size and kept for the last two sizes seen
     * (a QP's data packets and its ACKs), so that cutting a buffer allocates nothing.
     */
    private static final class GroCuts {
        private final MemorySegment buffer;
        private final int[] size = new int[2];
        private final MemorySegment[][] frames = new MemorySegment[2][];
        private final ByteBuffer[][] views = new ByteBuffer[2][];
        private int older;

        GroCuts(MemorySegment buffer) {
            this.buffer = buffer;
        }

        /** The cut for segment size {@code segment} (0 or 1: index into frames / views). */
        int cut(int segment) {
            for (int k = 0; k < 2; k++) {
                if (size[k] == segment) {
                    older = 1 - k;
                    return k;
                }
            }
            int k = older;
            int n = (int) ((buffer.byteSize() + segment - 1) / segment);
            frames[k] = new MemorySegment[n];
            views[k] = new ByteBuffer[n];
            for (int j = 0; j < n; j++) {
                long off = (long) j * segment;
                frames[k][j] = buffer.asSlice(off, Math.min(segment, buffer.byteSize() - off));
                views[k][j] = frames[k][j].asByteBuffer();
            }
            size[k] = segment;
            older = 1 - k;
            return k;
        }
    }

    @Override
    public int poll(FrameHandler handler) {
        for (int i = 0; i < batch; i++) {
            long m = LibC.MMSGHDR_SIZE * i;
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_NAME, rxAddrs.address() + LibC.SOCKADDR_IN6_SIZE * i);
            rxMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_NAMELEN, (int) LibC.SOCKADDR_IN6_SIZE);
            rxMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_FLAGS, 0);
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROL, rxControl.address() + (long) CONTROL_BYTES * i);
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROLLEN, CONTROL_BYTES);
        }
        int n = LibC.recvmmsg(fd, rxMsgs, batch, LibC.MSG_DONTWAIT);
        if (n <= 0) {
            return 0;
        }
        counters.rxBatches++;
        for (int i = 0; i < n; i++) {
            long m = LibC.MMSGHDR_SIZE * i;
            int len = rxMsgs.get(ValueLayout.JAVA_INT, m + LibC.MMSGHDR_LEN);
            int flags = rxMsgs.get(ValueLayout.JAVA_INT, m + LibC.MSGHDR_FLAGS);
            if ((flags & MSG_TRUNC) != 0) {
                counters.rxFrames++;
                counters.rxTruncated++;
                continue;
            }
            MemorySegment sa = rxAddrs.asSlice(LibC.SOCKADDR_IN6_SIZE * i, LibC.SOCKADDR_IN6_SIZE);
            int srcIp = LibC.sockaddrAddr(sa);
            int srcPort = LibC.sockaddrInPort(sa);
            readControl(i, rxMsgs.get(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROLLEN));
            int ecn = controlEcn;
            int segment = controlSegment;
            if (segment <= 0 || segment >= len) {
                if (len > maxFrame) {
                    // the buffer is larger than a frame (a GRO slot): such a datagram is not ours,
                    // as one cut to maxFrame was before
                    counters.rxFrames++;
                    counters.rxTruncated++;
                    continue;
                }
                counters.rxFrames++;
                ByteBuffer view = rxViews[i];
                view.clear().limit(len);
                handler.onFrame(rxBufs[i], view, len, srcIp, srcPort, ecn);
                continue;
            }
            // a coalesced buffer: datagrams of `segment` bytes, the last one possibly shorter
            if (segment > maxFrame) {
                int frames = (len + segment - 1) / segment;
                counters.rxFrames += frames;
                counters.rxTruncated += frames;
                continue;
            }
            GroCuts cuts = rxCuts[i];
            int k = cuts.cut(segment);
            MemorySegment[] frames = cuts.frames[k];
            ByteBuffer[] views = cuts.views[k];
            int j = 0;
            for (int off = 0; off < len; off += segment, j++) {
                int flen = Math.min(segment, len - off);
                counters.rxFrames++;
                counters.rxCoalesced++;
                ByteBuffer view = views[j];
                view.clear().limit(flen);
                handler.onFrame(frames[j], view, flen, srcIp, srcPort, ecn);
            }
        }
        return n;
    }

    /**
     * Every frame of the host comes in on the data socket: with 10^4 QPs a round of single-packet
     * messages brings 10^4 ACKs at once, about twice what the 8 MiB that net.core.rmem_max allows
     * here holds (small datagrams cost about 1.5 KiB of buffer each), and the rest were dropped
     * (RcvbufErrors; run-qp-scale --qps 10000). A privileged daemon takes 64 MiB past that limit.
     */
    private static void receiveBuffer(int s) throws NativeException {
        try {
            LibC.setsockoptInt(s, LibC.SOL_SOCKET, LibC.SO_RCVBUFFORCE, 64 << 20);
        } catch (NativeException e) {
            LibC.setsockoptInt(s, LibC.SOL_SOCKET, LibC.SO_RCVBUF, 8 << 20); // unprivileged
        }
    }

    /**
     * Sends as ECN-capable (ECT(0)), so that an ECN-enabled queue on the way marks CE instead of
     * dropping. Best effort: without it packets go out not-ECT, as before.
     */
    private static void markEct(int sock, int level, int type) {
        try {
            LibC.setsockoptInt(sock, level, type, ECT0);
        } catch (NativeException ignored) {
            // not-ECT then
        }
    }

    /** What {@link #readControl} found: the ECN bits of the TOS byte (0 if absent), the GRO segment size (0 if none). */
    private int controlEcn;

    private int controlSegment;

    /** Reads datagram {@code i}'s control messages: its TOS byte's ECN bits and its GRO segment size. */
    private void readControl(int i, long controlLen) {
        controlEcn = 0;
        controlSegment = 0;
        long base = (long) CONTROL_BYTES * i;
        long off = 0;
        long end = Math.min(controlLen, CONTROL_BYTES);
        while (off + LibC.CMSGHDR_SIZE <= end) {
            long len = rxControl.get(ValueLayout.JAVA_LONG, base + off);
            if (len < LibC.CMSGHDR_SIZE || off + len > end) {
                break;
            }
            int level = rxControl.get(ValueLayout.JAVA_INT, base + off + 8);
            int type = rxControl.get(ValueLayout.JAVA_INT, base + off + 12);
            if (len > LibC.CMSGHDR_SIZE && level == tosLevel && type == tosType) {
                controlEcn = rxControl.get(ValueLayout.JAVA_BYTE, base + off + LibC.CMSGHDR_SIZE) & 3;
            } else if (len >= LibC.CMSGHDR_SIZE + 4 && level == LibC.SOL_UDP && type == LibC.UDP_GRO) {
                controlSegment = rxControl.get(ValueLayout.JAVA_INT, base + off + LibC.CMSGHDR_SIZE);
            }
            off += (len + 7) & ~7L;
        }
    }

    @Override
    public boolean readsEcn() {
        return readsEcn;
    }

    @Override
    public MemorySegment claim() {
        if (txCount == batch) {
            flush();
        }
        claimed = txCount;
        return txBufs[txCount];
    }

    @Override
    public ByteBuffer claimedView() {
        return txViews[claimed].clear();
    }

    @Override
    public void commit(int length, int dstIp, int dstPort, int entropy) {
        int i = claimed;
        txSock[i] = entropyFds.length == 0 ? fd : entropyFds[(entropy & 0xffff) % entropyFds.length];
        txIovs.set(ValueLayout.JAVA_LONG, 16L * i + 8, length);
        txLen[i] = length;
        txDstIp[i] = dstIp;
        txDstPort[i] = dstPort;
        LibC.writeSockaddr(txAddrs.asSlice(LibC.SOCKADDR_IN6_SIZE * i, LibC.SOCKADDR_IN6_SIZE), dstIp, dstPort);
        txCount++;
        claimed = -1;
    }

    @Override
    public int flush() {
        if (txCount == 0) {
            return 0;
        }
        counters.txBatches++;
        int n = txCount;
        txCount = 0;
        if (gsoSegments <= 1) {
            return sendSingles(0, n);
        }
        // In commit order: runs of frames from one socket to one address, equal lengths but the
        // last, each one GSO message; one sendmmsg per run of messages from the same socket.
        // (Grouping the whole batch by socket took fewer calls but put frames on the wire out of
        // the order the transport sent them in, which its cross-path loss detection reads as loss.)
        int msgs = 0;
        for (int start = 0; start < n; ) {
            int sock = txSock[start];
            int size = txLen[start];
            int end = start + 1;
            int bytes = size;
            while (end < n
                    && end - start < gsoSegments
                    && txSock[end] == sock
                    && txLen[end - 1] == size
                    && txLen[end] <= size
                    && txDstIp[end] == txDstIp[start]
                    && txDstPort[end] == txDstPort[start]
                    && bytes + txLen[end] <= GSO_MAX_BYTES) {
                bytes += txLen[end];
                end++;
            }
            long m = LibC.MMSGHDR_SIZE * msgs;
            gsoMsgs.set(
                    ValueLayout.JAVA_LONG, m + LibC.MSGHDR_NAME, txAddrs.address() + LibC.SOCKADDR_IN6_SIZE * start);
            gsoMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_NAMELEN, (int) saSize);
            gsoMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOV, txIovs.address() + 16L * start);
            gsoMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOVLEN, end - start);
            if (end - start > 1) {
                gsoControl.set(ValueLayout.JAVA_SHORT, GSO_CONTROL * msgs + LibC.CMSGHDR_SIZE, (short) size);
                gsoMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROL, gsoControl.address() + GSO_CONTROL * msgs);
                gsoMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROLLEN, GSO_CONTROL);
            } else {
                gsoMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROL, 0L);
                gsoMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROLLEN, 0L);
            }
            msgSock[msgs] = sock;
            msgFrames[msgs] = end - start;
            msgs++;
            start = end;
        }
        int sent = 0;
        int first = 0; // the first frame of message `start`
        for (int start = 0; start < msgs; ) {
            int sock = msgSock[start];
            int end = start + 1;
            while (end < msgs && msgSock[end] == sock) {
                end++;
            }
            sent += sendMessages(sock, start, end, first);
            for (int k = start; k < end; k++) {
                first += msgFrames[k];
            }
            start = end;
        }
        return sent;
    }

    /** Sends frames {@code from .. to - 1} one datagram each, a sendmmsg per run of one socket. */
    private int sendSingles(int from, int to) {
        if (entropyFds.length == 0) {
            return sendRun(fd, txMsgs, from, to - from);
        }
        int sent = 0;
        for (int start = from; start < to; ) {
            int sock = txSock[start];
            int end = start + 1;
            while (end < to && txSock[end] == sock) {
                end++;
            }
            sent += sendRun(sock, txMsgs, start, end - start);
            start = end;
        }
        return sent;
    }

    /**
     * Sends GSO messages {@code from .. to - 1} on {@code sock}; {@code firstFrame} is message
     * {@code from}'s first frame. A message the kernel refuses for its GSO (EIO: the device cannot
     * checksum it; EINVAL: no UDP_SEGMENT) turns offload off and goes again one frame at a time.
     */
    private int sendMessages(int sock, int from, int to, int firstFrame) {
        int sent = 0;
        int msg = from;
        int frame = firstFrame;
        while (msg < to) {
            counters.txKicks++;
            int n = LibC.sendmmsg(sock, gsoMsgs.asSlice(LibC.MMSGHDR_SIZE * msg), to - msg, 0);
            if (n == -Errno.EINTR) {
                continue;
            }
            if (n < 0) {
                int frames = msgFrames[msg];
                if (frames > 1 && (n == -Errno.EIO || n == -Errno.EINVAL)) {
                    gsoSegments = 1; // for good: the rest of the port's life sends singles
                    sent += sendSingles(frame, frame + frames);
                } else {
                    // EAGAIN (socket buffer full) or an unreachable peer: the frames are lost,
                    // like on a wire; the transport recovers them.
                    counters.txErrors += frames;
                    sent += frames;
                }
                frame += frames;
                msg++;
                continue;
            }
            for (int k = 0; k < n; k++) {
                int frames = msgFrames[msg + k];
                counters.txFrames += frames;
                if (frames > 1) {
                    counters.txCoalesced += frames;
                }
                sent += frames;
                frame += frames;
            }
            msg += n;
        }
        return sent;
    }

    private int sendRun(int sock, MemorySegment msgs, int from, int count) {
        int sent = 0;
        while (sent < count) {
            counters.txKicks++;
            int n = LibC.sendmmsg(sock, msgs.asSlice(LibC.MMSGHDR_SIZE * (from + sent)), count - sent, 0);
            if (n < 0) {
                if (n == -Errno.EINTR) {
                    continue;
                }
                // EAGAIN (socket buffer full) or an unreachable peer: the frame is lost, like on a
                // wire; the transport recovers it.
                counters.txErrors++;
                sent++;
                continue;
            }
            counters.txFrames += n;
            sent += n;
        }
        return sent;
    }

    /**
     * Frames the transport should hand one path at once so that they leave as one GSO buffer
     * ({@link Port#sendBurst}): as many of the largest frame as a buffer holds, at most
     * {@link #BURST_MAX}; 1 with offload off.
     */
    @Override
    public int sendBurst() {
        return gsoSegments <= 1 ? 1 : Math.min(BURST_MAX, gsoSegments);
    }

    /** Whether sends still go out as GSO buffers (false: asked off, or the kernel refused them). */
    public boolean gsoOn() {
        return gsoSegments > 1;
    }

    /** Whether the data socket reads coalesced buffers (UDP_GRO). */
    public boolean groOn() {
        return gro;
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
        return fd;
    }

    @Override
    public PortCounters counters() {
        return counters;
    }

    @Override
    public void close() {
        for (int e : entropyFds) {
            LibC.close(e);
        }
        LibC.close(fd);
        arena.close();
    }
}
