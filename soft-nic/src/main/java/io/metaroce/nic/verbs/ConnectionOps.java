package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static io.metaroce.nic.verbs.OpSupport.fail;
import static io.metaroce.nic.verbs.OpSupport.resp;

import io.metaroce.abi.AsyncEventDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.HelloReqDescriptor;
import io.metaroce.abi.HelloRespDescriptor;
import io.metaroce.abi.IpAddr;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.dma.ProcessMemory;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.model.AsyncEventQueue;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection's own ops: HELLO (binds the session to its process, hands out the doorbell and
 * async eventfds and the device's attributes) and GET_ASYNC_EVENT.
 */
final class ConnectionOps {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionOps.class);

    private final EngineAgent engine;
    private final NetInfo net;
    private final int udpPort;
    private final Limits limits;
    private final UserUsage usage;
    private final ProcessWatcher watcher;
    private final int daemonPid = LibC.getpid();
    /** The device name HELLO gives. */
    private final java.util.function.Supplier<String> devName;
    /** The carrier now (see VerbsService#currentLink). */
    private final java.util.function.BooleanSupplier currentLink;

    ConnectionOps(
            EngineAgent engine,
            NetInfo net,
            int udpPort,
            Limits limits,
            UserUsage usage,
            ProcessWatcher watcher,
            java.util.function.Supplier<String> devName,
            java.util.function.BooleanSupplier currentLink) {
        this.engine = engine;
        this.net = net;
        this.udpPort = udpPort;
        this.limits = limits;
        this.usage = usage;
        this.watcher = watcher;
        this.devName = devName;
        this.currentLink = currentLink;
    }

    // ---- HELLO ----

    /**
     * Binds the session to its process: the pidfd the kernel recorded at connect
     * ({@code SO_PEERPIDFD}; {@code pidfd_open} of the credentials' PID where the kernel lacks it),
     * and that process's address space (see {@link ProcessMemory}), with its credentials at connect.
     */
    private static ProcessMemory bindProcess(SessionObjects s) throws NativeException {
        int sock = s.session.socketFd();
        int pidFd = sock >= 0 ? LibC.getsockoptInt(sock, LibC.SOL_SOCKET, LibC.SO_PEERPIDFD) : -Errno.ENOSYS;
        if (pidFd < 0) {
            if (sock >= 0) {
                LOG.warn(
                        "session {}: no SO_PEERPIDFD (errno {}), binding pid {} by number",
                        s.session.id(),
                        -pidFd,
                        s.pid);
            }
            pidFd = LibC.pidfdOpen(s.pid);
            if (pidFd < 0) {
                throw new NativeException("pidfd_open(" + s.pid + ")", -pidFd);
            }
        }
        return ProcessMemory.open(s.pid, pidFd, s.session.uid(), s.session.gid());
    }

    void hello(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        int version = p.getInt((int) HelloReqDescriptor.OFF_ABI_VERSION);
        if (version != MRCE_ABI_VERSION) {
            fail(s, MRCE_OP_HELLO, seq, Errno.EPROTO);
            return;
        }
        if (s.hello) {
            fail(s, MRCE_OP_HELLO, seq, Errno.EEXIST);
            return;
        }
        if (!usage.charge(s, UserQuota.CONNECTIONS, 1)) {
            fail(s, MRCE_OP_HELLO, seq, Errno.ENOMEM);
            return;
        }
        int flags = p.getInt((int) HelloReqDescriptor.OFF_FLAGS);
        if ((flags & ~MRCE_HELLO_DOORBELL_PAGE) != 0) {
            usage.discharge(s, UserQuota.CONNECTIONS, 1);
            fail(s, MRCE_OP_HELLO, seq, Errno.EINVAL);
            return;
        }
        try {
            helloCharged(s, seq, (flags & MRCE_HELLO_DOORBELL_PAGE) != 0);
        } finally {
            if (!s.hello) {
                usage.discharge(s, UserQuota.CONNECTIONS, 1);
            }
        }
    }

    /** HELLO once the user's connection quota took it; {@code s.hello} set only on success. */
    private void helloCharged(SessionObjects s, int seq, boolean withPage) throws NativeException {
        ProcessMemory memory = bindProcess(s);
        int doorbell;
        try {
            doorbell = LibC.eventfd(0, LibC.EFD_NONBLOCK | LibC.EFD_CLOEXEC);
        } catch (NativeException e) {
            memory.close();
            throw e;
        }
        int async;
        try {
            // Blocking semaphore eventfd: ibv_get_async_event reads it once per event.
            async = LibC.eventfd(0, LibC.EFD_SEMAPHORE | LibC.EFD_CLOEXEC);
            engine.watch(doorbell);
        } catch (NativeException e) {
            LibC.close(doorbell);
            memory.close();
            throw e;
        }
        SharedMemory page = null;
        if (withPage) {
            page = SharedMemory.create("mrce-doorbell", MRCE_DB_PAGE_SIZE, () -> {
                engine.unwatch(doorbell);
                LibC.close(doorbell);
                LibC.close(async);
                memory.close();
            });
            MemorySegment bits = page.map();
            // the engine's list of pages is the engine thread's: added by a command, before any
            // QP of this session (created by later commands) can ring
            while (!engine.submit(() -> engine.addDoorbellPage(bits))) {
                Thread.onSpinWait();
            }
            s.doorbellPage = bits;
        }
        s.memory = memory;
        s.space = memory.id();
        try {
            watcher.watch(memory.pidFd(), s.session.id());
        } catch (NativeException e) {
            LOG.warn("session {} (pid {}): exit not watched: {}", s.session.id(), s.pid, e.getMessage());
        }
        s.doorbellFd = doorbell;
        s.asyncFd = async;
        s.events = new AsyncEventQueue(async, MRCE_MAX_ASYNC_EVENTS);
        s.hello = true;
        ByteBuffer r = resp(HelloRespDescriptor.SIZE);
        r.putInt((int) HelloRespDescriptor.OFF_ABI_VERSION, MRCE_ABI_VERSION);
        r.putInt((int) HelloRespDescriptor.OFF_DAEMON_PID, daemonPid);
        byte[] gid = IpAddr.gid(net.ipv4());
        r.put((int) HelloRespDescriptor.OFF_GID, gid);
        putString(r, (int) HelloRespDescriptor.OFF_DEV_NAME, devName.get());
        putString(r, (int) HelloRespDescriptor.OFF_IFNAME, net.ifname());
        // node GUID, network order: 02:4d:52:ff: and the last 4 bytes of the GID (the IPv4 address)
        byte[] guid = {0x02, 0x4d, 0x52, (byte) 0xff, gid[12], gid[13], gid[14], gid[15]};
        r.put((int) HelloRespDescriptor.OFF_NODE_GUID, guid);
        r.putInt((int) HelloRespDescriptor.OFF_IF_MTU, net.mtu());
        r.putInt((int) HelloRespDescriptor.OFF_ACTIVE_MTU, VerbsService.activeMtu(net.mtu()));
        r.putInt((int) HelloRespDescriptor.OFF_MAX_MTU, Ibv.MTU_4096);
        r.putInt((int) HelloRespDescriptor.OFF_UDP_PORT, udpPort);
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP, limits.maxQp());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP_WR, limits.maxQpWr());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SGE, limits.maxSge());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_CQ, limits.maxCq());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_CQE, limits.maxCqe());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_MR, limits.maxMr());
        r.putLong((int) HelloRespDescriptor.OFF_MAX_MR_SIZE, limits.maxMrSize());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_PD, limits.maxPd());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_INLINE, limits.maxInline());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP_RD_ATOM, limits.maxQpRdAtom());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_COMP_CHANNEL, limits.maxCompChannel());
        r.putInt((int) HelloRespDescriptor.OFF_VENDOR_ID, VerbsService.VENDOR_ID);
        r.putInt((int) HelloRespDescriptor.OFF_VENDOR_PART_ID, 1);
        r.putInt((int) HelloRespDescriptor.OFF_HW_VER, 1);
        // The carrier now, not as of the last once-a-second check: an application started right
        // after its link came up must not see the port DOWN (perftest refuses to run then).
        r.putInt((int) HelloRespDescriptor.OFF_LINK_UP, currentLink.getAsBoolean() ? 1 : 0);
        r.putInt((int) HelloRespDescriptor.OFF_SPEED_MBPS, net.speedMbps());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SRQ, limits.maxSrq());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SRQ_WR, limits.maxSrqWr());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SRQ_SGE, limits.maxSrqSge());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP_INIT_RD_ATOM, limits.maxQpInitRdAtom());
        r.putInt((int) HelloRespDescriptor.OFF_ATOMIC_CAP, limits.atomicCap());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_AH, limits.maxAh());
        if (page != null) {
            s.session.respond(MRCE_OP_HELLO, seq, 0, r, doorbell, async, page.fd());
            LibC.close(page.fd()); // sent (respond duplicates it); the mapping stays
        } else {
            s.session.respond(MRCE_OP_HELLO, seq, 0, r, doorbell, async);
        }
    }

    private static void putString(ByteBuffer r, int off, String v) {
        byte[] b = v.getBytes(StandardCharsets.US_ASCII);
        r.put(off, b, 0, Math.min(b.length, 15));
    }

    // ---- async events ----

    static void getAsyncEvent(SessionObjects s, int seq) {
        long e = s.events.poll();
        if (e < 0) {
            fail(s, MRCE_OP_GET_ASYNC_EVENT, seq, Errno.EAGAIN);
            return;
        }
        ByteBuffer r = resp(AsyncEventDescriptor.SIZE);
        r.putInt((int) AsyncEventDescriptor.OFF_EVENT_TYPE, (int) (e >>> 32));
        r.putInt((int) AsyncEventDescriptor.OFF_ELEMENT, (int) e);
        s.session.respond(MRCE_OP_GET_ASYNC_EVENT, seq, 0, r);
    }
}
