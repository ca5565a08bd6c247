package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Optional;

/**
 * How the binding reaches libibverbs.
 *
 * <p><b>Symbol resolution.</b> {@code libibverbs.so.1} is loaded with {@code dlopen(RTLD_NOW |
 * RTLD_GLOBAL)} and every {@code ibv_*} verb is then looked up with {@code dlsym(RTLD_DEFAULT,
 * name)}: the dynamic linker's global scope, searched in load order, which puts {@code LD_PRELOAD}
 * objects (MetaRoCE's {@code libmetaroce.so}) ahead of libibverbs. The JVM thus calls exactly the
 * definition a C program linked with {@code -libverbs} would call: MetaRoCE's interposed verbs when
 * the provider is preloaded (they forward other devices to the real libibverbs), libibverbs' own
 * otherwise (any kernel provider: mlx5, rxe, ...). {@code dlsym} on libibverbs' own handle
 * ({@code SymbolLookup.libraryLookup}) would search libibverbs and its dependencies only and so
 * bypass the preload.
 *
 * <p><b>Control verbs</b> are downcalls with {@code Linker.Option.captureCallState("errno")}: a
 * failure becomes a {@link VerbsException} naming the verb and its errno. <b>Data-path verbs</b>
 * ({@code ibv_post_send}, {@code ibv_post_recv}, {@code ibv_post_srq_recv}, {@code ibv_poll_cq},
 * {@code ibv_req_notify_cq}) are {@code static inline} in {@code verbs.h}: they call the
 * function pointers of {@code context->ops}; so does the binding, with address-less downcall
 * handles (the function pointer is the first argument) that are {@code Linker.Option.critical}
 * (no thread-state transition; the function pointer is passed first) and return the verb's error number directly.
 */
final class Native {

    private Native() {}

    static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();

    private static final int RTLD_NOW = 0x2;
    private static final int RTLD_GLOBAL = 0x100;
    static final String LIBIBVERBS = "libibverbs.so.1";

    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final ThreadLocal<MemorySegment> CAPTURE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));

    private static final MethodHandle DLOPEN = libc("dlopen", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle DLSYM = libc("dlsym", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle DLERROR = libc("dlerror", FunctionDescriptor.of(ADDRESS));
    private static final MethodHandle DLADDR = libc("dladdr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle STRERROR = libc("strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));

    /** Why libibverbs could not be loaded, or null when it was. */
    private static final String LOAD_ERROR = loadLibibverbs();

    // ---------------------------------------------------------------- data-path (context->ops)

    private static final Linker.Option CRITICAL = Linker.Option.critical(false);
    /** int post_send(ibv_qp *, ibv_send_wr *, ibv_send_wr **), also post_recv and post_srq_recv. */
    static final MethodHandle OP_POST =
            LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), CRITICAL);
    /** int poll_cq(ibv_cq *, int num_entries, ibv_wc *). */
    static final MethodHandle OP_POLL_CQ =
            LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), CRITICAL);
    /** int req_notify_cq(ibv_cq *, int solicited_only). */
    static final MethodHandle OP_REQ_NOTIFY_CQ =
            LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), CRITICAL);

    private static MethodHandle libc(String name, FunctionDescriptor fd) {
        MemorySegment sym =
                LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc symbol " + name + " not found"));
        return LINKER.downcallHandle(sym, fd);
    }

    private static String loadLibibverbs() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment h = (MemorySegment) DLOPEN.invokeExact(a.allocateFrom(LIBIBVERBS), RTLD_NOW | RTLD_GLOBAL);
            if (h.address() == 0) {
                return "dlopen(" + LIBIBVERBS + ") failed: " + dlerror()
                        + " (install rdma-core's libibverbs, e.g. Debian's libibverbs1)";
            }
            return null;
        } catch (Throwable t) {
            return "dlopen(" + LIBIBVERBS + ") failed: " + t;
        }
    }

    private static String dlerror() throws Throwable {
        MemorySegment msg = (MemorySegment) DLERROR.invokeExact();
        return msg.address() == 0 ? "unknown error" : msg.reinterpret(4096).getString(0);
    }

    /** True when libibverbs.so.1 could be loaded. */
    static boolean available() {
        return LOAD_ERROR == null;
    }

    static void ensureLoaded() {
        if (LOAD_ERROR != null) {
            throw new UnsatisfiedLinkError(LOAD_ERROR);
        }
    }

    /** dlsym(RTLD_DEFAULT, name): the definition the dynamic linker binds first (LD_PRELOAD first). */
    static Optional<MemorySegment> find(String name) {
        ensureLoaded();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = (MemorySegment) DLSYM.invokeExact(MemorySegment.NULL, a.allocateFrom(name));
            return p.address() == 0 ? Optional.empty() : Optional.of(p);
        } catch (Throwable t) {
            throw new IllegalStateException("dlsym(" + name + ")", t);
        }
    }

    /** The file of the shared object that defines the symbol this binding calls for {@code name}. */
    static Optional<String> definingObject(String name) {
        return find(name).map(p -> {
            try (Arena a = Arena.ofConfined()) {
                // Dl_info: dli_fname, dli_fbase, dli_sname, dli_saddr
                MemorySegment info = a.allocate(4 * ADDRESS.byteSize(), ADDRESS.byteAlignment());
                int ok = (int) DLADDR.invokeExact(p, info);
                if (ok == 0) {
                    return "?";
                }
                MemorySegment fname = info.get(ADDRESS, 0);
                return fname.address() == 0 ? "?" : fname.reinterpret(4096).getString(0);
            } catch (Throwable t) {
                throw new IllegalStateException("dladdr(" + name + ")", t);
            }
        });
    }

    /** A control verb: a downcall to the symbol that captures errno in a per-thread segment. */
    static Verb verb(String name, FunctionDescriptor fd) {
        return new Verb(name, fd);
    }

    static String strerror(int errno) {
        try {
            MemorySegment s = (MemorySegment) STRERROR.invokeExact(errno);
            return s.address() == 0 ? "errno " + errno : s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }

    static MemorySegment captureSegment() {
        return CAPTURE.get();
    }

    static int capturedErrno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    /** Reads a NUL-terminated C string at {@code p} (at most 4 KiB). */
    static String string(MemorySegment p) {
        return p.address() == 0 ? null : p.reinterpret(4096).getString(0);
    }

    /**
     * One control verb, resolved lazily (a verb this libibverbs lacks fails when called, naming
     * it, not when the binding loads).
     */
    static final class Verb {
        final String name;
        private final FunctionDescriptor fd;
        private volatile MethodHandle handle;

        private Verb(String name, FunctionDescriptor fd) {
            this.name = name;
            this.fd = fd;
        }

        private MethodHandle handle() {
            MethodHandle h = handle;
            if (h == null) {
                MemorySegment sym = find(name)
                        .orElseThrow(() -> new UnsupportedOperationException(
                                name + " is not exported by the loaded libibverbs (" + LIBIBVERBS + ")"));
                h = LINKER.downcallHandle(sym, fd, CAPTURE_ERRNO);
                handle = h;
            }
            return h;
        }

        /** Calls the verb; the first element of the result is the return value, errno is captured. */
        private Object call(MemorySegment capture, Object... args) {
            Object[] all = new Object[args.length + 1];
            all[0] = capture;
            System.arraycopy(args, 0, all, 1, args.length);
            try {
                return handle().invokeWithArguments(all);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(name, t);
            }
        }

        /** A verb returning a pointer: NULL becomes a VerbsException with errno. */
        MemorySegment create(Object... args) {
            MemorySegment capture = captureSegment();
            ERRNO.set(capture, 0L, 0);
            MemorySegment p = (MemorySegment) call(capture, args);
            if (p.address() == 0) {
                int errno = capturedErrno(capture);
                throw new VerbsException(name, errno == 0 ? Errno.EIO : errno);
            }
            return p;
        }

        /** A verb returning 0 or an error: positive is the error number, negative means see errno. */
        void check(Object... args) {
            MemorySegment capture = captureSegment();
            ERRNO.set(capture, 0L, 0);
            int rc = (int) call(capture, args);
            if (rc != 0) {
                int errno = rc > 0 ? rc : capturedErrno(capture);
                throw new VerbsException(name, errno == 0 ? -rc : errno);
            }
        }

        /** A verb returning a value used as is (no error convention). */
        Object invoke(Object... args) {
            return call(captureSegment(), args);
        }
    }

    /**
     * The errno values the binding names itself (the cm package's DaemonControl.Errnos names the
     * daemon's answers); ErrnoAgreementTest holds both to the daemon's table.
     */
    static final class Errno {
        static final int EINTR = 4;
        static final int EIO = 5;
        static final int EBADF = 9;
        static final int EAGAIN = 11;
        static final int ENOMEM = 12;
        static final int EINVAL = 22;
        static final int EOPNOTSUPP = 95;

        private Errno() {}
    }
}
