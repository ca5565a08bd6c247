package io.metaroce.nic.verbs;

import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.sys.FileIds.FileId;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One verbs context shared by several provider connections (ibv_import_device): its context
 * memfd (the cmd_fd the provider hands out; the daemon holds one copy while a member lives), the
 * handle space of its members, and the PDs and MRs they made, by handle, for IMPORT_PD and
 * IMPORT_MR. {@code members} is guarded by ImportOps's context registry; the maps are
 * concurrent because members add and remove under their own session locks.
 */
final class SharedContext {
    final int tokenFd;
    final FileId id;
    final List<SessionObjects> members = new ArrayList<>();
    final ConcurrentHashMap<Integer, Pd> pds = new ConcurrentHashMap<>();
    final ConcurrentHashMap<Integer, Mr> mrs = new ConcurrentHashMap<>();
    private int nextHandle = 1;

    SharedContext(int tokenFd, FileId id) {
        this.tokenFd = tokenFd;
        this.id = id;
    }

    /** A handle no member of this context has used (0 and MRCE_NO_HANDLE never). */
    synchronized int newHandle() {
        int h = nextHandle++;
        if (nextHandle == -1) {
            nextHandle = 1;
        }
        return h;
    }
}
