package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static io.metaroce.nic.verbs.OpSupport.empty;
import static io.metaroce.nic.verbs.OpSupport.fail;
import static io.metaroce.nic.verbs.OpSupport.resp;
import static io.metaroce.nic.verbs.PdMrOps.use;

import io.metaroce.abi.ContextTokenDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.abi.ImportContextReqDescriptor;
import io.metaroce.abi.ImportMrReqDescriptor;
import io.metaroce.abi.ImportMrRespDescriptor;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.sys.FileIds;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import io.metaroce.nic.transport.Qp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Shared contexts: ibv_import_device, ibv_import_pd, ibv_import_mr (ops CONTEXT_FD,
 * IMPORT_CONTEXT, IMPORT_PD, UNIMPORT_PD, IMPORT_MR, UNIMPORT_MR), the registry of live contexts
 * by their memfd's file, and what a session leaves behind in its context at teardown.
 */
final class ImportOps {
    /** Shared contexts by their memfd's file; guarded by itself (lock order: a session, then this). */
    private final Map<FileIds.FileId, SharedContext> contexts = new java.util.HashMap<>();
    /** The device name the context token carries. */
    private final java.util.function.Supplier<String> devName;

    ImportOps(java.util.function.Supplier<String> devName) {
        this.devName = devName;
    }

    /**
     * CONTEXT_FD: makes the connection the first member of a new context and answers with the
     * context memfd (the provider's cmd_fd). The daemon keeps its copy while a member lives, so
     * the memfd's inode names this context and no other while anyone can present it.
     */
    void contextFd(SessionObjects s, int seq) throws NativeException {
        if (s.context != null) {
            fail(s, MRCE_OP_CONTEXT_FD, seq, Errno.EEXIST);
            return;
        }
        if (!s.noObjects()) {
            fail(s, MRCE_OP_CONTEXT_FD, seq, Errno.EBUSY); // only right after HELLO
            return;
        }
        int fd = LibC.memfdCreate("mrce-context", LibC.MFD_CLOEXEC);
        FileIds.FileId id;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment token = arena.allocate(ContextTokenDescriptor.SIZE);
            token.set(java.lang.foreign.ValueLayout.JAVA_INT, ContextTokenDescriptor.OFF_MAGIC, MRCE_CONTEXT_MAGIC);
            token.set(java.lang.foreign.ValueLayout.JAVA_INT, ContextTokenDescriptor.OFF_ABI_VERSION, MRCE_ABI_VERSION);
            byte[] name = devName.get().getBytes(StandardCharsets.US_ASCII);
            MemorySegment.copy(
                    name,
                    0,
                    token,
                    java.lang.foreign.ValueLayout.JAVA_BYTE,
                    ContextTokenDescriptor.OFF_DEV_NAME,
                    Math.min(name.length, 15));
            long n = LibC.write(fd, token, ContextTokenDescriptor.SIZE);
            if (n != ContextTokenDescriptor.SIZE) {
                throw new NativeException("write(context memfd)", n < 0 ? (int) -n : Errno.EIO);
            }
            id = FileIds.of(fd);
        } catch (NativeException e) {
            LibC.close(fd);
            throw e;
        }
        SharedContext ctx = new SharedContext(fd, id);
        synchronized (contexts) {
            contexts.put(id, ctx);
            ctx.members.add(s);
        }
        s.context = ctx;
        s.session.respond(MRCE_OP_CONTEXT_FD, seq, 0, empty(), fd);
    }

    /**
     * IMPORT_CONTEXT: joins the context whose memfd the caller holds as fd {@code fd}. The file
     * is taken from the caller's own fd table through the connection's pidfd, so only a process
     * that was given the fd can join, whatever number it names.
     */
    void importContext(SessionObjects s, int seq, ByteBuffer p) {
        int fd = p.getInt((int) ImportContextReqDescriptor.OFF_FD);
        if (s.context != null || !s.noObjects()) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, Errno.EEXIST);
            return;
        }
        if (fd < 0) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, Errno.EBADF);
            return;
        }
        int mine = FileIds.pidfdGetfd(s.memory.pidFd(), fd);
        if (mine < 0) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, -mine);
            return;
        }
        FileIds.FileId id;
        try {
            id = FileIds.of(mine);
        } catch (NativeException e) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, e.errno());
            return;
        } finally {
            LibC.close(mine);
        }
        SharedContext ctx;
        synchronized (contexts) {
            ctx = contexts.get(id);
            if (ctx != null) {
                ctx.members.add(s);
            }
        }
        if (ctx == null) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, Errno.EINVAL); // not a live context of this daemon
            return;
        }
        s.context = ctx;
        s.session.respond(MRCE_OP_IMPORT_CONTEXT, seq, 0, empty());
    }

    /** IMPORT_PD: a reference to a PD another member made; its owner's dealloc is EBUSY meanwhile. */
    void importPd(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        if (s.context == null) {
            fail(s, MRCE_OP_IMPORT_PD, seq, Errno.EINVAL);
            return;
        }
        if (s.pd(handle) != null) {
            fail(s, MRCE_OP_IMPORT_PD, seq, Errno.EEXIST);
            return;
        }
        Pd pd = s.context.pds.get(handle);
        boolean live = false;
        if (pd != null) {
            synchronized (pd) { // against the owner's dealloc
                live = s.context.pds.get(handle) == pd;
                if (live) {
                    pd.users++;
                }
            }
        }
        if (!live) {
            fail(s, MRCE_OP_IMPORT_PD, seq, Errno.ENOENT);
            return;
        }
        s.importedPds.put(handle, pd);
        s.session.respond(MRCE_OP_IMPORT_PD, seq, 0, empty());
    }

    void unimportPd(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        Pd pd = s.importedPds.get(handle);
        if (pd == null) {
            fail(s, MRCE_OP_UNIMPORT_PD, seq, Errno.ENOENT);
            return;
        }
        if (usesPd(s, pd)) {
            fail(s, MRCE_OP_UNIMPORT_PD, seq, Errno.EBUSY); // its MRs, QPs or SRQs first
            return;
        }
        s.importedPds.remove(handle);
        use(pd, -1);
        s.session.respond(MRCE_OP_UNIMPORT_PD, seq, 0, empty());
    }

    /** True when an object of this connection (made or imported) is on {@code pd}. */
    private static boolean usesPd(SessionObjects s, Pd pd) {
        for (Mr mr : s.mrs.values()) {
            if (mr.pd == pd) {
                return true;
            }
        }
        for (Mr mr : s.importedMrs.values()) {
            if (mr.pd == pd) {
                return true;
            }
        }
        for (Qp qp : s.qps.values()) {
            if (qp.pd == pd) {
                return true;
            }
        }
        for (Srq srq : s.srqs.values()) {
            if (srq.pd == pd) {
                return true;
            }
        }
        return false;
    }

    /**
     * IMPORT_MR: the keys and range of an MR another member registered, on a PD the caller has.
     * The reference holds nothing: the owner's DEREG_MR revokes the keys for everyone.
     */
    void importMr(SessionObjects s, int seq, ByteBuffer p) {
        Pd pd = s.pd(p.getInt((int) ImportMrReqDescriptor.OFF_PD));
        int handle = p.getInt((int) ImportMrReqDescriptor.OFF_HANDLE);
        if (s.context == null || pd == null) {
            fail(s, MRCE_OP_IMPORT_MR, seq, s.context == null ? Errno.EINVAL : Errno.ENOENT);
            return;
        }
        if (s.mrs.containsKey(handle) || s.importedMrs.containsKey(handle)) {
            fail(s, MRCE_OP_IMPORT_MR, seq, Errno.EEXIST);
            return;
        }
        Mr mr = s.context.mrs.get(handle);
        if (mr == null) {
            fail(s, MRCE_OP_IMPORT_MR, seq, Errno.ENOENT);
            return;
        }
        if (mr.pd != pd) {
            fail(s, MRCE_OP_IMPORT_MR, seq, Errno.EINVAL);
            return;
        }
        s.importedMrs.put(handle, mr);
        ByteBuffer r = resp(ImportMrRespDescriptor.SIZE);
        r.putInt(ImportMrRespDescriptor.OFF_HANDLE, handle);
        r.putInt(ImportMrRespDescriptor.OFF_LKEY, mr.lkey);
        r.putInt(ImportMrRespDescriptor.OFF_RKEY, mr.rkey);
        r.putInt(ImportMrRespDescriptor.OFF_ACCESS, mr.access);
        r.putLong(ImportMrRespDescriptor.OFF_ADDR, mr.iova);
        r.putLong(ImportMrRespDescriptor.OFF_LENGTH, mr.length);
        s.session.respond(MRCE_OP_IMPORT_MR, seq, 0, r);
    }

    static void unimportMr(SessionObjects s, int seq, ByteBuffer p) {
        if (s.importedMrs.remove(p.getInt((int) HandleReqDescriptor.OFF_HANDLE)) == null) {
            fail(s, MRCE_OP_UNIMPORT_MR, seq, Errno.ENOENT);
            return;
        }
        s.session.respond(MRCE_OP_UNIMPORT_MR, seq, 0, empty());
    }

    /**
     * Session teardown (caller holds the session lock): drops what it imported, withdraws what it
     * made from the context, and closes the context memfd with its last member.
     */
    void leaveContext(SessionObjects s) {
        for (Pd pd : s.importedPds.values()) {
            use(pd, -1);
        }
        s.importedPds.clear();
        s.importedMrs.clear();
        SharedContext ctx = s.context;
        if (ctx == null) {
            return;
        }
        for (Pd pd : s.pds.values()) {
            synchronized (pd) {
                ctx.pds.remove(pd.handle, pd);
            }
        }
        for (Mr mr : s.mrs.values()) {
            ctx.mrs.remove(mr.handle, mr);
        }
        synchronized (contexts) {
            ctx.members.remove(s);
            if (ctx.members.isEmpty()) {
                contexts.remove(ctx.id, ctx);
                LibC.close(ctx.tokenFd);
            }
        }
    }

    /** Contexts with at least one member, by their memfd's file (for tests). */
    int contextCount() {
        synchronized (contexts) {
            return contexts.size();
        }
    }
}
