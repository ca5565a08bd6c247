package io.metaroce.conformance;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * The suite's data plane: plain UDP sockets on the suite's address. One socket on the data port
 * receives everything the target sends (transport.md §1: all packets go to the data port); one
 * socket per path, on its own source port (the path's entropy), sends. Every datagram in or out
 * is recorded with its addresses, so that a failing case can be written out as a pcap.
 */
final class WirePeer implements AutoCloseable {
    static final int PATHS = 4;

    /** A datagram the suite sent or received. */
    record Frame(long timeNs, boolean out, InetSocketAddress src, InetSocketAddress dst, byte[] data, boolean tcp) {
        /** A UDP datagram. */
        Frame(long timeNs, boolean out, InetSocketAddress src, InetSocketAddress dst, byte[] data) {
            this(timeNs, out, src, dst, data, false);
        }
    }

    private final DatagramSocket rx;
    private final DatagramSocket[] tx = new DatagramSocket[PATHS];
    private final InetSocketAddress target;
    final InetAddress local;
    final int dataPort;
    private final List<Frame> log = new ArrayList<>();
    /** Packets received that no wait matched yet, oldest first: a later wait may want them. */
    private final List<Packet> backlog = new ArrayList<>();

    WirePeer(InetAddress local, int dataPort, InetSocketAddress target) throws IOException {
        this.local = local;
        this.dataPort = dataPort;
        this.target = target;
        rx = new DatagramSocket(new InetSocketAddress(local, dataPort));
        for (int i = 0; i < PATHS; i++) {
            tx[i] = new DatagramSocket(new InetSocketAddress(local, entropy(i)));
        }
    }

    /** The source port (entropy) of the suite's path {@code i}. */
    int entropy(int path) {
        return dataPort + 1 + path;
    }

    /** Sends on the socket of {@code path mod PATHS} to the target's data port. */
    void send(int path, byte[] datagram) throws IOException {
        DatagramSocket s = tx[Math.floorMod(path, PATHS)];
        s.send(new DatagramPacket(datagram, datagram.length, target));
        record(true, (InetSocketAddress) s.getLocalSocketAddress(), target, datagram);
    }

    void send(int path, Packet p) throws IOException {
        send(path, p.encode());
    }

    /** As {@link #send(int, Packet)}, with the IP header's ECN field set to CE (as a congested queue marks it). */
    void sendCe(int path, Packet p) throws IOException {
        DatagramSocket s = tx[Math.floorMod(path, PATHS)];
        s.setTrafficClass(0x03);
        try {
            send(path, p);
        } finally {
            s.setTrafficClass(0);
        }
    }

    /** The next datagram from the target that decodes and matches, within timeoutMs; else null. */
    Packet receive(long timeoutMs, Predicate<Packet> match) throws IOException {
        for (int i = 0; i < backlog.size(); i++) {
            if (match.test(backlog.get(i))) {
                return backlog.remove(i);
            }
        }
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        byte[] b = new byte[65536];
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                return null;
            }
            rx.setSoTimeout((int) Math.max(1, left));
            DatagramPacket d = new DatagramPacket(b, b.length);
            try {
                rx.receive(d);
            } catch (SocketTimeoutException e) {
                return null;
            }
            byte[] data = java.util.Arrays.copyOf(b, d.getLength());
            record(
                    false,
                    (InetSocketAddress) d.getSocketAddress(),
                    (InetSocketAddress) rx.getLocalSocketAddress(),
                    data);
            Packet p = Packet.decode(data, data.length);
            if (p != null && match.test(p)) {
                return p;
            }
            if (p != null) {
                backlog.add(p);
            }
        }
    }

    /** Everything that arrives within {@code ms} (a quiet period). */
    List<Packet> drain(long ms) throws IOException {
        List<Packet> got = new ArrayList<>(backlog);
        backlog.clear();
        long deadline = System.nanoTime() + ms * 1_000_000L;
        while (true) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                return got;
            }
            Packet p = receive(left, x -> true);
            if (p == null) {
                return got;
            }
            got.add(p);
        }
    }

    private synchronized void record(boolean out, InetSocketAddress src, InetSocketAddress dst, byte[] data) {
        log.add(new Frame(System.nanoTime(), out, src, dst, data));
    }

    /** Records a connection-manager frame (TCP) the suite sent or received, for the failing case's pcap. */
    synchronized void recordTcp(boolean out, InetSocketAddress src, InetSocketAddress dst, byte[] frame) {
        log.add(new Frame(System.nanoTime(), out, src, dst, frame, true));
    }

    /** The frames recorded since mark {@code from} ({@link #mark()}). */
    synchronized List<Frame> framesSince(int from) {
        return new ArrayList<>(log.subList(Math.min(from, log.size()), log.size()));
    }

    /** Forgets the packets no wait has taken. */
    synchronized void forget() {
        backlog.clear();
    }

    /** Starts a case: forgets unmatched packets of earlier ones; returns the log position. */
    synchronized int mark() {
        backlog.clear();
        return log.size();
    }

    @Override
    public void close() {
        rx.close();
        for (DatagramSocket s : tx) {
            s.close();
        }
    }
}
