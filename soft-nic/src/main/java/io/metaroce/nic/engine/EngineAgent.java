package io.metaroce.nic.engine;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.PortCounters;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import io.metaroce.nic.transport.ConformanceBreak;
import io.metaroce.nic.transport.Datapath;
import io.metaroce.nic.transport.Qp;
import io.metaroce.nic.transport.TransportSettings;
import io.metaroce.nic.transport.UdTransport;
import io.metaroce.nic.transport.UdWire;
import io.metaroce.nic.transport.Wire;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data-plane agent: one thread (or a test) calls {@link #doWork} in a duty cycle. Control
 * threads reach it only through {@link #submit} (a bounded command queue plus a wake-up eventfd);
 * every QP's state and transport belong to this agent's thread.
 */
public final class EngineAgent implements Port.FrameHandler, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EngineAgent.class);

    /** QPN = generation << 14 | table index (16384 slots, 1023 generations per slot). */
    public static final int QP_INDEX_BITS = 14;

    public static final int MAX_QP = 1 << QP_INDEX_BITS;
    /**
     * The frame (UDP payload) a port must carry at least: the largest packet of IBV_MTU_4096, an
     * RDMA WRITE with its RETH and 4096 bytes of payload (48 + 16 + 4096 bytes). The daemon's
     * ports carry {@link Wire#frameBytes} of the netdev MTU (up to 8150 bytes, jumbo packets).
     */
    public static final int FRAME_BYTES = Wire.HEADER_SIZE + Wire.RETH_SIZE + 4096;
    /**
     * RX batches read per duty cycle before the QPs' timers run: enough to drain what piles up in
     * the socket during a scheduling stall of a few ms, so that timers judge paths on fresh ACKs.
     * 10^4 QPs with a message each bring 10^4 ACKs at once: with 16 batches (512 frames) a cycle,
     * the timers of most QPs fired on ACKs still in the socket, their retransmissions lengthened
     * the cycles, and the sender read a few thousand of 50 thousand ACKs before the QPs failed
     * (run-qp-scale --qps 10000); 256 batches (8192 frames) drain such a round in one or two.
     */
    private static final int RX_BATCHES_PER_CYCLE = 256;

    private static final MemorySegment WAKE_ONE = Arena.global().allocateFrom(ValueLayout.JAVA_LONG, 1L);

    private final Port port;
    /** What the transport sends through: the port, but frames to ourselves loop back locally. */
    private final LoopbackPort loop;

    private final Datapath dp;
    private final UdTransport ud;
    private final ArrayBlockingQueue<Runnable> commands = new ArrayBlockingQueue<>(4096);
    private final Qp[] byIndex = new Qp[MAX_QP];
    private final Qp[] active = new Qp[MAX_QP];
    /** The table index of {@code active[i]}: a duty cycle reads it and the asleep flags only. */
    private final int[] activeIndex = new int[MAX_QP];

    private int activeCount;
    /**
     * Asleep QPs whose SQ, RQ and state a duty cycle looks at, at most ({@link #pollQps}): a
     * rotating slice of the table, from {@link #lookFrom}. With more QPs, a post to an asleep QP
     * is seen within {@code ceil(QPs / LOOK_SLICE)} duty cycles, and a cycle does not touch every
     * QP's memory (QpFootprintBench, 3000 QP pairs: an idle cycle a third of what it took; the
     * slow single QP among many of docs/benchmarks.md, QP scale, lies elsewhere). Their timers are
     * looked at every cycle.
     */
    public static final int LOOK_SLICE = 1024;

    private int lookFrom;
    /**
     * The look at the state of asleep QPs whose application rings through a doorbell page: a
     * slice every {@link #STATE_LOOK_NS} (their posts set their bits, and commands and the
     * connection manager wake them, {@link #wake}; this look is the safety net), from here.
     */
    private int stateLookFrom;

    private long stateLookNs;
    /** How often the pass over every QP runs when nothing else asks for it (the state looks). */
    static final long STATE_LOOK_NS = 1_000_000;
    /** Awake QPs by table index (those the fast pass steps), and whether each is listed. */
    private final int[] awakeList = new int[MAX_QP];

    private int awakeCount;
    private final boolean[] listed = new boolean[MAX_QP];
    /** The earliest timer of an asleep QP (never later than it): the fast pass hands over then. */
    private long asleepDueNs = Long.MAX_VALUE;
    /** RC QPs without a doorbell page: while there are any, every cycle is a pass over all QPs. */
    private int plainQps;
    /** The earliest transport deadline the last {@link #pollQps} left ({@link #nextDeadlineNs}). */
    private long cycleDeadlineNs = Long.MAX_VALUE;
    /**
     * NEED_WAKEUP of each QP's SQ and RQ, by table index, as this engine last wrote it. The engine
     * sets it on every ring before it sleeps and clears it lazily, at a QP's next full step
     * ({@link #needWakeup}), so that neither costs a look at every QP: the QPs whose flags are off
     * are listed in {@link #flagsOff}.
     */
    private final boolean[] flagOn = new boolean[MAX_QP];

    private final boolean[] listedOff = new boolean[MAX_QP];
    private final int[] flagsOff = new int[MAX_QP];
    private int flagsOffCount;
    /** Between needWakeup(true) and needWakeup(false): the flags stay on. */
    private boolean flagsHeld;
    /**
     * RC QPs asleep, by table index: after a step, the responder idle ({@link
     * io.metaroce.nic.transport.RcResponder#idle}) and the requester with nothing to do before
     * {@link #wakeAtNs} ({@link io.metaroce.nic.transport.RcRequester#nextStepNs}: its earliest
     * timer, or never). A duty cycle gives an asleep QP only an O(1) look: is its time due, and,
     * for those in the cycle's slice ({@link #LOOK_SLICE}), has its state (or handshake flag)
     * changed since, a command's doing, or has the application posted to its SQ or RQ ({@link
     * #wakes})? A frame for it wakes it ({@link #onFrame}). Every other QP gets the full step.
     */
    private final boolean[] asleep = new boolean[MAX_QP];
    /** Whether each QP's application rings through a doorbell page ({@link Qp#doorbellBits}), by table index. */
    private final boolean[] viaPage = new boolean[MAX_QP];
    /** {@link #stateWord} of each asleep QP when it fell asleep. */
    private final int[] asleepState = new int[MAX_QP];
    /** When each asleep QP's next timer is due; Long.MAX_VALUE: none. */
    private final long[] wakeAtNs = new long[MAX_QP];
    /** Full duty-cycle steps of RC QPs (requester and responder), since the engine started. */
    private long qpSteps;
    /** Reads of asleep QPs' SQ and RQ producers in their looks ({@link #wakes}), since start. */
    private long ringLooks;
    /** The sessions' doorbell pages: which idle QPs their applications posted to. */
    private final DoorbellPages doorbells = new DoorbellPages();

    private final int wakeFd;
    private final int epollFd;
    /** The port's fds (one per receive queue): epoll reports them readable, nothing to reset. */
    private final int[] portFds;

    private long nowNs;
    /**
     * Read again before each receive batch: a packet is handled with a time taken after it was
     * read, never with the start of a cycle the thread may have been preempted in. (A preemption
     * between this read and the poll can still make it older than a packet; the RNR wait, which
     * must not end early, reads the clock again: {@link Datapath#clock}.)
     */
    private final LongSupplier clock;

    private Thread owner;

    /** An engine serving {@code port} with the MR table {@code mrs} and the transport {@code settings}. */
    public EngineAgent(Port port, MrTable mrs, TransportSettings settings) throws NativeException {
        this(port, mrs, settings, System::nanoTime);
    }

    /** As {@link #EngineAgent(Port, MrTable, TransportSettings)}, with the clock {@link #doWork} is given. */
    public EngineAgent(Port port, MrTable mrs, TransportSettings settings, LongSupplier clock) throws NativeException {
        this.clock = clock;
        if (port.maxFrame() < FRAME_BYTES) {
            // a full IBV_MTU_4096 packet, an RDMA WRITE with its RETH included, must fit one frame
            throw new IllegalArgumentException("port frames of " + port.maxFrame()
                    + " bytes cannot hold a 4096-byte payload with its header and RETH (" + FRAME_BYTES + ")");
        }
        this.port = port;
        this.loop = new LoopbackPort(port);
        this.dp = new Datapath(loop, mrs, settings, clock);
        this.ud = new UdTransport(dp);
        this.wakeFd = LibC.eventfd(0, LibC.EFD_NONBLOCK | LibC.EFD_CLOEXEC);
        this.epollFd = LibC.epollCreate1(LibC.EPOLL_CLOEXEC);
        watch(wakeFd);
        this.portFds = port.fds();
        for (int fd : portFds) {
            watch(fd);
        }
    }

    public Datapath datapath() {
        return dp;
    }

    /** The UD datapath (counters). */
    public UdTransport ud() {
        return ud;
    }

    /** The local queue of frames to this daemon's own address (its counters). */
    LoopbackPort loopback() {
        return loop;
    }

    /** Frames looped back to this daemon's own address; dropped when the local queue was full. */
    public long loopedFrames() {
        return loop.looped;
    }

    public long loopDrops() {
        return loop.drops;
    }

    public Port port() {
        return port;
    }

    public PortCounters portCounters() {
        return port.counters();
    }

    /** Adds an fd (eventfd or socket) to the set the idle engine sleeps on. Thread-safe. */
    public void watch(int fd) throws NativeException {
        LibC.epollCtl(epollFd, LibC.EPOLL_CTL_ADD, fd, LibC.EPOLLIN, fd);
    }

    public void unwatch(int fd) {
        try {
            LibC.epollCtl(epollFd, LibC.EPOLL_CTL_DEL, fd, 0, fd);
        } catch (NativeException ignored) {
            // already gone with its fd
        }
    }

    int epollFd() {
        return epollFd;
    }

    int wakeFd() {
        return wakeFd;
    }

    /** The queue whose port fd is {@code fd}, or -1 for another fd (an eventfd to reset). */
    int portQueueOf(int fd) {
        for (int q = 0; q < portFds.length; q++) {
            if (portFds[q] == fd) {
                return q;
            }
        }
        return -1;
    }

    /** Receive queues the idle engine sleeps on. */
    int portQueues() {
        return portFds.length;
    }

    /**
     * Queues a command for the engine thread and wakes it. Returns false when the queue is full
     * (the caller answers EAGAIN). Thread-safe.
     */
    public boolean submit(Runnable command) {
        if (!commands.offer(command)) {
            return false;
        }
        LibC.write(wakeFd, WAKE_ONE, 8);
        return true;
    }

    /** The clock of the current (or last) duty cycle. Engine thread. */
    public long nowNs() {
        return nowNs;
    }

    /** One duty cycle; returns the amount of work done (0: idle). */
    public int doWork(long nowNs) {
        this.nowNs = nowNs;
        int work = drainCommands();
        work += pollPort();
        work += pollLocal();
        work += pollQps(nowNs);
        work += port.flush();
        if (loop.pending()) {
            work++; // frames to ourselves wait for the next cycle: not idle
        }
        return work;
    }

    private int drainCommands() {
        int n = 0;
        Runnable c;
        while ((c = commands.poll()) != null) {
            c.run();
            n++;
        }
        return n;
    }

    private int pollPort() {
        int work = 0;
        for (int i = 0; i < RX_BATCHES_PER_CYCLE; i++) {
            nowNs = Math.max(nowNs, clock.getAsLong());
            int n = port.poll(this);
            dp.commitRx();
            ud.commitRx();
            dp.sendAcks();
            work += n;
            if (n == 0) {
                break;
            }
        }
        return work;
    }

    /** Feeds the frames this daemon sent to itself to the RX path, as a port batch. */
    private int pollLocal() {
        if (!loop.pending()) {
            return 0;
        }
        int n = loop.pollLocal(this);
        dp.commitRx();
        ud.commitRx();
        dp.sendAcks();
        loop.release();
        return n;
    }

    private int pollQps(long nowNs) {
        if (doorbells.count() > 0) {
            doorbells.take(this); // the QPs whose application rang: a full step below
        }
        boolean stateLook = nowNs - stateLookNs >= STATE_LOOK_NS;
        if (plainQps > 0 || stateLook || (asleepDueNs != Long.MAX_VALUE && nowNs - asleepDueNs >= 0)) {
            return pollAllQps(nowNs, stateLook);
        }
        // Every RC QP rings through a doorbell page and no asleep QP is due: only the awake ones
        // (a frame, a bit, a command or the last full pass woke them) get a step.
        int work = 0;
        long deadline = asleepDueNs;
        for (int k = 0; k < awakeCount; k++) {
            int x = awakeList[k];
            Qp qp = byIndex[x];
            work += step(qp, x, nowNs);
            if (asleep[x]) {
                listed[x] = false;
                awakeList[k--] = awakeList[--awakeCount];
                asleepDueNs = earlier(asleepDueNs, wakeAtNs[x]);
                deadline = earlier(deadline, wakeAtNs[x]);
            } else if (qp.ud == null && qp.requester.hasTimer()) {
                deadline = earlier(deadline, qp.requester.deadlineNs());
            }
        }
        cycleDeadlineNs = deadline;
        return work;
    }

    /**
     * The pass over every QP: each awake one steps, each asleep one gets an O(1) look (its timer
     * due; for those in this cycle's slice, its state, and the rings of a QP without a doorbell
     * page). Rebuilds the awake list and the earliest asleep timer as it goes.
     */
    private int pollAllQps(long nowNs, boolean stateLook) {
        int work = 0;
        long deadline = Long.MAX_VALUE;
        long asleepDue = Long.MAX_VALUE;
        int n = activeCount;
        // this cycle's slice of asleep QPs to look at: [lookFrom, lookEnd), wrapping
        int from = lookFrom < n ? lookFrom : 0;
        int lookEnd = from + LOOK_SLICE;
        lookFrom = lookEnd >= n ? 0 : lookEnd;
        int stateFrom = 0;
        int stateEnd = 0; // empty: no state look for doorbell-page QPs in this cycle
        if (stateLook) {
            stateLookNs = nowNs;
            stateFrom = stateLookFrom < n ? stateLookFrom : 0;
            stateEnd = stateFrom + LOOK_SLICE;
            stateLookFrom = stateEnd >= n ? 0 : stateEnd;
        }
        for (int k = 0; k < awakeCount; k++) {
            listed[awakeList[k]] = false;
        }
        awakeCount = 0;
        for (int i = 0; i < n; i++) {
            int x = activeIndex[i];
            if (asleep[x]) {
                long at = wakeAtNs[x];
                boolean due = at != Long.MAX_VALUE && nowNs - at >= 0;
                boolean inSlice = viaPage[x]
                        ? (i >= stateFrom ? i < stateEnd : i + n < stateEnd)
                        : (i >= from ? i < lookEnd : i + n < lookEnd);
                if (!due && (!inSlice || !wakes(active[i], x))) {
                    deadline = earlier(deadline, at);
                    asleepDue = earlier(asleepDue, at);
                    continue;
                }
                asleep[x] = false;
            }
            Qp qp = active[i];
            work += step(qp, x, nowNs);
            if (asleep[x]) {
                deadline = earlier(deadline, wakeAtNs[x]);
                asleepDue = earlier(asleepDue, wakeAtNs[x]);
            } else {
                if (!listed[x]) {
                    listed[x] = true;
                    awakeList[awakeCount++] = x;
                }
                if (qp.ud == null && qp.requester.hasTimer()) {
                    deadline = earlier(deadline, qp.requester.deadlineNs());
                }
            }
        }
        asleepDueNs = asleepDue;
        cycleDeadlineNs = deadline;
        return work;
    }

    /** One full step of awake QP {@code qp} (table index {@code x}); it may fall asleep. */
    private int step(Qp qp, int x, long nowNs) {
        if (flagOn[x] && !flagsHeld) {
            wakeupFlags(qp, x, false);
        }
        if (qp.ud != null) {
            return qp.ud.doWork(ud);
        }
        qpSteps++;
        int did = qp.responder.doWork(dp);
        did += qp.requester.doWork(dp, nowNs);
        did += qp.responder.retireHeld();
        if (did == 0 && qp.responder.idle()) {
            // asleep until a frame, a command, a post or its next timer (a step that did
            // something is followed by one more: what a burst limit left waits for none)
            long wake = qp.requester.nextStepNs(dp, nowNs);
            if (wake - nowNs > 0 && (!qp.doorbellBits || ringsAsk(qp, x))) {
                asleep[x] = true;
                asleepState[x] = stateWord(qp);
                wakeAtNs[x] = wake;
            }
        }
        return did;
    }

    /** QP of table index {@code x} gets a full step in the next cycle (it is in the awake list). */
    void awaken(int x) {
        asleep[x] = false;
        if (!listed[x] && byIndex[x] != null) {
            listed[x] = true;
            awakeList[awakeCount++] = x;
        }
    }

    private static long earlier(long a, long b) {
        return b != Long.MAX_VALUE && (a == Long.MAX_VALUE || b - a < 0) ? b : a;
    }

    /** Writes NEED_WAKEUP of QP {@code qp}'s SQ and RQ (table index {@code x}). */
    private void wakeupFlags(Qp qp, int x, boolean on) {
        qp.sq.setNeedWakeup(on);
        qp.rq.setNeedWakeup(on);
        flagOn[x] = on;
        if (!on && !listedOff[x]) {
            listedOff[x] = true;
            flagsOff[flagsOffCount++] = x;
        }
    }

    /** What an asleep QP may only leave through a command (modify_qp, the handshake's end). */
    private static int stateWord(Qp qp) {
        return qp.state << 1 | (qp.cmReady ? 1 : 0);
    }

    /** Whether asleep QP {@code qp} (table index {@code x}), its time not due, has something to do. */
    private boolean wakes(Qp qp, int x) {
        if (stateWord(qp) != asleepState[x]) {
            return true;
        }
        if (qp.doorbellBits) {
            return false; // its application sets its bit when it posts
        }
        ringLooks++;
        return qp.requester.sqPosted() || qp.responder.rqPosted();
    }

    /** Reads of asleep QPs' rings (their SQ and RQ producers) since start. Engine thread. */
    public long ringLooks() {
        return ringLooks;
    }

    /**
     * Before a QP whose application rings through a doorbell page falls asleep: NEED_WAKEUP on its
     * rings, a fence, and one more look at them. True when they are still empty, so that from now
     * on a post sets the QP's bit ({@link DoorbellPages#take}) and nothing has to read its rings;
     * false (it stays awake) when a post came first.
     */
    private boolean ringsAsk(Qp qp, int x) {
        if (!flagOn[x]) {
            wakeupFlags(qp, x, true);
            VarHandle.fullFence();
        }
        return !qp.requester.sqPosted() && !qp.responder.rqPosted();
    }

    /** A doorbell page of a session (HELLO with MRCE_HELLO_DOORBELL_PAGE). Engine thread. */
    public void addDoorbellPage(MemorySegment page) {
        doorbells.add(page);
    }

    /** Forgets a session's doorbell page; the caller unmaps it afterwards. Engine thread. */
    public void removeDoorbellPage(MemorySegment page) {
        doorbells.remove(page);
    }

    /** Bits taken from doorbell pages since start: QPs their applications rang. Engine thread. */
    public long doorbellBitsTaken() {
        return doorbells.rung;
    }

    /**
     * Gives {@code qp} a full step in the next duty cycle, whatever its look would say: for a
     * command that changes what the transport has to do without a state change (the connection
     * manager's final ACK). Engine thread.
     */
    public void wake(Qp qp) {
        int x = qp.qpn & (MAX_QP - 1);
        if (byIndex[x] == qp) {
            awaken(x);
        }
    }

    /** Full duty-cycle steps of RC QPs so far (an asleep QP's cheap look is not one). Engine thread. */
    public long qpSteps() {
        return qpSteps;
    }

    /** RC QPs asleep now. Engine thread. */
    public int asleepQps() {
        int n = 0;
        for (int i = 0; i < activeCount; i++) {
            n += asleep[active[i].qpn & (MAX_QP - 1)] ? 1 : 0;
        }
        return n;
    }

    /**
     * The latest frame dropped as {@code rxUnknownQp}, kept as numbers (a flood of them allocates
     * nothing): its opcode, destination and source QPNs, sender, and what the table slot held.
     */
    private int unknownOpcode;

    private int unknownDst;
    private int unknownSrc;
    private int unknownFromIp;
    private int unknownFromPort;
    /** The slot's QP: its QPN, state, destination QPN and whether it is UD; -1 QPN: an empty slot. */
    private int unknownSlotQpn = -1;

    private int unknownSlotState;
    private int unknownSlotDest;
    private boolean unknownSlotUd;
    private long unknownCount;
    private long unknownLoggedAtCount;
    private long unknownLoggedNs;

    /** At most one log line per this many ns about frames for no QP. */
    private static final long UNKNOWN_LOG_EVERY_NS = 10_000_000_000L;

    /** Records a frame for no QP of ours (see {@link #lastUnknownQp}); logs one line per 10 s at most. */
    private void unknownQp(Qp qp, int qpn, MemorySegment frame, int srcIp, int srcPort) {
        unknownOpcode = Wire.u8(frame, Wire.OFF_OPCODE);
        unknownDst = qpn;
        unknownSrc = Wire.u32(frame, Wire.OFF_SRC_QPN);
        unknownFromIp = srcIp;
        unknownFromPort = srcPort;
        unknownSlotQpn = qp == null ? -1 : qp.qpn;
        if (qp != null) {
            unknownSlotState = qp.state;
            unknownSlotDest = qp.destQpNum;
            unknownSlotUd = qp.ud != null;
        }
        unknownCount++;
        if (unknownLoggedAtCount == 0 || nowNs - unknownLoggedNs >= UNKNOWN_LOG_EVERY_NS) {
            LOG.info(
                    "dropped {} frame(s) for no QP of this daemon since the last such line; the latest: {}",
                    unknownCount - unknownLoggedAtCount,
                    lastUnknownQp());
            unknownLoggedAtCount = unknownCount;
            unknownLoggedNs = nowNs;
        }
    }

    /**
     * The latest frame counted as {@code rxUnknownQp} and why it matched no QP (the first of: an
     * empty table slot, a slot holding another QPN, a QP of the other type, a QP in RESET, a source
     * QPN that is not the QP's destination), or null if there was none.
     */
    public String lastUnknownQp() {
        if (unknownCount == 0) {
            return null;
        }
        String why;
        boolean ud = UdWire.isUd(unknownOpcode);
        if (unknownSlotQpn == -1) {
            why = "no QP in table slot " + (unknownDst & (MAX_QP - 1));
        } else if (unknownSlotQpn != unknownDst) {
            why = "the slot holds QPN 0x" + Integer.toHexString(unknownSlotQpn);
        } else if (unknownSlotUd != ud) {
            why = "the QP is " + (unknownSlotUd ? "UD" : "RC");
        } else if (unknownSlotState == Ibv.QPS_RESET) {
            why = "the QP is in RESET";
        } else {
            why = "the source QPN is not the QP's destination 0x" + Integer.toHexString(unknownSlotDest);
        }
        return String.format(
                "%s opcode %d to QPN 0x%x from QPN 0x%x (%s:%d): %s",
                ud ? "UD" : "RC",
                unknownOpcode,
                unknownDst,
                unknownSrc,
                io.metaroce.abi.IpAddr.toString(unknownFromIp),
                unknownFromPort,
                why);
    }

    @Override
    public void onFrame(MemorySegment frame, ByteBuffer view, int length, int srcIp, int srcPort, int ecn) {
        PortCounters c = port.counters();
        if (length < Wire.HEADER_SIZE) {
            c.rxShort++;
            return;
        }
        if (Wire.u8(frame, Wire.OFF_VERSION) != Wire.VERSION && !ConformanceBreak.IGNORE_VERSION) {
            c.rxBadVersion++;
            return;
        }
        if (Wire.crc(dp.crc, view, length) != Wire.u32(frame, Wire.OFF_CRC) && !ConformanceBreak.IGNORE_CRC) {
            c.rxBadCrc++;
            return;
        }
        int qpn = Wire.u32(frame, Wire.OFF_DST_QPN);
        Qp qp = byIndex[qpn & (MAX_QP - 1)];
        if (UdWire.isUd(Wire.u8(frame, Wire.OFF_OPCODE))) {
            if (qp == null || qp.qpn != qpn || qp.ud == null) {
                c.rxUnknownQp++;
                unknownQp(qp, qpn, frame, srcIp, srcPort);
                return;
            }
            ud.onFrame(qp, frame, length, srcIp, port.localIp());
            return;
        }
        if (qp == null
                || qp.qpn != qpn
                || qp.ud != null
                || qp.state == Ibv.QPS_RESET
                || (qp.destQpNum != Wire.u32(frame, Wire.OFF_SRC_QPN) && !ConformanceBreak.IGNORE_SRC_QPN)) {
            c.rxUnknownQp += ConformanceBreak.UNCOUNTED_UNKNOWN_QP ? 0 : 1;
            unknownQp(qp, qpn, frame, srcIp, srcPort);
            return;
        }
        if (srcIp != qp.peerIp) {
            c.rxBadSource++; // only the QP's peer speaks on its connection
            return;
        }
        if (qp.rxToken != 0 && Wire.u32(frame, Wire.OFF_TOKEN) != qp.rxToken && !ConformanceBreak.IGNORE_TOKEN) {
            c.rxBadToken++; // off-path or stale: never reaches the transport
            return;
        }
        qp.lastRxNs = nowNs;
        awaken(qpn & (MAX_QP - 1)); // what the frame leaves to do runs in this cycle's step
        switch (Wire.u8(frame, Wire.OFF_OPCODE)) {
            case Wire.OP_SEND,
                    Wire.OP_SEND_IMM,
                    Wire.OP_WRITE,
                    Wire.OP_WRITE_IMM,
                    Wire.OP_READ_REQ,
                    Wire.OP_ATOMIC_CS,
                    Wire.OP_ATOMIC_FA -> qp.responder.onData(dp, frame, length, ecn);
            case Wire.OP_READ_RESP, Wire.OP_ATOMIC_RESP -> qp.requester.onResponse(dp, frame, length, nowNs);
            case Wire.OP_ACK -> qp.requester.onAck(dp, frame, length, nowNs);
            case Wire.OP_NAK -> {
                dp.commitRx();
                qp.requester.onNak(dp, frame, nowNs);
            }
            case Wire.OP_PROBE -> qp.responder.onProbe(dp, frame, ecn);
            default -> c.rxBadOpcode++;
        }
    }

    // ---- QP table (engine thread: run these from commands) ----

    /** Starts serving a QP. Engine thread. */
    public void addQp(Qp qp) {
        int i = qp.qpn & (MAX_QP - 1);
        if (byIndex[i] != null) {
            throw new IllegalStateException("QP index in use: " + i);
        }
        byIndex[i] = qp;
        asleep[i] = false;
        viaPage[i] = qp.doorbellBits;
        if (qp.ud == null && !qp.doorbellBits) {
            plainQps++;
        }
        awaken(i);
        flagOn[i] = false; // its rings start without the flag: set with the others before a sleep
        if (!listedOff[i]) {
            listedOff[i] = true;
            flagsOff[flagsOffCount++] = i;
        }
        activeIndex[activeCount] = i;
        active[activeCount++] = qp;
        dp.lifecycle.onAdded(qp);
    }

    /** Stops serving a QP (no completions are generated). Engine thread. */
    public void removeQp(Qp qp) {
        dp.commitRx();
        dp.lifecycle.onRemoved(qp);
        ud.commitRx();
        int i = qp.qpn & (MAX_QP - 1);
        if (byIndex[i] == qp) {
            byIndex[i] = null;
            asleep[i] = false;
            if (qp.ud == null && !qp.doorbellBits) {
                plainQps--;
            }
            if (listed[i]) {
                listed[i] = false;
                for (int k = 0; k < awakeCount; k++) {
                    if (awakeList[k] == i) {
                        awakeList[k] = awakeList[--awakeCount];
                        break;
                    }
                }
            }
        }
        for (int k = 0; k < activeCount; k++) {
            if (active[k] == qp) {
                active[k] = active[--activeCount];
                activeIndex[k] = activeIndex[activeCount];
                active[activeCount] = null;
                break;
            }
        }
        if (closedQps.size() == CLOSED_QPS_KEPT) {
            closedQps.removeFirst();
        }
        closedQps.addLast(Telemetry.row(qp, true));
        qp.requester.close();
    }

    /** QPs removed lately, as numbers (kept so a snapshot after an application exits still shows them). */
    private final java.util.ArrayDeque<Telemetry.QpRow> closedQps = new java.util.ArrayDeque<>();

    private static final int CLOSED_QPS_KEPT = 16;

    /**
     * A copy of the numbers of every active QP and of those removed lately. Engine thread (a
     * command: {@link Telemetry#take}); the counters are read by the thread that asked.
     */
    Telemetry.QpRows qpTelemetry() {
        Telemetry.QpRow[] rows = new Telemetry.QpRow[activeCount];
        for (int i = 0; i < activeCount; i++) {
            rows[i] = Telemetry.row(active[i], false);
        }
        return new Telemetry.QpRows(java.util.List.of(rows), java.util.List.copyOf(closedQps));
    }

    /**
     * The telemetry snapshot, taken on the engine thread (a test driving the engine by hand, or a
     * stopped engine); other threads use {@link Telemetry#take}.
     */
    public Telemetry telemetry(long timeNs) {
        return Telemetry.of(this, timeNs, qpTelemetry());
    }

    /** Engine thread only: how many paths of the active QPs are dead (retired, being probed). */
    /** Paths of active QPs not ACTIVE (SUSPECT or DEAD): what the bench calls detected down. */
    public int pathsDown() {
        int n = 0;
        for (int i = 0; i < activeCount; i++) {
            io.metaroce.nic.transport.RcRequester r = active[i].requester;
            for (int p = 0; p < r.pathCount(); p++) {
                if (r.path(p).state != io.metaroce.nic.transport.Path.ACTIVE) {
                    n++;
                }
            }
        }
        return n;
    }

    public Qp qpByQpn(int qpn) {
        Qp qp = byIndex[qpn & (MAX_QP - 1)];
        return qp != null && qp.qpn == qpn ? qp : null;
    }

    // ---- idle support (engine thread) ----

    /**
     * Before a sleep ({@code true}): NEED_WAKEUP on every SQ and RQ, and kept on until {@code
     * false}; the provider then rings the doorbell. After it ({@code false}) the flags are cleared
     * lazily, each at its QP's next full step.
     */
    public void needWakeup(boolean on) {
        flagsHeld = on;
        doorbells.sleeping(on);
        if (!on) {
            return; // cleared lazily, at each QP's next full step (pollQps): no look at every QP
        }
        for (int k = 0; k < flagsOffCount; k++) {
            int x = flagsOff[k];
            listedOff[x] = false;
            Qp qp = byIndex[x];
            if (qp != null && !flagOn[x]) {
                qp.sq.setNeedWakeup(true);
                qp.rq.setNeedWakeup(true);
                flagOn[x] = true;
            }
        }
        flagsOffCount = 0;
        VarHandle.fullFence();
    }

    /**
     * The earliest transport deadline after the last duty cycle ({@link #doWork}), or
     * Long.MAX_VALUE when no timer runs; found by the cycle itself, not by a look at every QP.
     */
    public long nextDeadlineNs() {
        return cycleDeadlineNs;
    }

    public int activeQps() {
        return activeCount;
    }

    @Override
    public void close() {
        LibC.close(epollFd);
        LibC.close(wakeFd);
        ud.close();
        dp.close();
        loop.close();
    }
}
