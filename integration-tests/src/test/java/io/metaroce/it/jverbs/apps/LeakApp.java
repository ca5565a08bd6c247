package io.metaroce.it.jverbs.apps;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletions;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * N post/poll cycles (a SEND from QP a, a RECV on QP b, both completions polled, a window of
 * requests in flight) on a loopback pair; prints VmRSS after a warm-up and at the end, and the
 * bytes checked, as {@code "rss warm=KB end=KB malloc warm=B end=B cycles=N checked=N"}
 * ({@code malloc}: bytes in use by malloc, from {@code mallinfo2()}: where a native leak of the
 * binding, libibverbs or the provider would show). Nothing native is allocated per operation, so
 * both must stay flat. Run it with a fixed, pre-touched heap so the RSS does not move with GC.
 *
 * <p>args: cycles warmup
 */
public final class LeakApp {

    private LeakApp() {}

    public static void main(String[] args) throws IOException {
        long cycles = Long.parseLong(args[0]);
        long warmup = Long.parseLong(args[1]);
        int window = 32;
        int size = 64;
        try (LoopbackPair p = new LoopbackPair(window * 2, 0);
                Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(size * window, 64);
            MemorySegment dst = arena.allocate(size * window, 64);
            try (MemoryRegion smr = p.pd.register(src, Access.LOCAL_WRITE);
                    MemoryRegion dmr = p.pd.register(dst, Access.LOCAL_WRITE);
                    SendWorkRequest send =
                            new SendWorkRequest(1).send().signaled(true).sge(smr, 0, size);
                    RecvWorkRequest recv = new RecvWorkRequest(1).sge(dmr, 0, size);
                    WorkCompletions wcs = new WorkCompletions(16)) {
                long sent = 0;
                long sendDone = 0;
                long received = 0;
                long checked = 0;
                long warmRss = -1;
                long warmMalloc = -1;
                for (int i = 0; i < window; i++) {
                    p.b.postRecv(recv.wrId(i).sge(dmr, (long) i * size, size));
                }
                long deadline = System.nanoTime() + 600_000_000_000L;
                while (received < cycles) {
                    while (sent < cycles && sent - received < window && sent - sendDone < window) {
                        int slot = (int) (sent % window);
                        src.set(java.lang.foreign.ValueLayout.JAVA_LONG, (long) slot * size, sent);
                        p.a.postSend(send.wrId(sent).sge(smr, (long) slot * size, size));
                        sent++;
                    }
                    int n = p.cqA.poll(wcs);
                    for (int i = 0; i < n; i++) {
                        wcs.get(i).check();
                        sendDone++;
                    }
                    n = p.cqB.poll(wcs);
                    for (int i = 0; i < n; i++) {
                        WorkCompletion wc = wcs.get(i).check();
                        int slot = (int) wc.wrId();
                        long v = dst.get(java.lang.foreign.ValueLayout.JAVA_LONG, (long) slot * size);
                        if (v != received || wc.byteLength() != size) {
                            throw new IllegalStateException(
                                    "message " + received + " carried " + v + " (" + wc.byteLength() + " bytes)");
                        }
                        checked++;
                        received++;
                        p.b.postRecv(recv.wrId(slot).sge(dmr, (long) slot * size, size));
                        if (received == warmup) {
                            warmRss = rssKb();
                            warmMalloc = mallocInUse();
                        }
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("stuck at " + received + " of " + cycles);
                    }
                }
                while (sendDone < sent) {
                    int n = p.cqA.poll(wcs);
                    for (int i = 0; i < n; i++) {
                        wcs.get(i).check();
                        sendDone++;
                    }
                }
                System.out.println("rss warm=" + warmRss + " end=" + rssKb() + " malloc warm=" + warmMalloc + " end="
                        + mallocInUse() + " cycles=" + received + " checked=" + checked);
            }
        }
    }

    private static final java.lang.invoke.MethodHandle MALLINFO2 = java.lang.foreign.Linker.nativeLinker()
            .downcallHandle(
                    java.lang.foreign.Linker.nativeLinker()
                            .defaultLookup()
                            .find("mallinfo2")
                            .orElseThrow(),
                    java.lang.foreign.FunctionDescriptor.of(
                            java.lang.foreign.MemoryLayout.structLayout(java.lang.foreign.MemoryLayout.sequenceLayout(
                                    10, java.lang.foreign.ValueLayout.JAVA_LONG))));

    /** struct mallinfo2 { arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost }. */
    static long mallocInUse() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = (MemorySegment) MALLINFO2.invokeExact((java.lang.foreign.SegmentAllocator) a);
            long hblkhd = m.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 4);
            long uordblks = m.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 7);
            return hblkhd + uordblks;
        } catch (Throwable t) {
            throw new IllegalStateException("mallinfo2", t);
        }
    }

    static long rssKb() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }
}
