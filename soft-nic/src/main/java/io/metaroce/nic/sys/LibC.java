package io.metaroce.nic.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * FFM bindings of the libc calls the daemon needs. Every handle captures errno. Two styles:
 * control-path calls throw {@link NativeException} naming the call and its arguments; data-path
 * calls ({@code read, write, process_vm_*, sendmmsg, recvmmsg, epoll_wait}) return
 * {@code -errno} so that a hot loop never allocates an exception for EAGAIN.
 */
public final class LibC {
    public static final int O_CLOEXEC = 0x80000;
    public static final int MFD_CLOEXEC = 1;
    public static final int PROT_READ = 1;
    public static final int PROT_WRITE = 2;
    public static final int MAP_SHARED = 1;
    public static final int EFD_SEMAPHORE = 1;
    public static final int EFD_NONBLOCK = 0x800;
    public static final int EFD_CLOEXEC = 0x80000;
    public static final int AF_INET = 2;
    public static final int AF_INET6 = 10;
    public static final int IPPROTO_IPV6 = 41;
    /** IPV6_TCLASS: as a socket option, the traffic class sent; as a control message, the one received. */
    public static final int IPV6_TCLASS = 67;
    /** Asks for an IPV6_TCLASS control message with every datagram received. */
    public static final int IPV6_RECVTCLASS = 66;

    public static final int SOCK_DGRAM = 2;
    public static final int SOCK_NONBLOCK = 0x800;
    public static final int SOCK_CLOEXEC = 0x80000;
    public static final int SOL_SOCKET = 1;
    public static final int IPPROTO_IP = 0;
    /** IP_TOS: as a socket option, the TOS byte sent; as a control message, the one received. */
    public static final int IP_TOS = 1;
    /** Asks for an IP_TOS control message with every datagram received. */
    public static final int IP_RECVTOS = 13;
    /** The UDP socket options' level, and two of them (Linux 4.18 and 5.0). */
    public static final int SOL_UDP = 17;
    /** UDP_SEGMENT: a send's buffer is cut into datagrams of this many bytes (GSO; control message, u16). */
    public static final int UDP_SEGMENT = 103;
    /** UDP_GRO: receive coalesced datagrams, with their size in a control message (int). */
    public static final int UDP_GRO = 104;
    /** struct cmsghdr { size_t len; int level; int type; } then the data, 8-byte aligned. */
    public static final long CMSGHDR_SIZE = 16;

    public static final int SO_REUSEADDR = 2;
    public static final int SO_SNDBUF = 7;
    public static final int SO_RCVBUF = 8;
    /** SO_RCVBUF beyond net.core.rmem_max (CAP_NET_ADMIN). */
    public static final int SO_RCVBUFFORCE = 33;

    public static final int MSG_DONTWAIT = 0x40;
    public static final int EPOLL_CLOEXEC = 0x80000;
    public static final int EPOLL_CTL_ADD = 1;
    public static final int EPOLL_CTL_DEL = 2;
    public static final int EPOLLIN = 1;
    public static final int O_RDWR = 2;
    /** getsockopt: a pidfd of the Unix socket's peer as of connect (Linux 6.5). */
    public static final int SO_PEERPIDFD = 77;

    /** struct iovec { void *base; size_t len; } */
    public static final StructLayout IOVEC =
            MemoryLayout.structLayout(JAVA_LONG.withName("iov_base"), JAVA_LONG.withName("iov_len"));
    /** struct epoll_event { uint32_t events; uint64_t data; } packed on x86-64: 12 bytes. */
    public static final long EPOLL_EVENT_SIZE = 12;
    /** struct sockaddr_in: 16 bytes (family u16, port be16, addr be32, zero[8]). */
    public static final long SOCKADDR_IN_SIZE = 16;
    /** struct sockaddr_in6: 28 bytes (family u16, port be16, flowinfo be32, addr[16], scope u32). */
    public static final long SOCKADDR_IN6_SIZE = 28;
    /** struct msghdr (56) + msg_len (u32) padded: struct mmsghdr is 64 bytes. */
    public static final long MMSGHDR_SIZE = 64;

    public static final long MSGHDR_NAME = 0;
    public static final long MSGHDR_NAMELEN = 8;
    public static final long MSGHDR_IOV = 16;
    public static final long MSGHDR_IOVLEN = 24;
    public static final long MSGHDR_CONTROL = 32;
    public static final long MSGHDR_CONTROLLEN = 40;
    public static final long MSGHDR_FLAGS = 48;
    public static final long MMSGHDR_LEN = 56;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> CAPTURE =
            ThreadLocal.withInitial(() -> Arena.global().allocate(CAPTURE_LAYOUT));

    private static final MethodHandle MEMFD_CREATE = link("memfd_create", JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle FTRUNCATE = link("ftruncate", JAVA_INT, JAVA_INT, JAVA_LONG);
    private static final MethodHandle MMAP =
            link("mmap", ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG);
    private static final MethodHandle MUNMAP = link("munmap", JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle CLOSE = link("close", JAVA_INT, JAVA_INT);
    private static final MethodHandle EVENTFD = link("eventfd", JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle READ = link("read", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle WRITE = link("write", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
    private static final MethodHandle PROCESS_VM_READV =
            link("process_vm_readv", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG);
    private static final MethodHandle PROCESS_VM_WRITEV =
            link("process_vm_writev", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG);
    private static final MethodHandle SOCKET = link("socket", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle BIND = link("bind", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle SETSOCKOPT =
            link("setsockopt", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle SENDMMSG = link("sendmmsg", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
    private static final MethodHandle RECVMMSG =
            link("recvmmsg", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle EPOLL_CREATE1 = link("epoll_create1", JAVA_INT, JAVA_INT);
    private static final MethodHandle EPOLL_CTL = link("epoll_ctl", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);
    private static final MethodHandle EPOLL_WAIT = link("epoll_wait", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
    private static final MethodHandle GETPID = link("getpid", JAVA_INT);
    private static final MethodHandle GETUID = link("getuid", JAVA_INT);
    private static final MethodHandle GETGID = link("getgid", JAVA_INT);
    private static final MethodHandle CAPGET = link("capget", JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle CAPSET = link("capset", JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle OPEN = link("open", JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle PREADV = link("preadv", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG);
    private static final MethodHandle PWRITEV = link("pwritev", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG);
    private static final MethodHandle GETSOCKOPT =
            link("getsockopt", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle PIDFD_OPEN = link("pidfd_open", JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle PIDFD_GETFD = link("pidfd_getfd", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle LSEEK = link("lseek", JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT);
    private static final MethodHandle FSTATFS = link("fstatfs", JAVA_INT, JAVA_INT, ADDRESS);
    /** fcntl(fd, cmd, int): variadic after the command. */
    private static final MethodHandle FCNTL_INT = LINKER.downcallHandle(
            LINKER.defaultLookup().find("fcntl").orElseThrow(() -> new UnsatisfiedLinkError("libc has no fcntl")),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(2),
            Linker.Option.captureCallState("errno"));

    private static final MethodHandle PIDFD_SEND_SIGNAL =
            link("pidfd_send_signal", JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);

    private LibC() {}

    /** A libc function, linked once, that captures errno (read it with {@link #errno}). */
    public static MethodHandle link(
            String name, java.lang.foreign.MemoryLayout ret, java.lang.foreign.MemoryLayout... args) {
        MemorySegment symbol =
                LINKER.defaultLookup().find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
        return LINKER.downcallHandle(symbol, FunctionDescriptor.of(ret, args), Linker.Option.captureCallState("errno"));
    }

    /** This thread's call-state segment for {@link #link}ed calls. */
    public static MemorySegment callState() {
        return CAPTURE.get();
    }

    /** The errno a call captured into {@code capture}. */
    public static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    /** What an {@code invokeExact} threw, as an unchecked exception. */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    public static int memfdCreate(String name, int flags) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) MEMFD_CREATE.invokeExact(cs, arena.allocateFrom(name), flags);
            if (fd < 0) {
                throw new NativeException("memfd_create(" + name + ", " + flags + ")", errno(cs));
            }
            return fd;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void ftruncate(int fd, long length) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try {
            int rc = (int) FTRUNCATE.invokeExact(cs, fd, length);
            if (rc < 0) {
                throw new NativeException("ftruncate(" + fd + ", " + length + ")", errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** mmap; the returned segment has {@code length} bytes and the global scope (munmap it). */
    public static MemorySegment mmap(long length, int prot, int flags, int fd, long offset) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try {
            MemorySegment p = (MemorySegment) MMAP.invokeExact(cs, MemorySegment.NULL, length, prot, flags, fd, offset);
            if (p.address() == -1L) {
                throw new NativeException(
                        "mmap(len " + length + ", prot " + prot + ", flags " + flags + ", fd " + fd + ", off " + offset
                                + ")",
                        errno(cs));
            }
            return p.reinterpret(length);
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void munmap(MemorySegment segment) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try {
            int rc = (int) MUNMAP.invokeExact(cs, segment, segment.byteSize());
            if (rc < 0) {
                throw new NativeException(
                        "munmap(0x" + Long.toHexString(segment.address()) + ", " + segment.byteSize() + ")", errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** close(2); returns 0 or -errno (closing is best effort everywhere we do it). */
    public static int close(int fd) {
        MemorySegment cs = CAPTURE.get();
        try {
            int rc = (int) CLOSE.invokeExact(cs, fd);
            return rc < 0 ? -errno(cs) : 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int eventfd(int initval, int flags) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try {
            int fd = (int) EVENTFD.invokeExact(cs, initval, flags);
            if (fd < 0) {
                throw new NativeException("eventfd(" + initval + ", " + flags + ")", errno(cs));
            }
            return fd;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** read(2): bytes read or -errno. */
    public static long read(int fd, MemorySegment buf, long count) {
        MemorySegment cs = CAPTURE.get();
        try {
            long n = (long) READ.invokeExact(cs, fd, buf, count);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** write(2): bytes written or -errno. */
    public static long write(int fd, MemorySegment buf, long count) {
        MemorySegment cs = CAPTURE.get();
        try {
            long n = (long) WRITE.invokeExact(cs, fd, buf, count);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** process_vm_readv(2): bytes moved or -errno. */
    public static long processVmReadv(
            int pid, MemorySegment localIov, long localCount, MemorySegment remoteIov, long remoteCount) {
        MemorySegment cs = CAPTURE.get();
        try {
            long n = (long) PROCESS_VM_READV.invokeExact(cs, pid, localIov, localCount, remoteIov, remoteCount, 0L);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** process_vm_writev(2): bytes moved or -errno. */
    public static long processVmWritev(
            int pid, MemorySegment localIov, long localCount, MemorySegment remoteIov, long remoteCount) {
        MemorySegment cs = CAPTURE.get();
        try {
            long n = (long) PROCESS_VM_WRITEV.invokeExact(cs, pid, localIov, localCount, remoteIov, remoteCount, 0L);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int socket(int domain, int type, int protocol) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try {
            int fd = (int) SOCKET.invokeExact(cs, domain, type, protocol);
            if (fd < 0) {
                throw new NativeException("socket(" + domain + ", " + type + ", " + protocol + ")", errno(cs));
            }
            return fd;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * bind(2) to an address ({@link io.metaroce.abi.IpAddr} int: IPv4 host order, or an IPv6
     * handle, then the socket must be AF_INET6) and port.
     */
    public static void bindInet4(int fd, int ipv4, int port) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            long size = sockaddrSize(ipv4);
            MemorySegment sa = arena.allocate(size, 4);
            writeSockaddr(sa, ipv4, port);
            int rc = (int) BIND.invokeExact(cs, fd, sa, (int) size);
            if (rc < 0) {
                throw new NativeException(
                        "bind(" + fd + ", " + io.metaroce.abi.IpAddr.toString(ipv4) + ":" + port + ")", errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void setsockoptInt(int fd, int level, int name, int value) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocateFrom(JAVA_INT, value);
            int rc = (int) SETSOCKOPT.invokeExact(cs, fd, level, name, v, 4);
            if (rc < 0) {
                throw new NativeException(
                        "setsockopt(" + fd + ", " + level + ", " + name + ", " + value + ")", errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** sendmmsg(2): messages sent or -errno. */
    public static int sendmmsg(int fd, MemorySegment msgvec, int vlen, int flags) {
        MemorySegment cs = CAPTURE.get();
        try {
            int n = (int) SENDMMSG.invokeExact(cs, fd, msgvec, vlen, flags);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** recvmmsg(2) without timeout: messages received or -errno. */
    public static int recvmmsg(int fd, MemorySegment msgvec, int vlen, int flags) {
        MemorySegment cs = CAPTURE.get();
        try {
            int n = (int) RECVMMSG.invokeExact(cs, fd, msgvec, vlen, flags, MemorySegment.NULL);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int epollCreate1(int flags) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try {
            int fd = (int) EPOLL_CREATE1.invokeExact(cs, flags);
            if (fd < 0) {
                throw new NativeException("epoll_create1(" + flags + ")", errno(cs));
            }
            return fd;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** epoll_ctl(2) with EPOLLIN and data = {@code data}. */
    public static void epollCtl(int epfd, int op, int fd, int events, long data) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ev = arena.allocate(EPOLL_EVENT_SIZE, 4);
            ev.set(JAVA_INT, 0, events);
            ev.set(JAVA_LONG.withByteAlignment(4), 4, data);
            int rc = (int) EPOLL_CTL.invokeExact(cs, epfd, op, fd, ev);
            if (rc < 0) {
                throw new NativeException("epoll_ctl(" + epfd + ", " + op + ", " + fd + ")", errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** epoll_wait(2): ready count or -errno. */
    public static int epollWait(int epfd, MemorySegment events, int maxEvents, int timeoutMs) {
        MemorySegment cs = CAPTURE.get();
        try {
            int n = (int) EPOLL_WAIT.invokeExact(cs, epfd, events, maxEvents, timeoutMs);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int getpid() {
        MemorySegment cs = CAPTURE.get();
        try {
            return (int) GETPID.invokeExact(cs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** getuid(2): the real user ID. */
    public static int getuid() {
        MemorySegment cs = CAPTURE.get();
        try {
            return (int) GETUID.invokeExact(cs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** getgid(2): the real group ID. */
    public static int getgid() {
        MemorySegment cs = CAPTURE.get();
        try {
            return (int) GETGID.invokeExact(cs);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** CAP_SYS_PTRACE: access to other processes' memory whatever their credentials. */
    public static final int CAP_SYS_PTRACE = 19;

    private static final int CAPABILITY_VERSION_3 = 0x20080522;

    /**
     * Removes capability {@code cap} from the calling thread's effective set (capget/capset on
     * this thread alone: the process's other threads keep theirs; the permitted set is not
     * touched). Returns true when the thread does not hold it in its effective set afterwards
     * (also when it never did).
     */
    public static boolean dropEffectiveCapability(int cap) {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment header = arena.allocate(8, 4);
            MemorySegment data = arena.allocate(24, 4); // two { effective, permitted, inheritable }
            header.set(JAVA_INT, 0, CAPABILITY_VERSION_3);
            header.set(JAVA_INT, 4, 0); // this thread
            if ((int) CAPGET.invokeExact(cs, header, data) != 0) {
                return false;
            }
            long word = 12L * (cap / 32);
            int bit = 1 << (cap % 32);
            int effective = data.get(JAVA_INT, word);
            if ((effective & bit) == 0) {
                return true;
            }
            data.set(JAVA_INT, word, effective & ~bit);
            header.set(JAVA_INT, 4, 0);
            return (int) CAPSET.invokeExact(cs, header, data) == 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** open(2) without O_CREAT; returns the fd. */
    public static int open(String path, int flags) throws NativeException {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(cs, arena.allocateFrom(path), flags);
            if (fd < 0) {
                throw new NativeException("open(" + path + ", 0x" + Integer.toHexString(flags) + ")", errno(cs));
            }
            return fd;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** preadv(2): bytes read or -errno. */
    public static long preadv(int fd, MemorySegment iov, int count, long offset) {
        MemorySegment cs = CAPTURE.get();
        try {
            long n = (long) PREADV.invokeExact(cs, fd, iov, count, offset);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** pwritev(2): bytes written or -errno. */
    public static long pwritev(int fd, MemorySegment iov, int count, long offset) {
        MemorySegment cs = CAPTURE.get();
        try {
            long n = (long) PWRITEV.invokeExact(cs, fd, iov, count, offset);
            return n < 0 ? -errno(cs) : n;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** getsockopt(2) of an int-sized option: its value, or -errno. */
    public static int getsockoptInt(int fd, int level, int name) {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            MemorySegment len = arena.allocateFrom(JAVA_INT, 4);
            int rc = (int) GETSOCKOPT.invokeExact(cs, fd, level, name, v, len);
            return rc < 0 ? -errno(cs) : v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** fcntl F_GET_SEALS (memfd_create(2)): the file's seals. */
    public static final int F_GET_SEALS = 1034;

    public static final int F_SEAL_SHRINK = 2;

    /**
     * pidfd_getfd(2): a copy, in this process, of descriptor {@code targetFd} of the process of
     * {@code pidfd} (the kernel's ptrace-attach check applies), or -errno.
     */
    public static int pidfdGetfd(int pidfd, int targetFd) {
        MemorySegment cs = CAPTURE.get();
        try {
            int fd = (int) PIDFD_GETFD.invokeExact(cs, pidfd, targetFd, 0);
            return fd < 0 ? -errno(cs) : fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** fcntl(fd, cmd, arg) for the commands that take an int (or none): the result, or -errno. */
    public static int fcntl(int fd, int cmd, int arg) {
        MemorySegment cs = CAPTURE.get();
        try {
            int r = (int) FCNTL_INT.invokeExact(cs, fd, cmd, arg);
            return r < 0 ? -errno(cs) : r;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** statfs f_type of tmpfs and shmem, memfds' file system (not hugetlbfs's). */
    public static final long TMPFS_MAGIC = 0x01021994L;

    /** fstatfs(2)'s f_type: the magic number of the file system of {@code fd}, or -errno. */
    public static long fileSystemType(int fd) {
        MemorySegment cs = CAPTURE.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(120, 8); // struct statfs on 64-bit Linux; f_type first
            int r = (int) FSTATFS.invokeExact(cs, fd, buf);
            return r < 0 ? -errno(cs) : buf.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The size of the file {@code fd} refers to (lseek to its end), or -errno. */
    public static long fileSize(int fd) {
        MemorySegment cs = CAPTURE.get();
        try {
            long r = (long) LSEEK.invokeExact(cs, fd, 0L, 2);
            return r < 0 ? -errno(cs) : r;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** pidfd_open(2): the pidfd, or -errno. */
    public static int pidfdOpen(int pid) {
        MemorySegment cs = CAPTURE.get();
        try {
            int fd = (int) PIDFD_OPEN.invokeExact(cs, pid, 0);
            return fd < 0 ? -errno(cs) : fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * True while the process of {@code pidfd} has not been reaped (signal 0 reaches a zombie too):
     * as long as this holds, its PID cannot have been given to another process.
     */
    public static boolean pidfdAlive(int pidfd) {
        MemorySegment cs = CAPTURE.get();
        try {
            return (int) PIDFD_SEND_SIGNAL.invokeExact(cs, pidfd, 0, MemorySegment.NULL, 0) == 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static final java.lang.foreign.ValueLayout.OfLong BE_LONG =
            JAVA_LONG.withByteAlignment(1).withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    /** The address family of an {@link io.metaroce.abi.IpAddr} int. */
    public static int family(int addr) {
        return io.metaroce.abi.IpAddr.isV6(addr) ? AF_INET6 : AF_INET;
    }

    /** The size of the sockaddr of an {@link io.metaroce.abi.IpAddr} int's family. */
    public static long sockaddrSize(int addr) {
        return io.metaroce.abi.IpAddr.isV6(addr) ? SOCKADDR_IN6_SIZE : SOCKADDR_IN_SIZE;
    }

    /** Writes a struct sockaddr_in or, for an IPv6 handle, a struct sockaddr_in6 (scope 0). */
    public static void writeSockaddr(MemorySegment sa, int addr, int port) {
        if (!io.metaroce.abi.IpAddr.isV6(addr)) {
            writeSockaddrIn(sa, addr, port);
            return;
        }
        sa.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 0, (short) AF_INET6);
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 2, (byte) (port >>> 8));
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 3, (byte) port);
        sa.set(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, 4, 0);
        sa.set(BE_LONG, 8, io.metaroce.abi.IpAddr.hi(addr));
        sa.set(BE_LONG, 16, io.metaroce.abi.IpAddr.lo(addr));
        sa.set(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, 24, 0);
    }

    /**
     * The address of a struct sockaddr_in or sockaddr_in6 as an {@link io.metaroce.abi.IpAddr}
     * int (an IPv6 source is entered in the table on first sight; 0 when it is full).
     */
    public static int sockaddrAddr(MemorySegment sa) {
        if (sa.get(java.lang.foreign.ValueLayout.JAVA_SHORT, 0) == AF_INET6) {
            return io.metaroce.abi.IpAddr.intern(sa.get(BE_LONG, 8), sa.get(BE_LONG, 16));
        }
        return sockaddrInAddr(sa);
    }

    /** Writes a struct sockaddr_in (host-order address and port in, network order out). */
    public static void writeSockaddrIn(MemorySegment sa, int ipv4, int port) {
        sa.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 0, (short) AF_INET);
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 2, (byte) (port >>> 8));
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 3, (byte) port);
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 4, (byte) (ipv4 >>> 24));
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 5, (byte) (ipv4 >>> 16));
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 6, (byte) (ipv4 >>> 8));
        sa.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 7, (byte) ipv4);
        sa.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, 8, 0L); // a constant layout: no lookup per call
    }

    /** Reads the host-order IPv4 address of a struct sockaddr_in. */
    public static int sockaddrInAddr(MemorySegment sa) {
        return ((sa.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 4) & 0xff) << 24)
                | ((sa.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 5) & 0xff) << 16)
                | ((sa.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 6) & 0xff) << 8)
                | (sa.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 7) & 0xff);
    }

    /** Reads the host-order port of a struct sockaddr_in. */
    public static int sockaddrInPort(MemorySegment sa) {
        return ((sa.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 2) & 0xff) << 8)
                | (sa.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 3) & 0xff);
    }
}
