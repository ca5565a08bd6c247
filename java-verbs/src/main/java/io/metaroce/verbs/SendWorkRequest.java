package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;

/**
 * A reusable send work request ({@code struct ibv_send_wr} with its scatter/gather list) in
 * native memory. Build it once, post it many times: every setter writes native memory and
 * returns {@code this}; nothing is allocated on the data path.
 *
 * <pre>{@code
 * SendWorkRequest wr = new SendWorkRequest(1)
 *         .wrId(1).send().sge(mr, 0, 4096).signaled(true);
 * qp.postSend(wr);
 * wr.rdmaWrite(peerAddr, peerRkey);                 // same SGE, now an RDMA WRITE
 * wr.compareAndSwap(peerAddr, peerRkey, 0, 1).sge(resultMr, 0, 8);
 * }</pre>
 *
 * Opcodes: {@link #send()}, {@link #sendWithImm}, {@link #rdmaWrite}, {@link #rdmaWriteWithImm},
 * {@link #rdmaRead}, {@link #compareAndSwap}, {@link #fetchAndAdd}; UD destinations with
 * {@link #ud}. Chains: {@link #next(SendWorkRequest)}. Flags as ints ({@code FLAG_*}) or sets of
 * {@link SendFlag}; opcodes as ints or {@link WrOpcode}.
 *
 * <p><b>Thread safety:</b> none: build and post it from one thread at a time. Close frees the
 * memory; a post of a closed request throws IllegalStateException.
 */
public final class SendWorkRequest implements AutoCloseable {

    /** {@code enum ibv_wr_opcode} values. */
    public static final int RDMA_WRITE = Abi.IBV_WR_RDMA_WRITE;

    public static final int RDMA_WRITE_WITH_IMM = Abi.IBV_WR_RDMA_WRITE_WITH_IMM;
    public static final int SEND = Abi.IBV_WR_SEND;
    public static final int SEND_WITH_IMM = Abi.IBV_WR_SEND_WITH_IMM;
    public static final int RDMA_READ = Abi.IBV_WR_RDMA_READ;
    public static final int ATOMIC_CMP_AND_SWP = Abi.IBV_WR_ATOMIC_CMP_AND_SWP;
    public static final int ATOMIC_FETCH_AND_ADD = Abi.IBV_WR_ATOMIC_FETCH_AND_ADD;

    /** {@code enum ibv_send_flags}. */
    public static final int FLAG_FENCE = Abi.IBV_SEND_FENCE;

    public static final int FLAG_SIGNALED = Abi.IBV_SEND_SIGNALED;
    public static final int FLAG_SOLICITED = Abi.IBV_SEND_SOLICITED;
    public static final int FLAG_INLINE = Abi.IBV_SEND_INLINE;

    /** {@code __be32 imm_data}: written in network order. */
    private static final java.lang.foreign.ValueLayout.OfInt IMM_BE = JAVA_INT.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private final NativeWorkRequest mem;
    final MemorySegment wr;
    final MemorySegment badWr;
    private SendWorkRequest next;
    private AddressHandle ah;

    /** A request with room for {@code maxSge} scatter/gather entries, opcode SEND, no flags. */
    public SendWorkRequest(int maxSge) {
        this.mem = new NativeWorkRequest(Abi.SEND_WR_SIZE, Abi.SEND_WR_SG_LIST, Abi.SEND_WR_NUM_SGE, maxSge);
        this.wr = mem.wr;
        this.badWr = mem.badWr;
        wr.set(JAVA_INT, Abi.SEND_WR_OPCODE, SEND);
    }

    /** Sets {@code wr_id}, returned in the work completion. */
    public SendWorkRequest wrId(long wrId) {
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_ID, wrId);
        return this;
    }

    public long wrId() {
        return wr.get(JAVA_LONG, Abi.SEND_WR_WR_ID);
    }

    public int opcode() {
        return wr.get(JAVA_INT, Abi.SEND_WR_OPCODE);
    }

    /** The immediate data last set, in host order. */
    public int immData() {
        return wr.get(IMM_BE, Abi.SEND_WR_IMM_DATA);
    }

    /** Sets all {@code send_flags} at once ({@code FLAG_*}). */
    public SendWorkRequest flags(int flags) {
        wr.set(JAVA_INT, Abi.SEND_WR_SEND_FLAGS, flags);
        return this;
    }

    public int flags() {
        return wr.get(JAVA_INT, Abi.SEND_WR_SEND_FLAGS);
    }

    /** Sets all {@code send_flags} at once from a set (allocates nothing). */
    public SendWorkRequest flags(java.util.Set<SendFlag> flags) {
        return flags(SendFlag.toBits(flags));
    }

    /** The {@code send_flags} as a set (allocates one). */
    public java.util.EnumSet<SendFlag> flagSet() {
        return SendFlag.fromBits(flags());
    }

    /** The opcode as an enum (null for a value this binding does not name). */
    public WrOpcode wrOpcode() {
        return WrOpcode.of(opcode());
    }

    private SendWorkRequest flag(int flag, boolean on) {
        int f = flags();
        return flags(on ? f | flag : f & ~flag);
    }

    /** {@code IBV_SEND_SIGNALED}: this request produces a completion (else only on error, unless sq_sig_all). */
    public SendWorkRequest signaled(boolean on) {
        return flag(FLAG_SIGNALED, on);
    }

    /** {@code IBV_SEND_INLINE}: the provider copies the data at post time; the lkeys are ignored. */
    public SendWorkRequest inline(boolean on) {
        return flag(FLAG_INLINE, on);
    }

    /** {@code IBV_SEND_FENCE}: wait for earlier RDMA READs and atomics first. */
    public SendWorkRequest fence(boolean on) {
        return flag(FLAG_FENCE, on);
    }

    /** {@code IBV_SEND_SOLICITED}: raise a solicited event at the receiver. */
    public SendWorkRequest solicited(boolean on) {
        return flag(FLAG_SOLICITED, on);
    }

    private SendWorkRequest opcode(int opcode) {
        wr.set(JAVA_INT, Abi.SEND_WR_OPCODE, opcode);
        return this;
    }

    private SendWorkRequest remote(long remoteAddr, int rkey) {
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_RDMA_REMOTE_ADDR, remoteAddr);
        wr.set(JAVA_INT, Abi.SEND_WR_WR_RDMA_RKEY, rkey);
        return this;
    }

    /** SEND: the data goes to the peer's next receive. */
    public SendWorkRequest send() {
        return opcode(SEND);
    }

    /**
     * SEND_WITH_IMM: a SEND that also carries 32 bits of immediate data to the receive
     * completion. {@code immData} is in host order; it is stored in network order
     * ({@code imm_data} is {@code __be32}, what C senders write with {@code htonl}), and the
     * receiver's {@link WorkCompletion#immData()} gives it back in host order.
     */
    public SendWorkRequest sendWithImm(int immData) {
        wr.set(IMM_BE, Abi.SEND_WR_IMM_DATA, immData);
        return opcode(SEND_WITH_IMM);
    }

    /** RDMA_WRITE of the SGE list to {@code remoteAddr} in the peer's region {@code rkey}. */
    public SendWorkRequest rdmaWrite(long remoteAddr, int rkey) {
        return remote(remoteAddr, rkey).opcode(RDMA_WRITE);
    }

    /**
     * RDMA_WRITE_WITH_IMM: an RDMA WRITE that also consumes a receive and completes it with the
     * immediate ({@code immData} in host order, sent in network order as with {@link #sendWithImm}).
     */
    public SendWorkRequest rdmaWriteWithImm(long remoteAddr, int rkey, int immData) {
        wr.set(IMM_BE, Abi.SEND_WR_IMM_DATA, immData);
        return remote(remoteAddr, rkey).opcode(RDMA_WRITE_WITH_IMM);
    }

    /** RDMA_READ from {@code remoteAddr} in the peer's region {@code rkey} into the SGE list. */
    public SendWorkRequest rdmaRead(long remoteAddr, int rkey) {
        return remote(remoteAddr, rkey).opcode(RDMA_READ);
    }

    /**
     * ATOMIC_CMP_AND_SWP on the 8 bytes at {@code remoteAddr} (8-byte aligned): if they equal
     * {@code compare} they become {@code swap}; the original value lands in the (8-byte) SGE.
     */
    public SendWorkRequest compareAndSwap(long remoteAddr, int rkey, long compare, long swap) {
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_REMOTE_ADDR, remoteAddr);
        wr.set(JAVA_INT, Abi.SEND_WR_WR_ATOMIC_RKEY, rkey);
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_COMPARE_ADD, compare);
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_SWAP, swap);
        return opcode(ATOMIC_CMP_AND_SWP);
    }

    /** ATOMIC_FETCH_AND_ADD: adds {@code add} to the 8 bytes at {@code remoteAddr}; the original lands in the SGE. */
    public SendWorkRequest fetchAndAdd(long remoteAddr, int rkey, long add) {
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_REMOTE_ADDR, remoteAddr);
        wr.set(JAVA_INT, Abi.SEND_WR_WR_ATOMIC_RKEY, rkey);
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_COMPARE_ADD, add);
        wr.set(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_SWAP, 0L);
        return opcode(ATOMIC_FETCH_AND_ADD);
    }

    /** The UD destination of a SEND on a UD queue pair: address handle, remote QPN and Q_Key. */
    public SendWorkRequest ud(AddressHandle ah, int remoteQpn, int remoteQkey) {
        ah.ensureOpen();
        this.ah = ah;
        wr.set(ADDRESS, Abi.SEND_WR_WR_UD_AH, ah.ptr);
        wr.set(JAVA_INT, Abi.SEND_WR_WR_UD_REMOTE_QPN, remoteQpn);
        wr.set(JAVA_INT, Abi.SEND_WR_WR_UD_REMOTE_QKEY, remoteQkey);
        return this;
    }

    /** Empties the scatter/gather list. */
    public SendWorkRequest clearSge() {
        mem.clearSge();
        return this;
    }

    /** Sets the list to one entry: {@code length} bytes at {@code offset} in {@code mr}. */
    public SendWorkRequest sge(MemoryRegion mr, long offset, int length) {
        return clearSge().addSge(mr, offset, length);
    }

    /** Appends {@code length} bytes at {@code offset} of {@code mr} (bounds-checked). */
    public SendWorkRequest addSge(MemoryRegion mr, long offset, int length) {
        mem.addSge(mr, offset, length);
        return this;
    }

    /** Appends a raw entry (address, length, lkey): not checked against any region. */
    public SendWorkRequest addSge(long address, int length, int lkey) {
        mem.addSge(address, length, lkey);
        return this;
    }

    /** Changes the length of entry {@code index} (e.g. per message size), nothing else. */
    public SendWorkRequest sgeLength(int index, int length) {
        mem.sgeLength(index, length);
        return this;
    }

    public int numSge() {
        return mem.numSge();
    }

    /** Chains {@code next} after this request (null ends the chain); one post then posts the chain. */
    public SendWorkRequest next(SendWorkRequest next) {
        this.next = next;
        wr.set(ADDRESS, Abi.SEND_WR_NEXT, next == null ? MemorySegment.NULL : next.wr);
        return this;
    }

    public SendWorkRequest next() {
        return next;
    }

    /** The native {@code struct ibv_send_wr}. */
    public MemorySegment segment() {
        return wr;
    }

    /**
     * Holds open what the chain refers to for one post: every SGE's memory region and, on a UD
     * queue pair, each request's address handle. All or none; throws IllegalStateException
     * naming the first closed one. Allocation-free.
     */
    void acquireChain(boolean ud) {
        SendWorkRequest r = this;
        try {
            for (; r != null; r = r.next) {
                r.mem.acquireRegions();
                if (ud && r.ah != null) {
                    try {
                        r.ah.acquire();
                    } catch (RuntimeException e) {
                        r.mem.releaseRegions(r.mem.numSge());
                        throw e;
                    }
                }
            }
        } catch (RuntimeException e) {
            for (SendWorkRequest q = this; q != r; q = q.next) {
                q.releaseOwn(ud);
            }
            throw e;
        }
    }

    /** Undoes {@link #acquireChain}. */
    void releaseChain(boolean ud) {
        for (SendWorkRequest r = this; r != null; r = r.next) {
            r.releaseOwn(ud);
        }
    }

    private void releaseOwn(boolean ud) {
        mem.releaseRegions(mem.numSge());
        if (ud && ah != null) {
            ah.release();
        }
    }

    /** Which request of the chain {@code bad_wr} points at (for error messages). */
    String describeBad() {
        long bad = mem.badAddress();
        int i = 0;
        for (SendWorkRequest r = this; r != null; r = r.next, i++) {
            if (r.wr.address() == bad) {
                return "bad_wr is request " + i + " of the chain (wr_id " + r.wrId() + ", opcode "
                        + opcodeName(r.opcode()) + ")";
            }
        }
        return null;
    }

    /** The C name without {@code IBV_WR_}. */
    public static String opcodeName(int opcode) {
        return switch (opcode) {
            case Abi.IBV_WR_RDMA_WRITE -> "RDMA_WRITE";
            case Abi.IBV_WR_RDMA_WRITE_WITH_IMM -> "RDMA_WRITE_WITH_IMM";
            case Abi.IBV_WR_SEND -> "SEND";
            case Abi.IBV_WR_SEND_WITH_IMM -> "SEND_WITH_IMM";
            case Abi.IBV_WR_RDMA_READ -> "RDMA_READ";
            case Abi.IBV_WR_ATOMIC_CMP_AND_SWP -> "ATOMIC_CMP_AND_SWP";
            case Abi.IBV_WR_ATOMIC_FETCH_AND_ADD -> "ATOMIC_FETCH_AND_ADD";
            default -> "OPCODE_" + opcode;
        };
    }

    /** Frees the native memory; double close is a no-op. */
    @Override
    public void close() {
        mem.close();
    }
}
