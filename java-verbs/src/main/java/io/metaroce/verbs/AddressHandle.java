package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * An address handle ({@code struct ibv_ah}): the path to a UD peer, named in each UD send
 * ({@link SendWorkRequest#ud}). Created by {@link ProtectionDomain#createAddressHandle}.
 *
 * <p><b>Thread safety:</b> safe to share; posts that use it hold it for the call, and a concurrent close waits for them or makes them throw IllegalStateException.
 */
public final class AddressHandle extends VerbsObject {

    static final Native.Verb DESTROY_AH = Native.verb("ibv_destroy_ah", FunctionDescriptor.of(JAVA_INT, ADDRESS));

    /**
     * {@code struct ibv_ah_attr}: the path to a peer, also the address vector of an RC QP
     * ({@link QueuePair.Attributes#addressVector}).
     *
     * @param global whether a GRH is used (always on RoCE: the GID is the peer's address)
     * @param dgid the peer's GID (global routes)
     * @param sgidIndex the local GID table entry to send from
     * @param hopLimit the GRH hop limit
     * @param trafficClass the GRH traffic class
     * @param flowLabel the GRH flow label
     * @param dlid the peer's LID (InfiniBand; 0 on Ethernet)
     * @param sl service level
     * @param port the local port (1-based)
     */
    public record Attributes(
            boolean global,
            Gid dgid,
            int sgidIndex,
            int hopLimit,
            int trafficClass,
            int flowLabel,
            int dlid,
            int sl,
            int port) {

        /** A global route to {@code dgid} from local GID entry {@code sgidIndex}, hop limit 1 (as ibv_rc_pingpong). */
        public static Attributes global(Gid dgid, int sgidIndex, int port) {
            return new Attributes(true, Objects.requireNonNull(dgid), sgidIndex, 1, 0, 0, 0, 0, port);
        }

        /** An InfiniBand local route to {@code dlid}. */
        public static Attributes local(int dlid, int sl, int port) {
            return new Attributes(false, Gid.ZERO, 0, 0, 0, 0, dlid, sl, port);
        }

        /**
         * What ibv_rc_pingpong does: a global route when the peer's GID has a non-zero interface
         * id, else the LID route.
         */
        public static Attributes forPeer(Gid dgid, int dlid, int sl, int sgidIndex, int port) {
            if (dgid != null && dgid.interfaceId() != 0) {
                return new Attributes(true, dgid, sgidIndex, 1, 0, 0, dlid, sl, port);
            }
            return new Attributes(false, Gid.ZERO, 0, 0, 0, 0, dlid, sl, port);
        }

        void write(MemorySegment s, long at) {
            long grh = at + Abi.AH_ATTR_GRH;
            (dgid == null ? Gid.ZERO : dgid).write(s, grh + Abi.GLOBAL_ROUTE_DGID);
            s.set(JAVA_INT, grh + Abi.GLOBAL_ROUTE_FLOW_LABEL, flowLabel);
            s.set(JAVA_BYTE, grh + Abi.GLOBAL_ROUTE_SGID_INDEX, (byte) sgidIndex);
            s.set(JAVA_BYTE, grh + Abi.GLOBAL_ROUTE_HOP_LIMIT, (byte) hopLimit);
            s.set(JAVA_BYTE, grh + Abi.GLOBAL_ROUTE_TRAFFIC_CLASS, (byte) trafficClass);
            s.set(JAVA_SHORT, at + Abi.AH_ATTR_DLID, (short) dlid);
            s.set(JAVA_BYTE, at + Abi.AH_ATTR_SL, (byte) sl);
            s.set(JAVA_BYTE, at + Abi.AH_ATTR_SRC_PATH_BITS, (byte) 0);
            s.set(JAVA_BYTE, at + Abi.AH_ATTR_STATIC_RATE, (byte) 0);
            s.set(JAVA_BYTE, at + Abi.AH_ATTR_IS_GLOBAL, (byte) (global ? 1 : 0));
            s.set(JAVA_BYTE, at + Abi.AH_ATTR_PORT_NUM, (byte) port);
        }
    }

    private final ProtectionDomain pd;
    final MemorySegment ptr;
    private final Attributes attrs;

    AddressHandle(ProtectionDomain pd, MemorySegment ptr, Attributes attrs) {
        super(pd);
        this.pd = pd;
        this.ptr = ptr.reinterpret(Abi.AH_HANDLE + 4);
        this.attrs = attrs;
        attach();
    }

    public ProtectionDomain protectionDomain() {
        return pd;
    }

    public Attributes attributes() {
        return attrs;
    }

    /** The native {@code struct ibv_ah *}. */
    public MemorySegment address() {
        return ptr;
    }

    @Override
    public String describe() {
        return "AddressHandle to " + (attrs.global() ? attrs.dgid().toString() : "LID " + attrs.dlid());
    }

    @Override
    void destroy() {
        DESTROY_AH.check(ptr);
    }
}
