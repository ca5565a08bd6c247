package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.dma.DmaBatch;
import io.metaroce.nic.dma.RemoteAtomic;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.port.Port;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.LongSupplier;
import java.util.zip.CRC32C;

/**
 * What the per-QP transport halves share on the engine thread: the port, the MR table, the DMA
 * batches, a CRC32C, the staging of received packets whose payload is in flight to the
 * application (one scatter batch per RX batch), and the QPs owing an ACK.
 */
public final class Datapath implements AutoCloseable {
    public static final int STAGE_CAPACITY = 128;

    public final Port port;
    public final MrTable mrs;
    public final DmaBatch gather = new DmaBatch(false, DmaBatch.IOV_MAX);
    public final DmaBatch scatter = new DmaBatch(true, DmaBatch.IOV_MAX);
    public final CRC32C crc = new CRC32C();
    public final TransportCounters counters = new TransportCounters();
    /** What this datapath was built with; the fields below are its values, read on the hot path. */
    public final TransportSettings settings;
    /** {@link TransportSettings#rtoInitialNs} and {@link TransportSettings#rtoMaxNs}. */
    public final long rtoInitialNs;

    public final long rtoMaxNs;
    /** {@link TransportSettings#rtoMinNs}: the per-path RTO floor. */
    public final long rtoMinNs;
    /** {@link TransportSettings#tlpMinNs}: the tail-loss probe floor. */
    public final long tlpMinNs;
    /** {@link TransportSettings#ccSlackMinNs}: the delay target's smallest slack. */
    public final long ccSlackMinNs;
    /** {@link TransportSettings#lossDetectVarFactor}. */
    public final int lossDetectVarFactor;
    /** {@link TransportSettings#qpWindowGain}. */
    public final int qpWindowGain;
    /** {@link TransportSettings#paths}: paths per RC QP (the baseline uses one). */
    public final int paths;
    /** {@link TransportSettings#entropyPorts}. */
    public final int entropyPorts;
    /** The port's network planes (1 but on a multi-plane device): a path's plane is its entropy mod this. */
    public final int planes;
    /** Probe budget (spec 10): probes a QP, and the whole daemon, may send per epoch. */
    public static final int PROBES_PER_QP = 16;

    public static final int PROBES_PER_DAEMON = 64;
    public static final long PROBE_EPOCH_NS = 1_000_000L;
    public final int probesPerQp;
    public final int probesPerDaemon;
    /** The current probe epoch ({@code now / PROBE_EPOCH_NS}), probes sent in it, QPs that wanted to. */
    long probeEpoch = Long.MIN_VALUE;

    int probesInEpoch;
    int probersInEpoch;
    int probersLastEpoch;

    /** Starts a new probe epoch when {@code nowNs} has left the current one. */
    void probeEpoch(long nowNs) {
        long e = Math.floorDiv(nowNs, PROBE_EPOCH_NS);
        if (e != probeEpoch) {
            probersLastEpoch = e == probeEpoch + 1 ? probersInEpoch : 0;
            probeEpoch = e;
            probesInEpoch = 0;
            probersInEpoch = 0;
        }
    }
    /** {@link TransportSettings#baseline}: one path, cumulative ACKs, go-back-N, fixed RTO. */
    public final boolean baseline;
    /** The connection manager's view of QP life (NONE: no manager, no tokens). */
    public QpLifecycle lifecycle = QpLifecycle.NONE;

    /** Responder: the 8-byte read-modify-write of atomics. */
    final RemoteAtomic atomic = new RemoteAtomic();

    private final Arena arena = Arena.ofShared();
    /** Requester: an atomic response's original value in host order, one slot per stage index. */
    private final MemorySegment atomicScratch = arena.allocate(8L * STAGE_CAPACITY, 8);
    /** Responder: READ responses are gathered here before they are copied into port frames. */
    static final int RESPONSE_BURST = 32;

    final MemorySegment[] responseFrames = new MemorySegment[RESPONSE_BURST];

    private static final int STAGE_RECEIVE = 0;
    private static final int STAGE_RESPONSE = 1;
    private final int[] stagedKind = new int[STAGE_CAPACITY];
    private final Qp[] stagedQp = new Qp[STAGE_CAPACITY];
    private final int[] stagedPsn = new int[STAGE_CAPACITY];
    private final int[] stagedLen = new int[STAGE_CAPACITY];
    private final RecvWr[] stagedWr = new RecvWr[STAGE_CAPACITY];
    private final boolean[] stagedFailed = new boolean[STAGE_CAPACITY];
    private int staged;
    private final Qp[] ackQps = new Qp[STAGE_CAPACITY];
    private int ackCount;

    /**
     * The engine's clock, for the rare decision that needs the time a packet was read rather than
     * the time its receive batch started (an RNR NAK's wait, T-6.6).
     */
    public final LongSupplier clock;

    public Datapath(Port port, MrTable mrs, TransportSettings settings, LongSupplier clock) {
        this.clock = clock;
        this.port = port;
        this.mrs = mrs;
        this.settings = settings;
        this.rtoInitialNs = settings.rtoInitialNs();
        this.rtoMaxNs = settings.rtoMaxNs();
        this.rtoMinNs = settings.rtoMinNs();
        this.tlpMinNs = settings.tlpMinNs();
        this.ccSlackMinNs = settings.ccSlackMinNs();
        this.lossDetectVarFactor = settings.lossDetectVarFactor();
        this.qpWindowGain = settings.qpWindowGain();
        this.paths = settings.paths();
        this.entropyPorts = settings.entropyPorts();
        this.planes = port.planes();
        this.probesPerQp = settings.probesPerQp();
        this.probesPerDaemon = settings.probesPerDaemon();
        this.baseline = settings.baseline();
        for (int i = 0; i < RESPONSE_BURST; i++) {
            responseFrames[i] = arena.allocate(port.maxFrame(), 64);
        }
    }

    /** Largest payload of a packet with {@code headerBytes} of headers on this port. */
    /**
     * Sends the frame last claimed from the port ({@code frame}, {@code length} bytes, built in
     * place): seals it with its CRC32C (spec 12) and queues it to {@code dstIp:dstPort} with
     * {@code entropy}. The one way an RC packet leaves: claim, build, then this.
     */
    void sendClaimed(MemorySegment frame, int length, int dstIp, int dstPort, int entropy) {
        Wire.seal(crc, frame, port.claimedView(), length);
        port.commit(length, dstIp, dstPort, entropy);
    }

    int framePayloadMax(int headerBytes) {
        return port.maxFrame() - headerBytes;
    }

    /**
     * Makes room to stage a packet of a QP of process {@code pid}: commits what is staged when the
     * batch belongs to another process or could overflow.
     */
    void prepareStage(int pid) {
        if (staged > 0
                && (scatter.pid() != pid
                        || staged == STAGE_CAPACITY
                        || scatter.count() + AbiConstants.MRCE_MAX_SGE + 1 > DmaBatch.IOV_MAX)) {
            commitRx();
        }
        if (staged == 0) {
            scatter.begin(pid);
        }
    }

    /** Index the next staged packet gets (its DMA entries carry it as tag). */
    int nextStage() {
        return staged;
    }

    /**
     * Stages a responder packet (SEND or WRITE data) of RSN {@code psn}; {@code wr} is the receive
     * it counts towards (null for an RDMA WRITE).
     */
    void stage(Qp qp, int psn, int payloadLen, RecvWr wr) {
        stagedKind[staged] = STAGE_RECEIVE;
        stagedQp[staged] = qp;
        stagedPsn[staged] = psn;
        stagedLen[staged] = payloadLen;
        stagedWr[staged] = wr;
        stagedFailed[staged] = false;
        staged++;
    }

    /** Stages a requester's READ or atomic response for request {@code rsn} of tracker {@code tracker}. */
    void stageResponse(Qp qp, int rsn, int tracker) {
        stagedKind[staged] = STAGE_RESPONSE;
        stagedQp[staged] = qp;
        stagedPsn[staged] = rsn;
        stagedLen[staged] = tracker;
        stagedWr[staged] = null;
        stagedFailed[staged] = false;
        staged++;
    }

    /** Address of the 8-byte scratch of stage index {@code tag} (an atomic's original value). */
    long atomicScratch(int tag, long value) {
        atomicScratch.set(java.lang.foreign.ValueLayout.JAVA_LONG, 8L * tag, value);
        return atomicScratch.address() + 8L * tag;
    }

    /** Runs the scatter batch, then lets each staged packet count (or fail) on its QP. */
    public int commitRx() {
        if (staged == 0) {
            return 0;
        }
        if (scatter.count() > 0 && scatter.flush() > 0) {
            for (int i = 0, n = scatter.count(); i < n; i++) {
                if (scatter.failed(i)) {
                    stagedFailed[scatter.tag(i)] = true;
                }
            }
        }
        int n = staged;
        for (int i = 0; i < n; i++) {
            if (stagedKind[i] == STAGE_RESPONSE) {
                stagedQp[i].requester.commitResponse(this, stagedPsn[i], stagedLen[i], stagedFailed[i]);
            } else {
                stagedQp[i].responder.commit(this, stagedPsn[i], stagedLen[i], stagedWr[i], stagedFailed[i]);
            }
            stagedQp[i] = null;
            stagedWr[i] = null;
        }
        staged = 0;
        scatter.begin(0);
        return n;
    }

    /** Notes that {@code qp} owes its peer an ACK at the end of this RX batch. */
    void ackLater(Qp qp) {
        if (!qp.responder.ackQueued && ackCount < ackQps.length) {
            qp.responder.ackQueued = true;
            ackQps[ackCount++] = qp;
        }
    }

    /** Sends one coalesced ACK per QP that received something. */
    public int sendAcks() {
        int n = ackCount;
        for (int i = 0; i < n; i++) {
            Qp qp = ackQps[i];
            qp.responder.ackQueued = false;
            qp.responder.sendAck(this);
            ackQps[i] = null;
        }
        ackCount = 0;
        return n;
    }

    @Override
    public void close() {
        gather.close();
        scatter.close();
        atomic.close();
        arena.close();
    }
}
