package io.metaroce.control.cm;

import static io.metaroce.control.cm.ConnectionManagerTest.A;
import static io.metaroce.control.cm.ConnectionManagerTest.B;
import static io.metaroce.control.cm.ConnectionManagerTest.PORT;
import static io.metaroce.control.cm.ConnectionManagerTest.ep;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A fresh manager's first handshakes (issue 17): the handshake with itself at start-up leaves
 * nothing behind, and a CONNECT made while the connection is still being dialed goes out as soon
 * as the peer's HELLO arrives, on the first connection, with no heartbeat tick: the heartbeat here
 * is 60 s, longer than any wait in these tests, so nothing in them can be the tick's doing.
 */
class ConnectionManagerFirstHandshakeTest {
    /** No tick within a test: a handshake that needed one would time out at the 20 s wait. */
    static final ConnectionManager.Config NO_TICK = new ConnectionManager.Config(PORT, 60_000, 120_000, 30_000);

    static final byte[] SECRET =
            "first-handshake-test-secret-0123456789".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** {@link ConnectionManagerTest.FakeDaemon}, also noting every CONNECT it was asked about. */
    static final class Daemon implements ConnectionManager.Listener {
        final ConnectionManagerTest.FakeDaemon fake = new ConnectionManagerTest.FakeDaemon();
        final java.util.Map<Integer, CmMessage.Endpoint> rtr = fake.rtr;
        final java.util.Map<Integer, Boolean> exists = fake.exists;
        final BlockingQueue<String> events = fake.events;
        final List<String> connects = new CopyOnWriteArrayList<>();
        /** The same, to wait on. */
        final BlockingQueue<String> asked = new LinkedBlockingQueue<>();

        @Override
        public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
            ConnectionManager.Decision d = fake.onConnect(peerIp, remote);
            String what = Integer.toHexString(peerIp) + " " + remote.qpn() + "->" + remote.peerQpn() + " "
                    + d.getClass().getSimpleName();
            connects.add(what);
            asked.add(what);
            return d;
        }

        @Override
        public void onDisconnect(int peerIp, CmMessage.Disconnect d) {
            fake.onDisconnect(peerIp, d);
        }

        @Override
        public void onPeerLost(int peerIp, String why) {
            fake.onPeerLost(peerIp, why);
        }
    }

    private ConnectionManager a;
    private ConnectionManager b;
    private final Daemon da = new Daemon();
    private final Daemon db = new Daemon();

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    @Test
    void theHandshakeWithItselfLeavesNoPeerAndTouchesNoQp() throws Exception {
        a = ConnectionManager.start(A, NO_TICK, da);
        a.warmUp().get(20, TimeUnit.SECONDS);
        // The listener was asked once, about QP 0 (no QP has it), by ourselves, and said no.
        assertThat(da.connects).containsExactly("7f000001 0->0 Reject");
        assertThat(da.events).isEmpty(); // no peer lost, no disconnect
        assertThat(a.livePeers()).isZero();
        assertThat(a.peerConnected(A)).isFalse();
        assertThat(a.authRefusals()).isZero();
        // A real peer afterwards: one handshake, the usual one.
        b = ConnectionManager.start(B, NO_TICK, db);
        da.exists.put(10, true);
        da.rtr.put(10, ep(10, 20, 0xaaaa));
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 0xbbbb));
        assertThat(b.connect(A, ep(20, 10, 0xbbbb)).get(20, TimeUnit.SECONDS)).isEqualTo(ep(10, 20, 0xaaaa));
        assertThat(a.livePeers()).isEqualTo(1);
        assertThat(da.connects).containsExactly("7f000001 0->0 Reject", "7f000002 20->10 Accept");
    }

    @Test
    void theHandshakeWithItselfAuthenticatesWithTheClusterSecret() throws Exception {
        a = ConnectionManager.start(A, NO_TICK, da, SECRET);
        a.warmUp().get(20, TimeUnit.SECONDS);
        assertThat(da.connects).containsExactly("7f000001 0->0 Reject");
        assertThat(a.authRefusals()).isZero();
        assertThat(a.livePeers()).isZero();
        b = ConnectionManager.start(B, NO_TICK, db, SECRET);
        b.warmUp().get(20, TimeUnit.SECONDS);
        da.exists.put(10, true);
        da.rtr.put(10, ep(10, 20, 0xaaaa));
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 0xbbbb));
        assertThat(a.connect(B, ep(10, 20, 0xaaaa)).get(20, TimeUnit.SECONDS)).isEqualTo(ep(20, 10, 0xbbbb));
        assertThat(a.authRefusals() + b.authRefusals()).isZero();
    }

    @Test
    void aConnectQueuedWhileDialingGoesOutOnTheFirstConnectionWithoutATick() throws Exception {
        a = ConnectionManager.start(A, NO_TICK, da);
        b = ConnectionManager.start(B, NO_TICK, db);
        da.exists.put(10, true);
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 0xbbbb));
        // No connection to B yet: the CONNECT waits in the queue while A dials, and leaves with
        // A's first message after B's HELLO.
        CompletableFuture<CmMessage.Endpoint> fa = a.connect(B, ep(10, 20, 0xaaaa));
        assertThat(fa.get(20, TimeUnit.SECONDS)).isEqualTo(ep(20, 10, 0xbbbb));
        assertThat(db.connects).containsExactly("7f000001 10->20 Accept");
        assertThat(a.livePeers()).isEqualTo(1);
        assertThat(b.livePeers()).isEqualTo(1);
    }

    @Test
    void bothSidesConnectingAtOnceEachGetTheOthersEndpointWithoutATick() throws Exception {
        a = ConnectionManager.start(A, NO_TICK, da);
        b = ConnectionManager.start(B, NO_TICK, db);
        da.exists.put(10, true);
        da.rtr.put(10, ep(10, 20, 0xaaaa));
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 0xbbbb));
        // Both dial (two connections, one per direction, both kept): each side's CONNECT goes on
        // whichever said HELLO first, and each completes from the other's CONNECT or ACCEPT.
        CompletableFuture<CmMessage.Endpoint> fa = a.connect(B, ep(10, 20, 0xaaaa));
        CompletableFuture<CmMessage.Endpoint> fb = b.connect(A, ep(20, 10, 0xbbbb));
        assertThat(fa.get(20, TimeUnit.SECONDS)).isEqualTo(ep(20, 10, 0xbbbb));
        assertThat(fb.get(20, TimeUnit.SECONDS)).isEqualTo(ep(10, 20, 0xaaaa));
        assertThat(a.peerConnected(B)).isTrue();
        assertThat(b.peerConnected(A)).isTrue();
    }

    @Test
    void aConnectAnsweredLaterCompletesFromThePeersOwnConnectWithoutATick() throws Exception {
        a = ConnectionManager.start(A, NO_TICK, da);
        b = ConnectionManager.start(B, NO_TICK, db);
        a.warmUp().get(20, TimeUnit.SECONDS);
        b.warmUp().get(20, TimeUnit.SECONDS);
        // ibv_rc_pingpong's order: the server's QP (B) reaches RTR first and connects while the
        // client's (A) is still in INIT; A's CONNECT at its RTR completes both.
        da.exists.put(10, true);
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 0xbbbb));
        da.asked.clear(); // the warm-up's
        CompletableFuture<CmMessage.Endpoint> fb = b.connect(A, ep(20, 10, 0xbbbb));
        assertThat(da.asked.poll(20, TimeUnit.SECONDS)).isEqualTo("7f000002 20->10 Later");
        assertThat(fb).isNotDone();
        da.rtr.put(10, ep(10, 20, 0xaaaa));
        assertThat(a.connect(B, ep(10, 20, 0xaaaa)).get(20, TimeUnit.SECONDS)).isEqualTo(ep(20, 10, 0xbbbb));
        assertThat(fb.get(20, TimeUnit.SECONDS)).isEqualTo(ep(10, 20, 0xaaaa));
        assertThat(da.connects).containsExactly("7f000001 0->0 Reject", "7f000002 20->10 Later");
    }
}
