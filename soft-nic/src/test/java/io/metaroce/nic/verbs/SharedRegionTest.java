package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.Errno;
import io.metaroce.abi.ShareMrReqDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.dma.DmaBatch;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * SHARE_MR (control-protocol.md, "Shared regions"): the daemon maps the memfd an application backs
 * a region with and copies through that mapping. The application is this test's own process, so
 * its memfds and the daemon's mappings of them are pages of one file seen at two addresses.
 */
class SharedRegionTest {
    private static final int MFD_ALLOW_SEALING = 2;
    private static final int F_ADD_SEALS = 1033;
    private static final long PAGE = 4096;

    private final AtomicLong clock = new AtomicLong();
    private final List<Integer> fds = new ArrayList<>();
    private final List<MemorySegment> maps = new ArrayList<>();
    private TestNode node;
    private Arena arena;

    @BeforeEach
    void setUp() throws Exception {
        node = TestNode.onLink(clock::get);
        arena = Arena.ofShared();
        node.hello();
    }

    @AfterEach
    void tearDown() throws Exception {
        node.close();
        arena.close();
        for (MemorySegment m : maps) {
            LibC.munmap(m);
        }
        for (int fd : fds) {
            LibC.close(fd);
        }
    }

    /** A memfd of {@code bytes}, sealed against shrinking when {@code sealed}, mapped here ("the application"). */
    private MemorySegment memfd(long bytes, boolean sealed, int[] fdOut) throws Exception {
        int fd = LibC.memfdCreate("shared-region-test", LibC.MFD_CLOEXEC | MFD_ALLOW_SEALING);
        fds.add(fd);
        LibC.ftruncate(fd, bytes);
        if (sealed) {
            assertThat(LibC.fcntl(fd, F_ADD_SEALS, LibC.F_SEAL_SHRINK)).isZero();
        }
        MemorySegment m = LibC.mmap(bytes, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, fd, 0);
        maps.add(m);
        fdOut[0] = fd;
        return m;
    }

    private int share(int handle, int fd, long base) {
        ByteBuffer b = TestNode.req(ShareMrReqDescriptor.SIZE);
        b.putInt(ShareMrReqDescriptor.OFF_HANDLE, handle);
        b.putInt(ShareMrReqDescriptor.OFF_FD, fd);
        b.putLong(ShareMrReqDescriptor.OFF_BASE, base);
        return node.call(MRCE_OP_SHARE_MR, b).status();
    }

    private static final int RW = Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ;

    @Test
    void copiesInsideASharedRegionGoThroughTheDaemonsMapping() throws Exception {
        int[] fd = new int[1];
        MemorySegment app = memfd(4 * PAGE, true, fd);
        int pd = node.allocPd();
        // the region starts inside the first page; the file's offset 0 is that page
        int[] mr = node.regMr(pd, app.asSlice(100, 3 * PAGE), RW);
        assertThat(share(mr[0], fd[0], app.address())).isZero();
        Mr found = node.engine.datapath().mrs.byLkey(mr[1]);
        MemorySegment local = arena.allocate(PAGE, 64);
        try (DmaBatch gather = new DmaBatch(false, 16);
                DmaBatch scatter = new DmaBatch(true, 16)) {
            for (int i = 0; i < 256; i++) {
                app.set(ValueLayout.JAVA_BYTE, 200 + i, (byte) (i * 7 + 1));
            }
            gather.begin(found.pid);
            assertThat(gather.add(local.address(), app.address() + 200, 256, 5)).isTrue();
            assertThat(gather.sharedCopies())
                    .as("copied at once, through the mapping")
                    .isEqualTo(1);
            assertThat(gather.flush()).isZero();
            assertThat(gather.calls()).as("no system call").isZero();
            for (int i = 0; i < 256; i++) {
                assertThat(local.get(ValueLayout.JAVA_BYTE, i)).isEqualTo((byte) (i * 7 + 1));
            }
            // to the application: a shared entry, one that runs past the file's pages (the
            // descriptor's copy), and a refused one, in one batch
            for (int i = 0; i < 512; i++) {
                local.set(ValueLayout.JAVA_BYTE, i, (byte) (255 - i));
            }
            MemorySegment plain = arena.allocate(PAGE, 64);
            scatter.begin(found.pid);
            scatter.add(local.address(), app.address() + 1000, 300, 0);
            scatter.add(local.address(), plain.address(), 64, 1);
            scatter.addFailed(2);
            scatter.add(local.address() + 300, app.address() + 1300, 200, 3);
            assertThat(scatter.flush()).isEqualTo(1);
            assertThat(scatter.failed(0)).isFalse();
            assertThat(scatter.failed(1)).isFalse();
            assertThat(scatter.failed(2)).isTrue();
            assertThat(scatter.failed(3)).isFalse();
            assertThat(scatter.sharedCopies()).isEqualTo(2);
            assertThat(scatter.calls()).as("only the plain entry made a call").isEqualTo(1);
            for (int i = 0; i < 500; i++) {
                assertThat(app.get(ValueLayout.JAVA_BYTE, 1000 + i)).isEqualTo((byte) (255 - i));
            }
            for (int i = 0; i < 64; i++) {
                assertThat(plain.get(ValueLayout.JAVA_BYTE, i)).isEqualTo((byte) (255 - i));
            }
            // a range that leaves the file's pages is no shared copy
            scatter.begin(found.pid);
            scatter.add(local.address(), app.address() + 4 * PAGE - 16, 8, 0);
            scatter.add(local.address(), app.address() - 8, 16, 1);
            assertThat(scatter.sharedCopies()).isEqualTo(3);
            // deregistered: the daemon's mapping is gone, copies go back to the system calls
            assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(mr[0])).status())
                    .isZero();
            gather.begin(found.pid);
            gather.add(local.address(), app.address() + 200, 256, 0);
            assertThat(gather.sharedCopies()).isEqualTo(1);
            assertThat(gather.flush()).isZero();
            assertThat(gather.calls()).isEqualTo(1);
        }
    }

    @Test
    void refusesWhatCouldFaultTheDaemonOrIsNotTheCallers() throws Exception {
        int pd = node.allocPd();
        int[] fd = new int[1];
        MemorySegment app = memfd(2 * PAGE, true, fd);
        int[] mr = node.regMr(pd, app, RW);
        assertThat(share(mr[0] + 1000, fd[0], app.address()))
                .as("no such region")
                .isEqualTo(Errno.ENOENT);
        assertThat(share(mr[0], -1, app.address())).isEqualTo(Errno.EBADF);
        assertThat(share(mr[0], 1 << 20, app.address()))
                .as("no such descriptor")
                .isEqualTo(Errno.EBADF);
        assertThat(share(mr[0], fd[0], app.address() + 8))
                .as("base not page-aligned")
                .isEqualTo(Errno.EINVAL);
        assertThat(share(mr[0], fd[0], app.address() + PAGE))
                .as("base above the region")
                .isEqualTo(Errno.EINVAL);
        int[] shortFd = new int[1];
        memfd(PAGE, true, shortFd);
        assertThat(share(mr[0], shortFd[0], app.address()))
                .as("file shorter than the region")
                .isEqualTo(Errno.EINVAL);
        int[] unsealed = new int[1];
        memfd(2 * PAGE, false, unsealed);
        assertThat(share(mr[0], unsealed[0], app.address()))
                .as("a file that may shrink")
                .isEqualTo(Errno.EINVAL);
        int other = notAMemfd();
        assertThat(share(mr[0], other, app.address())).as("not a memfd").isEqualTo(Errno.EINVAL);
        assertThat(LibC.fileSystemType(fd[0])).as("a memfd is shmem").isEqualTo(LibC.TMPFS_MAGIC);
        assertThat(LibC.fileSystemType(other)).isNotEqualTo(LibC.TMPFS_MAGIC);
        MemorySegment odpBuf = arena.allocate(PAGE, PAGE);
        int[] odp = node.regMr(pd, odpBuf, RW | Ibv.ACCESS_ON_DEMAND);
        assertThat(share(odp[0], fd[0], odpBuf.address()))
                .as("on-demand paging")
                .isEqualTo(Errno.EINVAL);
        assertThat(share(mr[0], fd[0], app.address())).isZero();
        assertThat(share(mr[0], fd[0], app.address())).as("shared already").isEqualTo(Errno.EBUSY);
        assertThat(node.call(MRCE_OP_DEREG_MR, TestNode.handleReq(mr[0])).status())
                .isZero();
    }

    /** A descriptor of a file that is no memfd and not on shmem (a procfs file). */
    private int notAMemfd() throws Exception {
        int fd = LibC.open("/proc/self/stat", LibC.O_CLOEXEC);
        fds.add(fd);
        return fd;
    }
}
