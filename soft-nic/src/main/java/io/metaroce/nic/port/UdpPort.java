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
 */
public final class UdpPort implements Port {
    private static final int MSG_TRUNC = 0x20;
    /** Control buffer per received datagram: room for the IP_TOS message and one more. */
    private static final int CONTROL_BYTES = 64;
    /** ECN codepoint ECT(0): "ECN-capable transport". */
    private static final int ECT0 = 0x02;

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

    public UdpPort(int localIp, int localPort, int maxFrame, int batch) throws NativeException {
        this(localIp, localPort, maxFrame, batch, 0);
    }

    /** {@code entropyPorts} send sockets bound to localPort + 1 .. localPort + entropyPorts. */
    public UdpPort(int localIp, int localPort, int maxFrame, int batch, int entropyPorts) throws NativeException {
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
            rxBufs[i] = arena.allocate(maxFrame, 64);
            rxViews[i] = rxBufs[i].asByteBuffer();
            txBufs[i] = arena.allocate(maxFrame, 64);
            txViews[i] = txBufs[i].asByteBuffer();
            rxIovs.set(ValueLayout.JAVA_LONG, 16L * i, rxBufs[i].address());
            rxIovs.set(ValueLayout.JAVA_LONG, 16L * i + 8, maxFrame);
            txIovs.set(ValueLayout.JAVA_LONG, 16L * i, txBufs[i].address());
            long m = LibC.MMSGHDR_SIZE * i;
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOV, rxIovs.address() + 16L * i);
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOVLEN, 1L);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_NAME, txAddrs.address() + LibC.SOCKADDR_IN6_SIZE * i);
            txMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_NAMELEN, (int) saSize);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOV, txIovs.address() + 16L * i);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOVLEN, 1L);
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
            counters.rxFrames++;
            if ((flags & MSG_TRUNC) != 0) {
                counters.rxTruncated++;
                continue;
            }
            MemorySegment sa = rxAddrs.asSlice(LibC.SOCKADDR_IN6_SIZE * i, LibC.SOCKADDR_IN6_SIZE);
            ByteBuffer view = rxViews[i];
            view.clear().limit(len);
            handler.onFrame(
                    rxBufs[i],
                    view,
                    len,
                    LibC.sockaddrAddr(sa),
                    LibC.sockaddrInPort(sa),
                    ecn(i, rxMsgs.get(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_CONTROLLEN)));
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

    /** The ECN bits of datagram {@code i}'s TOS byte, from its control messages (0 if absent). */
    private int ecn(int i, long controlLen) {
        long base = (long) CONTROL_BYTES * i;
        long off = 0;
        while (off + LibC.CMSGHDR_SIZE <= Math.min(controlLen, CONTROL_BYTES)) {
            long len = rxControl.get(ValueLayout.JAVA_LONG, base + off);
            if (len < LibC.CMSGHDR_SIZE) {
                break;
            }
            if (len > LibC.CMSGHDR_SIZE
                    && rxControl.get(ValueLayout.JAVA_INT, base + off + 8) == tosLevel
                    && rxControl.get(ValueLayout.JAVA_INT, base + off + 12) == tosType) {
                return rxControl.get(ValueLayout.JAVA_BYTE, base + off + LibC.CMSGHDR_SIZE) & 3;
            }
            off += (len + 7) & ~7L;
        }
        return 0;
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
        if (entropyFds.length == 0) {
            int sent = sendRun(fd, txMsgs, 0, txCount);
            txCount = 0;
            return sent;
        }
        // In commit order: one sendmmsg per run of frames from the same socket. (Grouping the
        // whole batch by socket took fewer calls but put frames on the wire out of the order the
        // transport sent them in, which its cross-path loss detection reads as loss.)
        int n = txCount;
        int sent = 0;
        for (int start = 0; start < n; ) {
            int sock = txSock[start];
            int end = start + 1;
            while (end < n && txSock[end] == sock) {
                end++;
            }
            sent += sendRun(sock, txMsgs, start, end - start);
            start = end;
        }
        txCount = 0;
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
