package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One daemon whose RC QP sends to a peer that the test plays by hand: every frame the requester
 * puts on the wire is captured (nothing is delivered unless the test says so), and the test
 * answers with hand-made ACKs (cumulative RSN, SACK bitmap, path reports, receive window). The
 * link has no delay: a frame is on the other side at the instant it is sent, and time moves only
 * when the test advances the clock. Messages are one packet each (1024 bytes at IBV_MTU_1024),
 * so RSN {@code SQ_PSN + i} is message i.
 */
final class RequesterHarness implements AutoCloseable {
    static final int IP_A = Inet4.parse("198.18.0.1");
    static final int IP_B = Inet4.parse("198.18.0.2");
    static final int PEER_QPN = 0x000777;
    static final int SQ_PSN = 0x100;
    static final int P = 1024;
    /** Bytes of a full data packet (header + payload), the unit of the congestion window. */
    static final int PKT = Wire.HEADER_SIZE + P;

    /** A frame the requester sent. */
    record Pkt(
            int opcode,
            int flags,
            int path,
            int psn,
            int rsn,
            int msn,
            int len,
            int replyEntropy,
            long timeNs,
            int offset,
            int imm) {
        /** A packet of the request stream (SEND, WRITE, READ request, atomic), not a re-request. */
        boolean isData() {
            return opcode >= Wire.OP_SEND
                    && opcode <= Wire.OP_ATOMIC_FA
                    && opcode != Wire.OP_READ_RESP
                    && (flags & Wire.FLAG_RESEND) == 0;
        }

        boolean retransmit() {
            return (flags & Wire.FLAG_RETRANSMIT) != 0;
        }
    }

    final AtomicLong clock = new AtomicLong(1_000_000_000L);
    final MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, clock::get);
    final MemoryLink.End host = link.end(IP_A, 4793);
    final MemoryLink.End peer = link.end(IP_B, 4793);
    final TestNode a;
    final Arena arena = Arena.ofShared();
    final MemorySegment buf;
    final int lkey;
    /** {@link #buf} registered again with LOCAL_WRITE (READ destinations). */
    final int writableLkey;

    final TestNode.CqHandles cq;
    final TestNode.QpHandles qpH;
    final Qp qp;
    final List<TestNode.Cqe> completions = new ArrayList<>();
    /** RSNs the peer placed; every RSN below {@link #cum} is among them. */
    final Set<Integer> placed = new HashSet<>();

    int cum = SQ_PSN;
    private int posted;

    RequesterHarness(int paths) throws Exception {
        this(TransportSettings.SIMULATION.withPaths(paths));
    }

    RequesterHarness(TransportSettings transport) throws Exception {
        link.connect(host, peer);
        a = new TestNode(host, 4793, clock::get, transport);
        assertThat(a.hello().status()).isZero();
        int pd = a.allocPd();
        buf = arena.allocate(1 << 20, 64);
        lkey = a.regMr(pd, buf, 0)[1];
        writableLkey = a.regMr(pd, buf, Ibv.ACCESS_LOCAL_WRITE)[1];
        cq = a.createCq(256, AbiConstants.NO_HANDLE);
        qpH = a.createQp(pd, cq.handle(), cq.handle(), 256, 1, 64);
        a.connect(qpH.handle(), IP_B, PEER_QPN, SQ_PSN, 0, Ibv.MTU_1024);
        qp = a.engine.qpByQpn(qpH.qpn());
        assertThat(qp.payloadPerPacket()).isEqualTo(P);
    }

    RcRequester req() {
        return qp.requester;
    }

    Path path(int i) {
        return qp.requester.path(i);
    }

    Datapath dp() {
        return a.engine.datapath();
    }

    long now() {
        return clock.get();
    }

    /** Posts {@code n} signaled one-packet SENDs. */
    void post(int n) {
        for (int i = 0; i < n; i++) {
            long addr = buf.address() + (long) (posted % 1000) * P;
            assertThat(a.post(
                            qpH.sq(),
                            posted,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {addr},
                            new int[] {P},
                            lkey))
                    .as("SQ has room")
                    .isTrue();
            posted++;
        }
    }

    /** Posts a signaled RDMA READ of {@code len} bytes into {@link #buf} at {@code off}. */
    void postRead(long wrId, long off, int len, int rkey, long remoteAddr) {
        io.metaroce.nic.abi.RingFlyweight ring = qpH.sq();
        int prod = ring.producerAcquire();
        long slot = ring.slotOffset(prod);
        new io.metaroce.nic.abi.WqeFlyweight()
                .wrap(ring.segment(), slot)
                .wrId(wrId)
                .opcode(Ibv.WR_RDMA_READ)
                .sendFlags(Ibv.SEND_SIGNALED)
                .numSge(1)
                .length(len)
                .sge(0, buf.address() + off, len, writableLkey);
        ring.segment()
                .set(
                        java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED,
                        slot + io.metaroce.abi.WqeDescriptor.OFF_RKEY,
                        rkey);
        ring.segment()
                .set(
                        java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED,
                        slot + io.metaroce.abi.WqeDescriptor.OFF_REMOTE_ADDR,
                        remoteAddr);
        ring.producerRelease(prod + 1);
        posted++;
    }

    /** The token the QP under test requires (derived without a connection manager). */
    int token() {
        return a.engine.qpByQpn(qpH.qpn()).rxToken;
    }

    /** The peer sends a READ response for request {@code rsn}: {@code payload} at {@code offset}. */
    void readResponse(int rsn, int offset, int msgLen, byte[] payload) {
        MemorySegment f = peer.claim();
        Wire.header(f, Wire.OP_READ_RESP, 0, 0, 0, rsn, qpH.qpn(), PEER_QPN, token(), 0, offset, msgLen, 0, 0, 0);
        MemorySegment.copy(MemorySegment.ofArray(payload), 0, f, Wire.HEADER_SIZE, payload.length);
        int len = Wire.HEADER_SIZE + payload.length;
        Wire.seal(new java.util.zip.CRC32C(), f, peer.claimedView(), len);
        peer.commit(len, IP_A, 4793, 0);
    }

    /** Send requests posted and not completed yet. */
    int pending() {
        return posted - completions.size();
    }

    /** Advances the clock by {@code ns}, runs one duty cycle and returns what went on the wire. */
    List<Pkt> step(long ns) {
        clock.addAndGet(ns);
        return pump();
    }

    /** One duty cycle now; returns the frames sent. */
    List<Pkt> pump() {
        a.pump();
        List<Pkt> out = new ArrayList<>();
        long t = now();
        peer.poll((f, view, length, srcIp, srcPort, ecn) -> {
            assertThat(Wire.crc(new java.util.zip.CRC32C(), view, length)).isEqualTo(Wire.u32(f, Wire.OFF_CRC));
            assertThat(Wire.u32(f, Wire.OFF_DST_QPN)).isEqualTo(PEER_QPN);
            out.add(new Pkt(
                    Wire.u8(f, Wire.OFF_OPCODE),
                    Wire.u8(f, Wire.OFF_FLAGS),
                    Wire.u8(f, Wire.OFF_PATH),
                    Wire.u32(f, Wire.OFF_PSN),
                    Wire.u32(f, Wire.OFF_RSN),
                    Wire.u32(f, Wire.OFF_MSN),
                    length - Wire.HEADER_SIZE,
                    Wire.u16(f, Wire.OFF_REPLY_ENTROPY),
                    t,
                    Wire.u32(f, Wire.OFF_OFFSET),
                    Wire.u32(f, Wire.OFF_IMM)));
        });
        completions.addAll(a.poll(cq.ring()));
        return out;
    }

    /** The peer places these data packets (duplicates are harmless). */
    void place(List<Pkt> pkts) {
        for (Pkt p : pkts) {
            if (p.isData()) {
                placed.add(p.rsn());
            }
        }
        while (placed.contains(cum)) {
            cum++;
        }
    }

    /**
     * The peer sends an ACK with its cumulative RSN and SACK bitmap, window {@code rwnd} and path
     * reports given as triples (path id, CE count, highest PSN); it arrives at once.
     */
    void ack(int rwnd, int... reports) {
        MemorySegment f = peer.claim();
        int n = reports.length / 3;
        Wire.header(f, Wire.OP_ACK, 0, 0, 0, cum, qpH.qpn(), PEER_QPN, token(), 0, 0, n, 0, 0, rwnd);
        for (int w = 0; w < Wire.SACK_BYTES / 8; w++) {
            long bits = 0;
            for (int j = 0; j < 64; j++) {
                if (placed.contains(cum + 64 * w + j)) {
                    bits |= 1L << j;
                }
            }
            Wire.putSackWord(f, Wire.HEADER_SIZE + 8L * w, bits);
        }
        long off = Wire.OFF_REPORTS;
        for (int k = 0; k < n; k++, off += Wire.REPORT_SIZE) {
            Wire.putU8(f, off, reports[3 * k]);
            Wire.putU8(f, off + 1, reports[3 * k + 1]);
            Wire.putU16(f, off + 2, 0);
            Wire.putU32(f, off + 4, reports[3 * k + 2]);
        }
        int len = (int) off;
        ByteBuffer view = peer.claimedView();
        Wire.seal(new java.util.zip.CRC32C(), f, view, len);
        peer.commit(len, IP_A, 4793, 0);
    }

    /** The peer places {@code pkts} and reports the highest PSN it saw on each of their paths. */
    void ackPlaced(List<Pkt> pkts, int rwnd) {
        place(pkts);
        int[] highest = new int[RcRequester.MAX_PATHS];
        java.util.Arrays.fill(highest, Integer.MIN_VALUE);
        for (Pkt p : pkts) {
            if (highest[p.path()] == Integer.MIN_VALUE || p.psn() - highest[p.path()] > 0) {
                highest[p.path()] = p.psn();
            }
        }
        List<Integer> r = new ArrayList<>();
        for (int i = 0; i < highest.length; i++) {
            if (highest[i] != Integer.MIN_VALUE) {
                r.add(i);
                r.add(0);
                r.add(highest[i]);
            }
        }
        ack(rwnd, r.stream().mapToInt(Integer::intValue).toArray());
    }

    static List<Pkt> data(List<Pkt> pkts) {
        return pkts.stream().filter(Pkt::isData).toList();
    }

    static List<Pkt> onPath(List<Pkt> pkts, int path) {
        return pkts.stream().filter(p -> p.path() == path).toList();
    }

    /**
     * A clean round: sends what the requester wants to send now, and after {@code rttNs} the peer
     * places all of it and acknowledges; returns the data sent.
     */
    List<Pkt> cleanRound(long rttNs) {
        List<Pkt> sent = data(pump());
        clock.addAndGet(rttNs);
        ackPlaced(sent, RcRequester.WINDOW);
        return sent;
    }

    @Override
    public void close() {
        a.close();
        arena.close();
    }
}
