package io.metaroce.conformance;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The suite's connection manager (docs/spec/connection-manager.md), written from the spec: it
 * listens on the suite's address at the CM port (the target dials it when its QP reaches RTR,
 * §3), says HELLO first (§1), answers a CONNECT for one of the suite's QPs with ACCEPT and the
 * suite's endpoint (§2, §3), PINGs every heartbeat and answers PING with PONG (§5), and records
 * every frame the target sends, for the CM cases.
 */
final class CmPeer implements AutoCloseable {
    static final int MAGIC = 0x4d52434d;
    static final int VERSION = 3;
    static final int HELLO = 1, CONNECT = 2, ACCEPT = 3, REJECT = 4, DISCONNECT = 5, PING = 6, PONG = 7;
    static final int HEARTBEAT_MS = 500;

    /** An endpoint (§2): one QP's half of a connection. */
    record Endpoint(int qpn, int peerQpn, int mtu, int window, int startPsn, int token, int linkMtu, int[] entropies) {
        byte[] encode() {
            ByteBuffer b = ByteBuffer.allocate(28 + 2 * entropies.length);
            b.putInt(qpn)
                    .putInt(peerQpn)
                    .putInt(mtu)
                    .putInt(window)
                    .putInt(startPsn)
                    .putInt(token)
                    .putShort((short) entropies.length)
                    .putShort((short) linkMtu);
            for (int e : entropies) {
                b.putShort((short) e);
            }
            return b.array();
        }

        static Endpoint decode(ByteBuffer b) {
            int qpn = b.getInt(),
                    peer = b.getInt(),
                    mtu = b.getInt(),
                    win = b.getInt(),
                    psn = b.getInt(),
                    token = b.getInt(),
                    paths = b.getShort() & 0xffff,
                    link = b.getShort() & 0xffff;
            int[] e = new int[paths];
            for (int i = 0; i < paths && b.remaining() >= 2; i++) {
                e[i] = b.getShort() & 0xffff;
            }
            return new Endpoint(qpn, peer, mtu, win, psn, token, link, e);
        }
    }

    /** A frame received: type, flags, payload, and the connection it came on. */
    record Frame(int type, int flags, byte[] payload, Conn conn) {}

    /** One TCP connection with the target's manager. */
    final class Conn {
        final Socket socket;
        final OutputStream out;
        volatile byte[] hello;
        volatile boolean closed;

        Conn(Socket s) throws IOException {
            socket = s;
            out = s.getOutputStream();
        }

        synchronized void send(int type, int flags, byte[] payload) throws IOException {
            ByteBuffer b = ByteBuffer.allocate(4 + payload.length);
            b.putShort((short) (4 + payload.length))
                    .put((byte) type)
                    .put((byte) flags)
                    .put(payload);
            out.write(b.array());
            tap(true, b.array());
            out.flush();
        }

        /** Hands a frame to the recorder (for the pcap of a failing case). */
        private void tap(boolean sent, byte[] frame) {
            WirePeer w = recorder;
            if (w != null
                    && socket.getLocalSocketAddress() instanceof InetSocketAddress me
                    && socket.getRemoteSocketAddress() instanceof InetSocketAddress them) {
                w.recordTcp(sent, sent ? me : them, sent ? them : me, frame);
            }
        }

        void sendRaw(byte[] bytes) throws IOException {
            synchronized (this) {
                out.write(bytes);
                out.flush();
            }
        }

        private void readLoop() {
            try (DataInputStream in = new DataInputStream(socket.getInputStream())) {
                while (true) {
                    int len = in.readUnsignedShort();
                    int type = in.readUnsignedByte();
                    int flags = in.readUnsignedByte();
                    if (len < 4) {
                        throw new IOException("frame length " + len);
                    }
                    byte[] payload = new byte[len - 4];
                    in.readFully(payload);
                    tap(
                            false,
                            ByteBuffer.allocate(len)
                                    .putShort((short) len)
                                    .put((byte) type)
                                    .put((byte) flags)
                                    .put(payload)
                                    .array());
                    onFrame(new Frame(type, flags, payload, this));
                }
            } catch (IOException e) {
                // closed, by either side
            } finally {
                closed = true;
                conns.remove(this);
                synchronized (CmPeer.this) {
                    CmPeer.this.notifyAll();
                }
            }
        }
    }

    private final ServerSocket server;
    private final InetAddress local;
    private final int cmPort;
    private volatile long bootId = new SecureRandom().nextLong();
    /** The suite's QP whose CONNECT the manager leaves unanswered (a peer silent mid-handshake); 0: none. */
    private volatile int withheld;

    private final List<Conn> conns = new CopyOnWriteArrayList<>();
    private final Map<Integer, Endpoint> ours = new HashMap<>();
    private final Map<Integer, Endpoint> theirConnects = new HashMap<>();
    private final List<Frame> received = new ArrayList<>();
    private final Thread acceptor;
    private final Thread heartbeat;
    private volatile boolean closing;
    /** Where the frames sent and received are recorded (with the datagrams), or null. */
    volatile WirePeer recorder;
    /** While set, the suite's manager sends nothing: no PING, no PONG (a dead peer, CM §5). */
    volatile boolean silent;

    private long pingSeq;

    CmPeer(InetAddress local, int cmPort) throws IOException {
        this.local = local;
        this.cmPort = cmPort;
        server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new InetSocketAddress(local, cmPort));
        acceptor = Thread.ofPlatform().daemon().name("cm-accept").start(this::acceptLoop);
        heartbeat = Thread.ofPlatform().daemon().name("cm-heartbeat").start(this::heartbeatLoop);
    }

    private void acceptLoop() {
        while (!closing) {
            try {
                start(server.accept());
            } catch (IOException e) {
                return;
            }
        }
    }

    private Conn start(Socket s) throws IOException {
        s.setTcpNoDelay(true);
        Conn c = new Conn(s);
        conns.add(c);
        c.send(HELLO, 0, hello());
        Thread.ofPlatform().daemon().name("cm-read").start(c::readLoop);
        return c;
    }

    byte[] hello() {
        ByteBuffer b = ByteBuffer.allocate(28);
        b.putInt(MAGIC)
                .putShort((short) VERSION)
                .putShort((short) 0)
                .putInt(0)
                .putLong(bootId)
                .putShort((short) 0)
                .putShort((short) HEARTBEAT_MS)
                .put(local.getAddress());
        return b.array();
    }

    /** Dials the target's manager (a second connection is valid, §1) and says HELLO. */
    Conn dial(InetAddress target, int port) throws IOException {
        Socket s = new Socket();
        s.bind(new InetSocketAddress(local, 0));
        s.connect(new InetSocketAddress(target, port), 5000);
        return start(s);
    }

    private void heartbeatLoop() {
        while (!closing) {
            try {
                Thread.sleep(HEARTBEAT_MS); // a protocol period, not test synchronisation
            } catch (InterruptedException e) {
                return;
            }
            for (Conn c : conns) {
                if (c.hello != null && !silent) {
                    try {
                        c.send(
                                PING,
                                0,
                                ByteBuffer.allocate(8).putLong(++pingSeq).array());
                    } catch (IOException ignored) {
                        // its reader notices
                    }
                }
            }
        }
    }

    private void onFrame(Frame f) throws IOException {
        synchronized (this) {
            received.add(f);
            notifyAll();
        }
        ByteBuffer b = ByteBuffer.wrap(f.payload());
        switch (f.type()) {
            case HELLO -> f.conn().hello = f.payload();
            case PING -> {
                if (!silent) {
                    f.conn().send(PONG, 0, f.payload());
                }
            }
            case CONNECT -> {
                int requestId = b.getInt();
                Endpoint theirs = Endpoint.decode(b);
                Endpoint mine;
                synchronized (this) {
                    theirConnects.put(theirs.peerQpn(), theirs);
                    mine = ours.get(theirs.peerQpn());
                    notifyAll();
                }
                if (theirs.peerQpn() == withheld) {
                    // no answer: the target's request must time out (CM-3.3)
                } else if (mine == null) {
                    f.conn()
                            .send(
                                    REJECT,
                                    0,
                                    ByteBuffer.allocate(16)
                                            .putInt(requestId)
                                            .putInt(theirs.peerQpn())
                                            .putInt(theirs.qpn())
                                            .putShort((short) 1)
                                            .putShort((short) 0)
                                            .array());
                } else {
                    byte[] e = mine.encode();
                    f.conn()
                            .send(
                                    ACCEPT,
                                    0,
                                    ByteBuffer.allocate(4 + e.length)
                                            .putInt(requestId)
                                            .put(e)
                                            .array());
                }
            }
            default -> {
                // recorded above
            }
        }
    }

    /** A CONNECT naming the suite's QP {@code qpn} gets no answer at all (0: every one is answered). */
    void withhold(int qpn) {
        withheld = qpn;
    }

    /**
     * The suite's manager "restarts": a new boot id, every connection closed, and a new one dialed
     * to the target with a HELLO that carries the new boot id (CM §5).
     */
    void restart(InetAddress target, int port) throws IOException {
        bootId = new SecureRandom().nextLong();
        for (Conn c : conns) {
            c.socket.close();
        }
        dial(target, port);
    }

    /** The suite's QP {@code mine.qpn()} exists: a CONNECT naming it is accepted with this endpoint. */
    synchronized void register(Endpoint mine) {
        ours.put(mine.qpn(), mine);
    }

    synchronized void unregister(int qpn) {
        ours.remove(qpn);
        theirConnects.remove(qpn);
    }

    /** The target's CONNECT for the suite's QP {@code ourQpn}, waiting up to timeoutMs; null if none. */
    synchronized Endpoint awaitConnect(int ourQpn, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!theirConnects.containsKey(ourQpn)) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                return null;
            }
            wait(left);
        }
        return theirConnects.get(ourQpn);
    }

    /** The first frame of {@code type} received after index {@code from} on any connection; null on timeout. */
    synchronized Frame awaitFrame(int from, int type, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            for (int i = from; i < received.size(); i++) {
                if (received.get(i).type() == type) {
                    return received.get(i);
                }
            }
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                return null;
            }
            wait(left);
        }
    }

    /** Waits until {@code c} is closed (by the target), up to timeoutMs. */
    synchronized boolean awaitClosed(Conn c, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!c.closed) {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
        return true;
    }

    synchronized int receivedCount() {
        return received.size();
    }

    synchronized List<Frame> receivedSince(int from) {
        return new ArrayList<>(received.subList(Math.min(from, received.size()), received.size()));
    }

    @Override
    public void close() throws IOException {
        closing = true;
        heartbeat.interrupt();
        server.close();
        for (Conn c : conns) {
            c.socket.close();
        }
    }
}
