package io.metaroce.nic.verbs;

import io.metaroce.control.LocalSession;
import io.metaroce.nic.model.AsyncEventQueue;
import io.metaroce.nic.model.CompChannel;
import io.metaroce.nic.model.Cq;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.transport.Qp;
import java.util.LinkedHashMap;
import java.util.Map;

/** Everything one provider connection made; guarded by its own monitor. */
final class SessionObjects {
    final LocalSession session;
    /** The PID from SO_PEERCRED, for logs and the admin view only. */
    final int pid;
    /** The process's address space, bound at HELLO; null before. */
    volatile io.metaroce.nic.dma.ProcessMemory memory;
    /** {@link #memory}'s id: what the session's MRs, QPs and SRQs name their memory by. */
    int space;

    boolean hello;
    boolean closed;
    int doorbellFd = -1;
    int asyncFd = -1;
    /** The doorbell page, mapped, when the provider asked for one at HELLO; else null. */
    java.lang.foreign.MemorySegment doorbellPage;
    /** The connection's async events (created at HELLO with the async eventfd). */
    AsyncEventQueue events;

    private int nextHandle = 1;
    final Map<Integer, Pd> pds = new LinkedHashMap<>();
    final Map<Integer, Mr> mrs = new LinkedHashMap<>();
    final Map<Integer, CompChannel> channels = new LinkedHashMap<>();
    final Map<Integer, Cq> cqs = new LinkedHashMap<>();
    final Map<Integer, Qp> qps = new LinkedHashMap<>();
    final Map<Integer, Srq> srqs = new LinkedHashMap<>();
    /** The context this connection shares (CONTEXT_FD or IMPORT_CONTEXT); null: its own handles. */
    SharedContext context;
    /** PDs and MRs of other members of the context this connection imported, by handle. */
    final Map<Integer, Pd> importedPds = new LinkedHashMap<>();

    final Map<Integer, Mr> importedMrs = new LinkedHashMap<>();

    SessionObjects(LocalSession session, int pid) {
        this.session = session;
        this.pid = pid;
    }

    int newHandle() {
        if (context != null) {
            return context.newHandle();
        }
        int h = nextHandle++;
        if (nextHandle == -1) {
            nextHandle = 1;
        }
        return h;
    }

    /** The PD {@code handle} names for this connection: one of its own or one it imported. */
    Pd pd(int handle) {
        Pd pd = pds.get(handle);
        return pd != null ? pd : importedPds.get(handle);
    }

    /** True while the connection has made or imported nothing. */
    boolean noObjects() {
        return pds.isEmpty()
                && mrs.isEmpty()
                && channels.isEmpty()
                && cqs.isEmpty()
                && qps.isEmpty()
                && srqs.isEmpty()
                && importedPds.isEmpty()
                && importedMrs.isEmpty();
    }
}
