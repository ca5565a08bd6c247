package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A queue pair ({@code struct ibv_qp}), reliable connected ({@link Type#RC}) or unreliable
 * datagram ({@link Type#UD}), from {@link ProtectionDomain#createQueuePair}.
 *
 * <p>State changes go through {@link #modify(Attributes)} ({@code ibv_modify_qp}); the usual
 * RESET → INIT → RTR → RTS sequences are {@link #toInit}, {@link #toRtr}, {@link #toRts} (RC)
 * and {@link #toInitUd}, {@link #toRtrUd}, {@link #toRtsUd} (UD). {@link #postSend} and
 * {@link #postRecv} are the data path: the provider's {@code post_send}/{@code post_recv} through
 * {@code context->ops}, allocation-free; a refused post throws a {@link VerbsException} naming
 * {@code ibv_post_send}/{@code ibv_post_recv}, the error number and the refused request.
 *
 * <p><b>Thread safety:</b> posting from several threads is safe as far as the provider allows
 * (libibverbs providers lock their queues); each thread needs its own work request objects. A
 * post holds the QP and the memory regions of its scatter/gather entries open for the call: a
 * concurrent {@link #close()} (of the QP, or of a region or its arena) waits for it or makes it
 * throw {@link IllegalStateException}, never a crash.
 */
public final class QueuePair extends VerbsObject {

    static final Native.Verb MODIFY_QP =
            Native.verb("ibv_modify_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final Native.Verb QUERY_QP =
            Native.verb("ibv_query_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    static final Native.Verb DESTROY_QP = Native.verb("ibv_destroy_qp", FunctionDescriptor.of(JAVA_INT, ADDRESS));

    /** {@code enum ibv_qp_type}. */
    public enum Type {
        RC(Abi.IBV_QPT_RC),
        UC(Abi.IBV_QPT_UC),
        UD(Abi.IBV_QPT_UD);

        private final int value;

        Type(int value) {
            this.value = value;
        }

        public int value() {
            return value;
        }
    }

    /** {@code enum ibv_qp_state}. */
    public enum State {
        RESET,
        INIT,
        RTR,
        RTS,
        SQD,
        SQE,
        ERR;

        public int value() {
            return ordinal(); // IBV_QPS_RESET = 0 ... IBV_QPS_ERR = 6
        }

        static State of(int v) {
            return v >= 0 && v < values().length ? values()[v] : null;
        }
    }

    /** What the provider granted ({@code struct ibv_qp_cap}). */
    public record Capabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {}

    /** A builder of {@code struct ibv_qp_init_attr}: {@link QueuePair#rc} or {@link QueuePair#ud}. */
    public static final class InitAttributes {
        final Type type;
        final CompletionQueue sendCq;
        final CompletionQueue recvCq;
        SharedReceiveQueue srq;
        int maxSendWr = 16;
        int maxRecvWr = 16;
        int maxSendSge = 1;
        int maxRecvSge = 1;
        int maxInlineData;
        boolean signalAll;

        InitAttributes(Type type, CompletionQueue sendCq, CompletionQueue recvCq) {
            this.type = type;
            this.sendCq = Objects.requireNonNull(sendCq, "sendCq");
            this.recvCq = Objects.requireNonNull(recvCq, "recvCq");
        }

        public InitAttributes maxSendWr(int n) {
            maxSendWr = n;
            return this;
        }

        public InitAttributes maxRecvWr(int n) {
            maxRecvWr = n;
            return this;
        }

        public InitAttributes maxSendSge(int n) {
            maxSendSge = n;
            return this;
        }

        public InitAttributes maxRecvSge(int n) {
            maxRecvSge = n;
            return this;
        }

        public InitAttributes maxInlineData(int n) {
            maxInlineData = n;
            return this;
        }

        /** Receives come from this shared receive queue (the QP's own receive queue is not used). */
        public InitAttributes srq(SharedReceiveQueue srq) {
            this.srq = srq;
            return this;
        }

        /** {@code sq_sig_all}: every send request completes, whatever its SIGNALED flag. */
        public InitAttributes signalAll(boolean on) {
            signalAll = on;
            return this;
        }
    }

    /** Attributes of an RC queue pair on these CQs (defaults: 16 WRs and 1 SGE each way, no inline). */
    public static InitAttributes rc(CompletionQueue sendCq, CompletionQueue recvCq) {
        return new InitAttributes(Type.RC, sendCq, recvCq);
    }

    /** Attributes of a UD queue pair on these CQs. */
    public static InitAttributes ud(CompletionQueue sendCq, CompletionQueue recvCq) {
        return new InitAttributes(Type.UD, sendCq, recvCq);
    }

    /**
     * {@code struct ibv_qp_attr} plus its attribute mask: each setter sets the field and its
     * {@code IBV_QP_*} bit, {@link QueuePair#modify} passes exactly those.
     */
    public static final class Attributes {
        int mask;
        State state;
        Mtu pathMtu;
        int qkey;
        int rqPsn;
        int sqPsn;
        int destQpNum;
        int accessFlags;
        AddressHandle.Attributes av;
        int pkeyIndex;
        int maxRdAtomic;
        int maxDestRdAtomic;
        int minRnrTimer;
        int port;
        int timeout;
        int retryCnt;
        int rnrRetry;

        public Attributes state(State s) {
            state = s;
            mask |= Abi.IBV_QP_STATE;
            return this;
        }

        public Attributes pathMtu(Mtu m) {
            pathMtu = m;
            mask |= Abi.IBV_QP_PATH_MTU;
            return this;
        }

        public Attributes qkey(int q) {
            qkey = q;
            mask |= Abi.IBV_QP_QKEY;
            return this;
        }

        public Attributes rqPsn(int psn) {
            rqPsn = psn;
            mask |= Abi.IBV_QP_RQ_PSN;
            return this;
        }

        public Attributes sqPsn(int psn) {
            sqPsn = psn;
            mask |= Abi.IBV_QP_SQ_PSN;
            return this;
        }

        public Attributes destQpNum(int qpn) {
            destQpNum = qpn;
            mask |= Abi.IBV_QP_DEST_QPN;
            return this;
        }

        /** {@link Access} flags peers get on this QP (REMOTE_WRITE / READ / ATOMIC). */
        public Attributes accessFlags(int flags) {
            accessFlags = flags;
            mask |= Abi.IBV_QP_ACCESS_FLAGS;
            return this;
        }

        /** {@link #accessFlags(int)} as a set. */
        public Attributes accessFlags(java.util.Set<AccessFlag> flags) {
            return accessFlags(AccessFlag.toBits(flags));
        }

        /** The primary path (address vector) to the peer. */
        public Attributes addressVector(AddressHandle.Attributes a) {
            av = a;
            mask |= Abi.IBV_QP_AV;
            return this;
        }

        public Attributes pkeyIndex(int i) {
            pkeyIndex = i;
            mask |= Abi.IBV_QP_PKEY_INDEX;
            return this;
        }

        public Attributes maxRdAtomic(int n) {
            maxRdAtomic = n;
            mask |= Abi.IBV_QP_MAX_QP_RD_ATOMIC;
            return this;
        }

        public Attributes maxDestRdAtomic(int n) {
            maxDestRdAtomic = n;
            mask |= Abi.IBV_QP_MAX_DEST_RD_ATOMIC;
            return this;
        }

        public Attributes minRnrTimer(int t) {
            minRnrTimer = t;
            mask |= Abi.IBV_QP_MIN_RNR_TIMER;
            return this;
        }

        public Attributes port(int p) {
            port = p;
            mask |= Abi.IBV_QP_PORT;
            return this;
        }

        public Attributes timeout(int t) {
            timeout = t;
            mask |= Abi.IBV_QP_TIMEOUT;
            return this;
        }

        public Attributes retryCount(int n) {
            retryCnt = n;
            mask |= Abi.IBV_QP_RETRY_CNT;
            return this;
        }

        public Attributes rnrRetry(int n) {
            rnrRetry = n;
            mask |= Abi.IBV_QP_RNR_RETRY;
            return this;
        }

        public int mask() {
            return mask;
        }

        void write(MemorySegment s) {
            if (state != null) {
                s.set(JAVA_INT, Abi.QP_ATTR_QP_STATE, state.value());
            }
            if (pathMtu != null) {
                s.set(JAVA_INT, Abi.QP_ATTR_PATH_MTU, pathMtu.value());
            }
            s.set(JAVA_INT, Abi.QP_ATTR_QKEY, qkey);
            s.set(JAVA_INT, Abi.QP_ATTR_RQ_PSN, rqPsn);
            s.set(JAVA_INT, Abi.QP_ATTR_SQ_PSN, sqPsn);
            s.set(JAVA_INT, Abi.QP_ATTR_DEST_QP_NUM, destQpNum);
            s.set(JAVA_INT, Abi.QP_ATTR_QP_ACCESS_FLAGS, accessFlags);
            if (av != null) {
                av.write(s, Abi.QP_ATTR_AH_ATTR);
            }
            s.set(JAVA_SHORT, Abi.QP_ATTR_PKEY_INDEX, (short) pkeyIndex);
            s.set(JAVA_BYTE, Abi.QP_ATTR_MAX_RD_ATOMIC, (byte) maxRdAtomic);
            s.set(JAVA_BYTE, Abi.QP_ATTR_MAX_DEST_RD_ATOMIC, (byte) maxDestRdAtomic);
            s.set(JAVA_BYTE, Abi.QP_ATTR_MIN_RNR_TIMER, (byte) minRnrTimer);
            s.set(JAVA_BYTE, Abi.QP_ATTR_PORT_NUM, (byte) port);
            s.set(JAVA_BYTE, Abi.QP_ATTR_TIMEOUT, (byte) timeout);
            s.set(JAVA_BYTE, Abi.QP_ATTR_RETRY_CNT, (byte) retryCnt);
            s.set(JAVA_BYTE, Abi.QP_ATTR_RNR_RETRY, (byte) rnrRetry);
        }
    }

    private final ProtectionDomain pd;
    private final Type type;
    private final SharedReceiveQueue srq;
    final MemorySegment ptr;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final int qpNum;
    private final Capabilities caps;

    QueuePair(ProtectionDomain pd, InitAttributes init, MemorySegment ptr, Capabilities caps) {
        super(pd, init.sendCq, init.recvCq == init.sendCq ? null : init.recvCq, init.srq);
        this.pd = pd;
        this.type = init.type;
        this.srq = init.srq;
        this.ptr = ptr.reinterpret(Abi.QP_QP_TYPE + 4);
        this.postSendFn = pd.context.opPostSend;
        this.postRecvFn = pd.context.opPostRecv;
        this.qpNum = this.ptr.get(JAVA_INT, Abi.QP_QP_NUM);
        this.caps = caps;
        attach();
        pd.context.qps.put(this.ptr.address(), this);
    }

    /** The QP number peers address ({@code qp->qp_num}). */
    public int qpNum() {
        return qpNum;
    }

    public Type type() {
        return type;
    }

    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The capabilities the provider granted at creation (at least what was asked). */
    public Capabilities capabilities() {
        return caps;
    }

    /** The state libibverbs/the provider last recorded in {@code qp->state}. */
    public State state() {
        acquire();
        try {
            return State.of(ptr.get(JAVA_INT, Abi.QP_STATE));
        } finally {
            release();
        }
    }

    /** The state for an error message, without throwing when the QP was closed meanwhile. */
    private String stateForMessage() {
        try {
            return String.valueOf(state());
        } catch (IllegalStateException closed) {
            return "(closed)";
        }
    }

    /** The native {@code struct ibv_qp *}. */
    public MemorySegment address() {
        return ptr;
    }

    @Override
    public String describe() {
        return String.format("QueuePair 0x%06x (%s)", qpNum, type);
    }

    @Override
    void destroy() {
        DESTROY_QP.check(ptr);
        pd.context.qps.remove(ptr.address());
    }

    /** {@code ibv_modify_qp} with the fields (and mask) set in {@code attrs}. */
    public void modify(Attributes attrs) {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.QP_ATTR_SIZE, 8);
            attrs.write(s);
            MODIFY_QP.check(ptr, s, attrs.mask);
        } catch (VerbsException e) {
            throw new VerbsException(
                    e.verb(),
                    e.errno(),
                    describe() + " to "
                            + (attrs.state == null ? "(same state)" : attrs.state) + ", attr_mask 0x"
                            + Integer.toHexString(attrs.mask));
        } finally {
            release();
        }
    }

    /** {@code ibv_query_qp} of the QP's capabilities ({@code IBV_QP_CAP}), e.g. the real max inline size. */
    public Capabilities queryCapabilities() {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(Abi.QP_ATTR_SIZE, 8);
            MemorySegment init = a.allocate(Abi.QP_INIT_ATTR_SIZE, 8);
            QUERY_QP.check(ptr, attr, Abi.IBV_QP_CAP, init);
            long c = Abi.QP_INIT_ATTR_CAP;
            return new Capabilities(
                    init.get(JAVA_INT, c + Abi.QP_CAP_MAX_SEND_WR),
                    init.get(JAVA_INT, c + Abi.QP_CAP_MAX_RECV_WR),
                    init.get(JAVA_INT, c + Abi.QP_CAP_MAX_SEND_SGE),
                    init.get(JAVA_INT, c + Abi.QP_CAP_MAX_RECV_SGE),
                    init.get(JAVA_INT, c + Abi.QP_CAP_MAX_INLINE_DATA));
        } finally {
            release();
        }
    }

    /** RC/UC: RESET → INIT on {@code port} with {@code accessFlags} for peers ({@link Access}). */
    public void toInit(int port, int accessFlags) {
        modify(new Attributes().state(State.INIT).pkeyIndex(0).port(port).accessFlags(accessFlags));
    }

    /**
     * RC: INIT → RTR toward the peer's QP: path MTU, its QP number and first PSN, the path to it
     * (a global route for RoCE), one incoming RDMA READ/atomic, RNR timer 12 (as ibv_rc_pingpong).
     */
    public void toRtr(Mtu mtu, int destQpNum, int destPsn, AddressHandle.Attributes path) {
        toRtr(mtu, destQpNum, destPsn, path, 1, 12);
    }

    /**
     * RC: INIT → RTR as {@link #toRtr(Mtu, int, int, AddressHandle.Attributes)}, with
     * {@code maxDestRdAtomic} incoming RDMA READs/atomics in flight and RNR timer {@code minRnrTimer}.
     */
    public void toRtr(
            Mtu mtu, int destQpNum, int destPsn, AddressHandle.Attributes path, int maxDestRdAtomic, int minRnrTimer) {
        modify(new Attributes()
                .state(State.RTR)
                .pathMtu(mtu)
                .destQpNum(destQpNum)
                .rqPsn(destPsn)
                .maxDestRdAtomic(maxDestRdAtomic)
                .minRnrTimer(minRnrTimer)
                .addressVector(path));
    }

    /** RC: RTR → RTS with send PSN {@code psn}, timeout 14, 7 retries, 7 RNR retries, one outgoing READ/atomic. */
    public void toRts(int psn) {
        toRts(psn, 14, 7, 7, 1);
    }

    /**
     * RC: RTR → RTS with send PSN {@code psn}, ack timeout {@code timeout} (4.096 us * 2^timeout),
     * {@code retryCount} retries, {@code rnrRetry} RNR retries (7: infinite) and
     * {@code maxRdAtomic} outgoing RDMA READs/atomics in flight.
     */
    public void toRts(int psn, int timeout, int retryCount, int rnrRetry, int maxRdAtomic) {
        modify(new Attributes()
                .state(State.RTS)
                .timeout(timeout)
                .retryCount(retryCount)
                .rnrRetry(rnrRetry)
                .sqPsn(psn)
                .maxRdAtomic(maxRdAtomic));
    }

    /** {@link #toInit(int, int)} with the access flags as a set. */
    public void toInit(int port, java.util.Set<AccessFlag> accessFlags) {
        toInit(port, AccessFlag.toBits(accessFlags));
    }

    /** UD: RESET → INIT on {@code port} with Q_Key {@code qkey}. */
    public void toInitUd(int port, int qkey) {
        modify(new Attributes().state(State.INIT).pkeyIndex(0).port(port).qkey(qkey));
    }

    /** UD: INIT → RTR. */
    public void toRtrUd() {
        modify(new Attributes().state(State.RTR));
    }

    /** UD: RTR → RTS with send PSN {@code psn}. */
    public void toRtsUd(int psn) {
        modify(new Attributes().state(State.RTS).sqPsn(psn));
    }

    /**
     * Posts a send request (or chain) through the provider's {@code post_send}. Allocation-free.
     *
     * @throws VerbsException naming ibv_post_send when the provider refuses it (e.g. EINVAL for a
     *     QP not in RTS or an opcode it does not support, ENOMEM for a full send queue)
     */
    public void postSend(SendWorkRequest wr) {
        boolean ud = type == Type.UD;
        int rc;
        acquire();
        try {
            wr.acquireChain(ud);
            try {
                rc = (int) Native.OP_POST.invokeExact(postSendFn, ptr, wr.wr, wr.badWr);
            } catch (Throwable t) {
                throw CompletionQueue.rethrow(t);
            } finally {
                wr.releaseChain(ud);
            }
        } finally {
            release();
        }
        if (rc != 0) {
            throw new VerbsException(
                    "ibv_post_send",
                    rc,
                    describe() + " in state " + stateForMessage() + ": "
                            + Objects.requireNonNullElse(
                                    wr.describeBad(), "request " + SendWorkRequest.opcodeName(wr.opcode())));
        }
    }

    /**
     * Posts a receive request (or chain) through the provider's {@code post_recv}. Allocation-free.
     *
     * @throws VerbsException naming ibv_post_recv when the provider refuses it
     */
    public void postRecv(RecvWorkRequest wr) {
        int rc;
        acquire();
        try {
            wr.acquireChain();
            try {
                rc = (int) Native.OP_POST.invokeExact(postRecvFn, ptr, wr.wr, wr.badWr);
            } catch (Throwable t) {
                throw CompletionQueue.rethrow(t);
            } finally {
                wr.releaseChain();
            }
        } finally {
            release();
        }
        if (rc != 0) {
            throw new VerbsException(
                    "ibv_post_recv",
                    rc,
                    describe() + " in state " + stateForMessage()
                            + (srq != null ? " (its receives come from an SRQ: post there)" : "") + ": "
                            + Objects.requireNonNullElse(wr.describeBad(), "wr_id " + wr.wrId()));
        }
    }
}
