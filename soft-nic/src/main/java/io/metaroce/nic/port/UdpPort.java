package io.metaroce.nic.port;

import io.metaroce.nic.sys.Errno;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * A plain non-blocking UDP socket bound to the served address and port; frames go out with
 * sendmmsg and come in with recvmmsg, a batch per call. The kernel builds IP/UDP headers.
 */
public final class UdpPort implements Port {
    private static final int MSG_TRUNC = 0x20;

    private final int fd;
    private final int localIp;
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
    // TX: same shape
    private final MemorySegment txMsgs;
    private final MemorySegment[] txBufs;
    private final ByteBuffer[] txViews;
    private final MemorySegment txIovs;
    private final MemorySegment txAddrs;
    private int txCount;
    private int claimed = -1;

    public UdpPort(int localIp, int localPort, int maxFrame, int batch) throws NativeException {
        this.localIp = localIp;
        this.localPort = localPort;
        this.maxFrame = maxFrame;
        this.batch = batch;
        int s = LibC.socket(LibC.AF_INET, LibC.SOCK_DGRAM | LibC.SOCK_NONBLOCK | LibC.SOCK_CLOEXEC, 0);
        try {
            LibC.setsockoptInt(s, LibC.SOL_SOCKET, LibC.SO_RCVBUF, 8 << 20);
            LibC.setsockoptInt(s, LibC.SOL_SOCKET, LibC.SO_SNDBUF, 8 << 20);
            LibC.bindInet4(s, localIp, localPort);
        } catch (NativeException e) {
            LibC.close(s);
            throw e;
        }
        this.fd = s;
        rxMsgs = arena.allocate(LibC.MMSGHDR_SIZE * batch, 8);
        txMsgs = arena.allocate(LibC.MMSGHDR_SIZE * batch, 8);
        rxAddrs = arena.allocate(LibC.SOCKADDR_IN_SIZE * batch, 8);
        txAddrs = arena.allocate(LibC.SOCKADDR_IN_SIZE * batch, 8);
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
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_NAME,
                    txAddrs.address() + LibC.SOCKADDR_IN_SIZE * i);
            txMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_NAMELEN, (int) LibC.SOCKADDR_IN_SIZE);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOV, txIovs.address() + 16L * i);
            txMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_IOVLEN, 1L);
        }
    }

    @Override
    public int poll(FrameHandler handler) {
        for (int i = 0; i < batch; i++) {
            long m = LibC.MMSGHDR_SIZE * i;
            rxMsgs.set(ValueLayout.JAVA_LONG, m + LibC.MSGHDR_NAME,
                    rxAddrs.address() + LibC.SOCKADDR_IN_SIZE * i);
            rxMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_NAMELEN, (int) LibC.SOCKADDR_IN_SIZE);
            rxMsgs.set(ValueLayout.JAVA_INT, m + LibC.MSGHDR_FLAGS, 0);
        }
        int n = LibC.recvmmsg(fd, rxMsgs, batch, LibC.MSG_DONTWAIT);
        if (n <= 0) {
            return 0;
        }
        for (int i = 0; i < n; i++) {
            long m = LibC.MMSGHDR_SIZE * i;
            int len = rxMsgs.get(ValueLayout.JAVA_INT, m + LibC.MMSGHDR_LEN);
            int flags = rxMsgs.get(ValueLayout.JAVA_INT, m + LibC.MSGHDR_FLAGS);
            counters.rxFrames++;
            if ((flags & MSG_TRUNC) != 0) {
                counters.rxTruncated++;
                continue;
            }
            MemorySegment sa = rxAddrs.asSlice(LibC.SOCKADDR_IN_SIZE * i, LibC.SOCKADDR_IN_SIZE);
            ByteBuffer view = rxViews[i];
            view.clear().limit(len);
            handler.onFrame(rxBufs[i], view, len, LibC.sockaddrInAddr(sa), LibC.sockaddrInPort(sa));
        }
        return n;
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
        // One socket for now: every entropy leaves from the bound port (one path).
        int i = claimed;
        txIovs.set(ValueLayout.JAVA_LONG, 16L * i + 8, length);
        LibC.writeSockaddrIn(txAddrs.asSlice(LibC.SOCKADDR_IN_SIZE * i, LibC.SOCKADDR_IN_SIZE), dstIp,
                dstPort);
        txCount++;
        claimed = -1;
    }

    @Override
    public int flush() {
        int sent = 0;
        while (sent < txCount) {
            int n = LibC.sendmmsg(fd, txMsgs.asSlice(LibC.MMSGHDR_SIZE * sent), txCount - sent, 0);
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
        txCount = 0;
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
        LibC.close(fd);
        arena.close();
    }
}
