package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.NO_HANDLE;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.CreateCqReqDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.sys.Inet4;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Per-user quotas (issue 12): one user, over two connections, exhausts its QPs, MRs, registered
 * bytes and CQ entries, then its connections, PDs, CQs and SRQs, and gets ENOMEM; another user is
 * not affected; what a user frees (or a closed connection held) can be taken again.
 */
class UserQuotaTest {

    @Test
    void aUserRunsOutOfItsQuotaAndOthersDoNot() throws Exception {
        AtomicLong clock = new AtomicLong(1);
        io.metaroce.nic.port.MemoryLink link = new io.metaroce.nic.port.MemoryLink(1, 0, 0, 0, 0, clock::get);
        io.metaroce.nic.port.MemoryLink.End end = link.end(Inet4.parse("198.18.0.1"), 4793);
        link.connect(end, link.end(Inet4.parse("198.18.0.2"), 4793));
        try (TestNode daemon = new TestNode(end, 4793, clock::get);
                Arena arena = Arena.ofConfined()) {
            daemon.service.userQuota(new UserQuota(2, 2, 64 * 1024, 512));
            TestNode alice = daemon.connectionOf(1000);
            TestNode alice2 = daemon.connectionOf(1000);
            TestNode bob = daemon.connectionOf(1001);
            for (TestNode n : new TestNode[] {alice, alice2, bob}) {
                assertThat(n.hello().status()).isZero();
            }
            MemorySegment buf = arena.allocate(128 * 1024, 4096);
            int pdA = alice.allocPd();
            int pdA2 = alice2.allocPd();
            int pdB = bob.allocPd();

            // CQ entries: 256 + 256 of 512, then nothing more for alice, on either connection
            TestNode.CqHandles cqA = alice.createCq(256, NO_HANDLE);
            int cqA2 = alice2.createCq(256, NO_HANDLE).handle();
            assertThat(createCqRaw(alice2, 1).status()).isEqualTo(Errno.ENOMEM);
            TestNode.CqHandles cqB = bob.createCq(512, NO_HANDLE);

            // QPs: two across both connections
            alice.createQp(pdA, cqA.handle(), cqA.handle(), 4, 1, 0);
            alice2.createQp(pdA2, cqA2, cqA2, 4, 1, 0);
            assertThat(alice.createQpRaw(pdA, cqA.handle(), cqA.handle(), Ibv.QPT_RC, 4, 1, 0)
                            .status())
                    .isEqualTo(Errno.ENOMEM);
            bob.createQp(pdB, cqB.handle(), cqB.handle(), 4, 1, 0);
            bob.createQp(pdB, cqB.handle(), cqB.handle(), 4, 1, 0);

            // MRs: bytes first (64 KiB), then the count (2)
            assertThat(alice.regMrRaw(pdA, buf.address(), 80 * 1024, Ibv.ACCESS_LOCAL_WRITE)
                            .status())
                    .as("80 KiB > 64 KiB")
                    .isEqualTo(Errno.ENOMEM);
            int[] mr1 = alice.regMr(pdA, buf.asSlice(0, 32 * 1024), Ibv.ACCESS_LOCAL_WRITE);
            alice2.regMr(pdA2, buf.asSlice(0, 16 * 1024), Ibv.ACCESS_LOCAL_WRITE);
            assertThat(alice2.regMrRaw(pdA2, buf.address(), 4096, Ibv.ACCESS_LOCAL_WRITE)
                            .status())
                    .as("a third MR")
                    .isEqualTo(Errno.ENOMEM);
            assertThat(bob.regMrRaw(pdB, buf.address(), 64 * 1024, Ibv.ACCESS_LOCAL_WRITE)
                            .status())
                    .as("bob's own 64 KiB, whatever alice holds")
                    .isZero();
            assertThat(bob.regMrRaw(pdB, buf.address(), 4096, Ibv.ACCESS_LOCAL_WRITE)
                            .status())
                    .as("bob's quota is his own too")
                    .isEqualTo(Errno.ENOMEM);

            // freeing gives it back: deregistering one MR, closing a connection
            assertThat(alice.call(AbiConstants.MRCE_OP_DEREG_MR, TestNode.handleReq(mr1[0]))
                            .status())
                    .isZero();
            assertThat(alice.regMrRaw(pdA, buf.address(), 48 * 1024, Ibv.ACCESS_LOCAL_WRITE)
                            .status())
                    .as("16 + 48 KiB")
                    .isZero();
            daemon.service.onSessionClosed(alice2.session);
            for (int i = 0; i < 10; i++) {
                daemon.pump();
            }
            assertThat(alice.createQpRaw(pdA, cqA.handle(), cqA.handle(), Ibv.QPT_RC, 4, 1, 0)
                            .status())
                    .as("alice2's QP went with its connection")
                    .isZero();
            assertThat(createCqRaw(alice, 256).status()).isZero();
            daemon.service.onSessionClosed(alice.session);
            daemon.service.onSessionClosed(bob.session);
        }
    }

    /**
     * Connections, PDs, CQs and SRQs counted per user: alice's third connection's HELLO, third PD,
     * third CQ and second SRQ answer ENOMEM while bob, at the same counts, is served; what alice
     * frees or closes is hers again.
     */
    @Test
    void connectionsPdsCqsAndSrqsAreCountedPerUser() throws Exception {
        AtomicLong clock = new AtomicLong(1);
        io.metaroce.nic.port.MemoryLink link = new io.metaroce.nic.port.MemoryLink(1, 0, 0, 0, 0, clock::get);
        io.metaroce.nic.port.MemoryLink.End end = link.end(Inet4.parse("198.18.0.1"), 4793);
        link.connect(end, link.end(Inet4.parse("198.18.0.2"), 4793));
        try (TestNode daemon = new TestNode(end, 4793, clock::get)) {
            daemon.service.userQuota(new UserQuota(0, 0, 0, 0, 2, 2, 2, 1));
            TestNode alice = daemon.connectionOf(1000);
            TestNode alice2 = daemon.connectionOf(1000);
            TestNode alice3 = daemon.connectionOf(1000);
            TestNode bob = daemon.connectionOf(1001);
            TestNode bob2 = daemon.connectionOf(1001);
            assertThat(alice.hello().status()).isZero();
            assertThat(alice2.hello().status()).isZero();
            assertThat(alice3.hello().status()).as("alice's third connection").isEqualTo(Errno.ENOMEM);
            assertThat(alice3.call(AbiConstants.MRCE_OP_ALLOC_PD, TestNode.req(0))
                            .status())
                    .as("a refused connection has no session")
                    .isNotZero();
            assertThat(bob.hello().status()).isZero();
            assertThat(bob2.hello().status())
                    .as("bob's second, whatever alice holds")
                    .isZero();

            // PDs: two across alice's connections
            int pdA = alice.allocPd();
            int pdA2 = alice2.allocPd();
            assertThat(alice.call(AbiConstants.MRCE_OP_ALLOC_PD, TestNode.req(0))
                            .status())
                    .isEqualTo(Errno.ENOMEM);
            int pdB = bob.allocPd();
            bob2.allocPd();

            // CQs: two, whatever their size
            int cqA = alice.createCq(4, NO_HANDLE).handle();
            alice2.createCq(4, NO_HANDLE);
            assertThat(createCqRaw(alice, 1).status()).as("alice's third CQ").isEqualTo(Errno.ENOMEM);
            bob.createCq(4, NO_HANDLE);
            bob.createCq(4, NO_HANDLE);

            // SRQs: one
            int srqA = alice.createSrq(pdA, 16, 1, 0).handle();
            assertThat(alice2.createSrqRaw(pdA2, 16, 1, 0).status())
                    .as("on any connection of hers")
                    .isEqualTo(Errno.ENOMEM);
            assertThat(alice.createSrqRaw(pdA, 16, 1, 0).status())
                    .as("alice's second SRQ")
                    .isEqualTo(Errno.ENOMEM);
            assertThat(bob.createSrqRaw(pdB, 16, 1, 0).status()).isZero();

            // what she frees is hers again
            assertThat(alice.call(AbiConstants.MRCE_OP_DESTROY_SRQ, TestNode.handleReq(srqA))
                            .status())
                    .isZero();
            assertThat(alice.createSrqRaw(pdA, 16, 1, 0).status()).isZero();
            assertThat(alice.call(AbiConstants.MRCE_OP_DESTROY_CQ, TestNode.handleReq(cqA))
                            .status())
                    .isZero();
            assertThat(createCqRaw(alice, 1).status()).isZero();
            daemon.service.onSessionClosed(alice2.session);
            for (int i = 0; i < 10; i++) {
                daemon.pump();
            }
            assertThat(alice3.hello().status())
                    .as("alice2's place, after it closed")
                    .isZero();
            assertThat(alice3.call(AbiConstants.MRCE_OP_ALLOC_PD, TestNode.req(0))
                            .status())
                    .as("alice2's PD went with it")
                    .isZero();
            assertThat(createCqRaw(alice3, 1).status()).as("and its CQ").isZero();
            for (TestNode n : new TestNode[] {alice, alice3, bob, bob2}) {
                daemon.service.onSessionClosed(n.session);
            }
        }
    }

    private static io.metaroce.nic.verbs.FakeSession.Response createCqRaw(TestNode n, int cqe) {
        ByteBuffer r = TestNode.req(CreateCqReqDescriptor.SIZE);
        r.putInt((int) CreateCqReqDescriptor.OFF_CQE, cqe);
        r.putInt((int) CreateCqReqDescriptor.OFF_CHANNEL, NO_HANDLE);
        return n.call(AbiConstants.MRCE_OP_CREATE_CQ, r);
    }
}
