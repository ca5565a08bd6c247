package io.metaroce.nic.port.xdp;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The few libbpf calls that load the steering program and attach it (libbpf 1.x: functions return
 * {@code -errno}; the object opener returns NULL and sets errno). Control path only. Linked on
 * first use, so a machine without libbpf fails with a clear message only when AF_XDP is asked for.
 */
final class LibBpf {
    static final int XDP_FLAGS_UPDATE_IF_NOEXIST = 1;
    static final int XDP_FLAGS_SKB_MODE = 1 << 1;
    static final int XDP_FLAGS_DRV_MODE = 1 << 2;
    /** struct bpf_prog_info: name[16] at offset 64; the struct is 232 bytes on 6.x kernels. */
    static final long PROG_INFO_NAME = 64;

    static final long PROG_INFO_SIZE = 256;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final SymbolLookup LIB = SymbolLookup.libraryLookup("libbpf.so.1", Arena.global());

    private static final MethodHandle OPEN_FILE = link("bpf_object__open_file", ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle LOAD = link("bpf_object__load", JAVA_INT, ADDRESS);
    private static final MethodHandle CLOSE = link("bpf_object__close", null, ADDRESS);
    private static final MethodHandle FIND_PROG = link("bpf_object__find_program_by_name", ADDRESS, ADDRESS, ADDRESS);
    private static final MethodHandle PROG_FD = link("bpf_program__fd", JAVA_INT, ADDRESS);
    private static final MethodHandle MAP_FD = link("bpf_object__find_map_fd_by_name", JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle MAP_UPDATE =
            link("bpf_map_update_elem", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT);
    private static final MethodHandle XDP_ATTACH =
            link("bpf_xdp_attach", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle XDP_DETACH = link("bpf_xdp_detach", JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle XDP_QUERY_ID = link("bpf_xdp_query_id", JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle PROG_FD_BY_ID = link("bpf_prog_get_fd_by_id", JAVA_INT, JAVA_INT);
    private static final MethodHandle OBJ_INFO = link("bpf_obj_get_info_by_fd", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);

    private LibBpf() {}

    private static MethodHandle link(String name, MemoryLayout ret, MemoryLayout... args) {
        MemorySegment symbol = LIB.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libbpf has no " + name));
        FunctionDescriptor fd = ret == null ? FunctionDescriptor.ofVoid(args) : FunctionDescriptor.of(ret, args);
        return LINKER.downcallHandle(symbol, fd, Linker.Option.captureCallState("errno"));
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    private static int check(int rc, String call) throws NativeException {
        if (rc < 0) {
            throw new NativeException(call, -rc);
        }
        return rc;
    }

    /** Opens and loads the object file; returns the bpf_object pointer (close it). */
    static MemorySegment openAndLoad(String path) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cs = a.allocate(CAPTURE_LAYOUT);
            MemorySegment obj = (MemorySegment) OPEN_FILE.invokeExact(cs, a.allocateFrom(path), MemorySegment.NULL);
            if (obj.address() == 0) {
                throw new NativeException("bpf_object__open_file(" + path + ")", (int) ERRNO.get(cs, 0L));
            }
            int rc = (int) LOAD.invokeExact(cs, obj);
            if (rc < 0) {
                CLOSE.invokeExact(cs, obj);
                throw new NativeException("bpf_object__load(" + path + ")", -rc);
            }
            return obj;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void close(MemorySegment obj) {
        try (Arena a = Arena.ofConfined()) {
            CLOSE.invokeExact(a.allocate(CAPTURE_LAYOUT), obj);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int programFd(MemorySegment obj, String name) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cs = a.allocate(CAPTURE_LAYOUT);
            MemorySegment prog = (MemorySegment) FIND_PROG.invokeExact(cs, obj, a.allocateFrom(name));
            if (prog.address() == 0) {
                throw new NativeException("bpf_object__find_program_by_name(" + name + ")", 2);
            }
            return check((int) PROG_FD.invokeExact(cs, prog), "bpf_program__fd(" + name + ")");
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int mapFd(MemorySegment obj, String name) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cs = a.allocate(CAPTURE_LAYOUT);
            return check(
                    (int) MAP_FD.invokeExact(cs, obj, a.allocateFrom(name)),
                    "bpf_object__find_map_fd_by_name(" + name + ")");
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void mapUpdate(int mapFd, int key, MemorySegment value, String what) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cs = a.allocate(CAPTURE_LAYOUT);
            check(
                    (int) MAP_UPDATE.invokeExact(cs, mapFd, a.allocateFrom(JAVA_INT, key), value, 0),
                    "bpf_map_update_elem(" + what + "[" + key + "])");
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void xdpAttach(int ifindex, int progFd, int flags) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            check(
                    (int) XDP_ATTACH.invokeExact(
                            a.allocate(CAPTURE_LAYOUT), ifindex, progFd, flags, MemorySegment.NULL),
                    "bpf_xdp_attach(ifindex " + ifindex + ", flags " + flags + ")");
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Detaches whatever program is attached in that mode; 0 or -errno. */
    static int xdpDetach(int ifindex, int flags) {
        try (Arena a = Arena.ofConfined()) {
            return (int) XDP_DETACH.invokeExact(a.allocate(CAPTURE_LAYOUT), ifindex, flags, MemorySegment.NULL);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The id of the program attached in that mode, 0 when none. */
    static int xdpQueryId(int ifindex, int flags) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment id = a.allocate(JAVA_INT);
            check(
                    (int) XDP_QUERY_ID.invokeExact(a.allocate(CAPTURE_LAYOUT), ifindex, flags, id),
                    "bpf_xdp_query_id(ifindex " + ifindex + ")");
            return id.get(JAVA_INT, 0);
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The name of the loaded program with that id, or "" when it is gone. */
    static String programName(int id) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cs = a.allocate(CAPTURE_LAYOUT);
            int fd = (int) PROG_FD_BY_ID.invokeExact(cs, id);
            if (fd < 0) {
                return "";
            }
            try {
                MemorySegment info = a.allocate(PROG_INFO_SIZE, 8);
                MemorySegment len = a.allocateFrom(JAVA_INT, (int) PROG_INFO_SIZE);
                int rc = (int) OBJ_INFO.invokeExact(cs, fd, info, len);
                return rc < 0 ? "" : info.getString(PROG_INFO_NAME);
            } finally {
                io.metaroce.nic.sys.LibC.close(fd);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
