package io.metaroce.nic.port.xdp;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The ring logic against a fake ring in plain memory, the test playing the kernel's side. */
class XskRingTest {
    private static final long PROD = 0;
    private static final long CONS = 64;
    private static final long FLAGS = 128;
    private static final long DESC = 192;
    private static final int SIZE = 8;

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment mem = arena.allocate(DESC + 16L * SIZE, 64);

    @AfterEach
    void close() {
        arena.close();
    }

    private XskRing ring(boolean producerSide, int entrySize) {
        return new XskRing(mem, PROD, CONS, FLAGS, DESC, SIZE, entrySize, producerSide);
    }

    private int kernelProd() {
        return mem.get(ValueLayout.JAVA_INT, PROD);
    }

    private int kernelCons() {
        return mem.get(ValueLayout.JAVA_INT, CONS);
    }

    private void setKernelProd(int v) {
        mem.set(ValueLayout.JAVA_INT, PROD, v);
    }

    private void setKernelCons(int v) {
        mem.set(ValueLayout.JAVA_INT, CONS, v);
    }

    @Test
    void producerFillsUpToSizeThenReportsFull() {
        XskRing fill = ring(true, XskRing.ADDR_SIZE);
        assertThat(fill.free(1)).isEqualTo(SIZE);
        long idx = fill.reserve(SIZE);
        assertThat(idx).isZero();
        for (int i = 0; i < SIZE; i++) {
            fill.setAddr(idx + i, 4096L * i);
        }
        assertThat(fill.reserve(1)).as("full").isEqualTo(-1);
        assertThat(kernelProd()).as("not visible before submit").isZero();
        fill.submit();
        assertThat(kernelProd()).isEqualTo(SIZE);
        // The kernel consumes three: three slots free again, seen only after a refresh.
        setKernelCons(3);
        assertThat(fill.reserve(4)).isEqualTo(-1);
        assertThat(fill.reserve(3)).isEqualTo(SIZE);
        assertThat(mem.get(ValueLayout.JAVA_LONG, DESC))
                .as("slot 0 before overwrite")
                .isZero();
    }

    @Test
    void producerWrapsAroundTheMask() {
        XskRing tx = ring(true, XskRing.XDP_DESC_SIZE);
        for (int round = 0; round < 5; round++) {
            long idx = tx.reserve(5);
            assertThat(idx).isEqualTo(5L * round);
            for (int i = 0; i < 5; i++) {
                tx.setDesc(idx + i, 1000L * round + i, 60 + i, 0);
            }
            tx.submit();
            // kernel side: read the five descriptors at masked slots, then consume them
            for (int i = 0; i < 5; i++) {
                int slot = (5 * round + i) & (SIZE - 1);
                assertThat(mem.get(ValueLayout.JAVA_LONG, DESC + 16L * slot)).isEqualTo(1000L * round + i);
                assertThat(mem.get(ValueLayout.JAVA_INT, DESC + 16L * slot + 8)).isEqualTo(60 + i);
            }
            setKernelCons(kernelCons() + 5);
        }
        assertThat(kernelProd()).isEqualTo(25);
    }

    @Test
    void indicesWrapAroundTheIntRange() {
        setKernelProd(-3); // 0xfffffffd: the free-running counter is about to overflow
        setKernelCons(-3);
        XskRing rx = ring(false, XskRing.XDP_DESC_SIZE);
        assertThat(rx.peek(4)).as("empty").isZero();
        for (int i = 0; i < 6; i++) {
            int slot = (-3 + i) & (SIZE - 1);
            mem.set(ValueLayout.JAVA_LONG, DESC + 16L * slot, 7000L + i);
            mem.set(ValueLayout.JAVA_INT, DESC + 16L * slot + 8, 100 + i);
        }
        setKernelProd(3);
        assertThat(rx.peek(4)).isEqualTo(4);
        int first = rx.peekIndex();
        for (int i = 0; i < 4; i++) {
            assertThat(rx.descAddr(first + i)).isEqualTo(7000L + i);
            assertThat(rx.descLen(first + i)).isEqualTo(100 + i);
        }
        rx.release(4);
        assertThat(kernelCons()).isEqualTo(1);
        assertThat(rx.peek(64)).isEqualTo(2);
        assertThat(rx.descAddr(rx.peekIndex() + 1)).isEqualTo(7005L);
        rx.release(2);
        assertThat(kernelCons()).isEqualTo(3);
        assertThat(rx.peek(64)).as("empty again").isZero();
    }

    @Test
    void consumerSeesNewEntriesOnlyAfterTheCacheRunsOut() {
        XskRing comp = ring(false, XskRing.ADDR_SIZE);
        mem.set(ValueLayout.JAVA_LONG, DESC, 42L);
        mem.set(ValueLayout.JAVA_LONG, DESC + 8, 43L);
        setKernelProd(1);
        assertThat(comp.peek(8)).isEqualTo(1);
        setKernelProd(2); // everything cached was taken: the next peek refreshes the index
        assertThat(comp.peek(8)).isEqualTo(1);
        assertThat(comp.addr(comp.peekIndex())).isEqualTo(43L);
        comp.release(2);
        assertThat(kernelCons()).isEqualTo(2);
    }

    @Test
    void producerStartsFromTheKernelsIndices() {
        setKernelProd(100);
        setKernelCons(98);
        XskRing fill = ring(true, XskRing.ADDR_SIZE);
        assertThat(fill.free(SIZE)).isEqualTo(SIZE - 2);
        assertThat(fill.reserve(SIZE - 2)).isEqualTo(100);
        assertThat(fill.reserve(1)).isEqualTo(-1);
    }

    @Test
    void needWakeupFollowsTheFlagsWord() {
        XskRing tx = ring(true, XskRing.XDP_DESC_SIZE);
        assertThat(tx.needsWakeup()).isFalse();
        mem.set(ValueLayout.JAVA_INT, FLAGS, XskRing.NEED_WAKEUP);
        assertThat(tx.needsWakeup()).isTrue();
        mem.set(ValueLayout.JAVA_INT, FLAGS, 0);
        assertThat(tx.needsWakeup()).isFalse();
    }
}
