package io.metaroce.nic.port.xdp;

import io.metaroce.nic.sys.NativeException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The steering program ({@code src/main/bpf/mrce_steer.bpf.c}, packaged as the class-path resource
 * {@code bpf/mrce_steer.bpf.o}) loaded, configured with the UDP port range and the served family, and attached to one
 * interface. A program of the same name left attached by a daemon that was killed is detached
 * first; any other XDP program on the interface is left alone and the port refuses to start.
 */
final class XdpProgram implements AutoCloseable {
    static final String PROG_NAME = "mrce_steer";
    private static final String RESOURCE = "bpf/mrce_steer.bpf.o";
    private static final Logger LOG = LoggerFactory.getLogger(XdpProgram.class);

    private final MemorySegment obj;
    private final int ifindex;
    private final int modeFlag;
    private final int progFd;
    private final int xsksFd;
    private boolean attached;

    private XdpProgram(MemorySegment obj, int ifindex, int modeFlag) throws NativeException {
        this.obj = obj;
        this.ifindex = ifindex;
        this.modeFlag = modeFlag;
        this.progFd = LibBpf.programFd(obj, PROG_NAME);
        this.xsksFd = LibBpf.mapFd(obj, "mrce_xsks");
    }

    /** Families mrce_cfg.families steers (the program's MRCE_STEER_IPV4 / _IPV6). */
    static final int STEER_IPV4 = 1;

    static final int STEER_IPV6 = 2;

    /**
     * Loads the program, steering UDP ports {@code portLo..portHi} of one family (IPv6 when
     * {@code ipv6}, else IPv4; the other family passes to the kernel), and attaches it.
     */
    static XdpProgram attach(String ifname, int ifindex, boolean nativeMode, int portLo, int portHi, boolean ipv6)
            throws IOException {
        int modeFlag = nativeMode ? LibBpf.XDP_FLAGS_DRV_MODE : LibBpf.XDP_FLAGS_SKB_MODE;
        removeStale(ifname, ifindex);
        Path tmp = Files.createTempFile("mrce_steer", ".bpf.o");
        MemorySegment obj;
        try {
            try (InputStream in = XdpProgram.class.getClassLoader().getResourceAsStream(RESOURCE)) {
                if (in == null) {
                    throw new IOException(
                            "class-path resource " + RESOURCE + " missing (soft-nic built without clang?)");
                }
                Files.copy(in, tmp, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            obj = LibBpf.openAndLoad(tmp.toString());
        } finally {
            Files.deleteIfExists(tmp);
        }
        XdpProgram p;
        try {
            p = new XdpProgram(obj, ifindex, modeFlag);
            int cfgFd = LibBpf.mapFd(obj, "mrce_cfg");
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cfg = a.allocate(8, 4);
                cfg.set(ValueLayout.JAVA_SHORT, 0, (short) portLo);
                cfg.set(ValueLayout.JAVA_SHORT, 2, (short) portHi);
                cfg.set(ValueLayout.JAVA_INT, 4, ipv6 ? STEER_IPV6 : STEER_IPV4);
                LibBpf.mapUpdate(cfgFd, 0, cfg, "mrce_cfg");
            }
            LibBpf.xdpAttach(ifindex, p.progFd, modeFlag | LibBpf.XDP_FLAGS_UPDATE_IF_NOEXIST);
            p.attached = true;
        } catch (NativeException e) {
            LibBpf.close(obj);
            throw e;
        }
        return p;
    }

    /** Detaches a {@value #PROG_NAME} left by a killed daemon; refuses to touch anyone else's. */
    private static void removeStale(String ifname, int ifindex) throws IOException {
        int[] modes = {LibBpf.XDP_FLAGS_SKB_MODE, LibBpf.XDP_FLAGS_DRV_MODE};
        for (int mode : modes) {
            int id = LibBpf.xdpQueryId(ifindex, mode);
            if (id == 0) {
                continue;
            }
            String name = LibBpf.programName(id);
            if (!PROG_NAME.equals(name)) {
                throw new IOException(ifname + " already has XDP program '" + name + "' (id " + id
                        + ") attached; detach it first (ip link set dev " + ifname + " xdp off)");
            }
            LOG.warn(
                    "replacing stale XDP program {} (id {}) on {}, left by a daemon that did not exit",
                    name,
                    id,
                    ifname);
            int rc = LibBpf.xdpDetach(ifindex, mode);
            if (rc < 0) {
                throw new NativeException("bpf_xdp_detach(" + ifname + ")", -rc);
            }
        }
    }

    /** Steers frames of RX queue {@code queue} to the AF_XDP socket {@code xskFd}. */
    void register(int queue, int xskFd) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            LibBpf.mapUpdate(xsksFd, queue, a.allocateFrom(ValueLayout.JAVA_INT, xskFd), "mrce_xsks");
        }
    }

    @Override
    public void close() {
        if (attached) {
            attached = false;
            try {
                int id = LibBpf.xdpQueryId(ifindex, modeFlag);
                if (id != 0 && PROG_NAME.equals(LibBpf.programName(id))) {
                    LibBpf.xdpDetach(ifindex, modeFlag);
                }
            } catch (NativeException e) {
                LOG.warn("detaching the XDP program: {}", e.getMessage());
            }
        }
        LibBpf.close(obj);
    }
}
