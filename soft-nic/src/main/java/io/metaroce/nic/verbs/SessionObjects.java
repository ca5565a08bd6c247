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
    /** The connection's async events (created at HELLO with the async eventfd). */
    AsyncEventQueue events;
    private int nextHandle = 1;
    final Map<Integer, Pd> pds = new LinkedHashMap<>();
    final Map<Integer, Mr> mrs = new LinkedHashMap<>();
    final Map<Integer, CompChannel> channels = new LinkedHashMap<>();
    final Map<Integer, Cq> cqs = new LinkedHashMap<>();
    final Map<Integer, Qp> qps = new LinkedHashMap<>();
    final Map<Integer, Srq> srqs = new LinkedHashMap<>();

    SessionObjects(LocalSession session, int pid) {
        this.session = session;
        this.pid = pid;
    }

    int newHandle() {
        int h = nextHandle++;
        if (nextHandle == -1) {
            nextHandle = 1;
        }
        return h;
    }
}
