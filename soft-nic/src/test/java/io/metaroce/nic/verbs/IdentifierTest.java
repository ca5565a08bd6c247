package io.metaroce.nic.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.model.Pd;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Keys carry random bits (issue 12): not guessable from one another, still found by key. */
class IdentifierTest {

    @Test
    void keysOfFollowingRegistrationsShareNoPattern() {
        MrTable t = new MrTable(1024, new java.util.Random(42));
        Pd pd = new Pd(1, 1);
        Set<Integer> highBits = new HashSet<>();
        Set<Integer> tags = new HashSet<>();
        Mr prev = null;
        for (int i = 0; i < 64; i++) {
            Mr mr = t.register(i, pd, 1, 0x10000, 4096, 0x10000, 0);
            assertThat(t.byRkey(mr.rkey)).isSameAs(mr);
            assertThat(t.byLkey(mr.lkey)).isSameAs(mr);
            assertThat(t.byRkey(mr.rkey ^ 1)).isNull();
            assertThat(t.byRkey(mr.rkey ^ (1 << 30)))
                    .as("the random high bits are checked")
                    .isNull();
            highBits.add(mr.rkey >>> 18);
            tags.add(mr.rkey & 0x7f);
            if (prev != null) {
                assertThat(mr.rkey - prev.rkey)
                        .as("not the previous key plus a step")
                        .isNotEqualTo(0x100);
            }
            prev = mr;
        }
        assertThat(highBits).as("14 random bits above a 10-bit index").hasSizeGreaterThan(50);
        assertThat(tags).as("7 random bits below it").hasSizeGreaterThan(30);
    }

    @Test
    void aFreedSlotNeverGivesTheSameKeyAgain() {
        MrTable t = new MrTable(1, new java.util.Random(43));
        Pd pd = new Pd(1, 1);
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            Mr mr = t.register(i, pd, 1, 0x10000, 4096, 0x10000, 0);
            seen.add(mr.rkey);
            t.remove(mr);
        }
        assertThat(seen).as("200 registrations of one slot").hasSizeGreaterThan(190);
    }

    @Test
    void qpnsAreRandomWithinTheir24Bits() throws Exception {
        java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(1);
        io.metaroce.nic.port.MemoryLink link = new io.metaroce.nic.port.MemoryLink(1, 0, 0, 0, 0, clock::get);
        io.metaroce.nic.port.MemoryLink.End end = link.end(io.metaroce.nic.sys.Inet4.parse("198.18.0.1"), 4793);
        link.connect(end, link.end(io.metaroce.nic.sys.Inet4.parse("198.18.0.2"), 4793));
        try (TestNode node = new TestNode(end, 4793, clock::get)) {
            node.service.identifierRandom(new java.util.Random(44));
            assertThat(node.hello().status()).isZero();
            int pd = node.allocPd();
            TestNode.CqHandles cq = node.createCq(16, io.metaroce.abi.AbiConstants.NO_HANDLE);
            Set<Integer> slots = new HashSet<>();
            int prev = -1;
            for (int i = 0; i < 8; i++) {
                int qpn = node.createQp(pd, cq.handle(), cq.handle(), 4, 1, 0).qpn();
                assertThat(qpn).isBetween(1 << io.metaroce.nic.engine.EngineAgent.QP_INDEX_BITS, (1 << 24) - 1);
                assertThat(qpn).isNotEqualTo(prev + 1);
                slots.add(qpn & (io.metaroce.nic.engine.EngineAgent.MAX_QP - 1));
                prev = qpn;
            }
            assertThat(slots).as("random slots").hasSize(8).doesNotContain(0, 1, 2);
        }
    }
}
