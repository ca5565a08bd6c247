package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Two connection managers on loopback addresses 127.0.0.1 and 127.0.0.2 (one port, two IPs). */
class ConnectionManagerTest {
    static final int A = 0x7f000001;
    static final int B = 0x7f000002;
    static final int PORT = 24792;
    /** A peer silent for 300 ms is lost: only for the tests about losing a peer. */
    static final ConnectionManager.Config FAST = new ConnectionManager.Config(PORT, 50, 300, 2000);
    /**
     * Everything else: a peer is lost only after 30 s of silence, so a test machine that stalls a
     * JVM for a few hundred milliseconds (GC, a loaded CPU) loses no peer in the middle of a test.
     */
    static final ConnectionManager.Config STEADY = new ConnectionManager.Config(PORT, 50, 30_000, 2000);

    /** A daemon's QP table, as the listener sees it: qpn -> (its endpoint, at RTR or not). */
    static final class FakeDaemon implements ConnectionManager.Listener {
        final Map<Integer, CmMessage.Endpoint> rtr = new ConcurrentHashMap<>();
        final Map<Integer, Boolean> exists = new ConcurrentHashMap<>();
        final Map<Integer, CmMessage.Endpoint> learned = new ConcurrentHashMap<>();
        final BlockingQueue<String> events = new LinkedBlockingQueue<>();

        @Override
        public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
            if (!exists.containsKey(remote.peerQpn())) {
                return new ConnectionManager.Decision.Reject(CmMessage.REASON_NO_QP);
            }
            learned.put(remote.peerQpn(), remote);
            CmMessage.Endpoint local = rtr.get(remote.peerQpn());
            if (local == null) {
                return new ConnectionManager.Decision.Later();
            }
            if (local.peerQpn() != remote.qpn()) {
                return new ConnectionManager.Decision.Reject(CmMessage.REASON_MISMATCH);
            }
            return new ConnectionManager.Decision.Accept(local);
        }

        @Override
        public void onDisconnect(int peerIp, CmMessage.Disconnect d) {
            events.add("disconnect " + d.peerQpn() + " " + d.qpn() + " " + d.reason() + " "
                    + Integer.toHexString(d.token()) + (d.placedKnown() ? " placed " + d.placedRsn() : ""));
        }

        @Override
        public void onPeerLost(int peerIp, String why) {
            events.add("lost " + Integer.toHexString(peerIp) + " " + why);
        }
    }

    private ConnectionManager a;
    private ConnectionManager b;
    private final FakeDaemon da = new FakeDaemon();
    private final FakeDaemon db = new FakeDaemon();

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    static CmMessage.Endpoint ep(int qpn, int peer, int token) {
        return new CmMessage.Endpoint(qpn, peer, 1024, 256, qpn * 1000, token, new int[] {1, 2, 3, 4});
    }

    private void both() throws Exception {
        both(STEADY);
    }

    private void both(ConnectionManager.Config config) throws Exception {
        a = ConnectionManager.start(A, config, da);
        b = ConnectionManager.start(B, config, db);
    }

    @Test
    void acceptGivesEachSideThePeersEndpoint() throws Exception {
        both();
        da.exists.put(10, true);
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 0xbbbb));
        CmMessage.Endpoint fromB = a.connect(B, ep(10, 20, 0xaaaa)).get(5, TimeUnit.SECONDS);
        assertThat(fromB).isEqualTo(ep(20, 10, 0xbbbb));
        assertThat(db.learned.get(20)).isEqualTo(ep(10, 20, 0xaaaa));
        assertThat(a.livePeers()).isEqualTo(1);
    }

    @Test
    void aQpNotAtRtrYetAnswersWithItsOwnConnectLater() throws Exception {
        both();
        da.exists.put(10, true);
        db.exists.put(20, true);
        CompletableFuture<CmMessage.Endpoint> fa = a.connect(B, ep(10, 20, 0xaaaa));
        assertThat(waitFor(() -> db.learned.containsKey(20))).isTrue();
        assertThat(fa).isNotDone();
        db.rtr.put(20, ep(20, 10, 0xbbbb));
        da.rtr.put(10, ep(10, 20, 0xaaaa));
        CmMessage.Endpoint fromA = b.connect(A, ep(20, 10, 0xbbbb)).get(5, TimeUnit.SECONDS);
        assertThat(fromA).isEqualTo(ep(10, 20, 0xaaaa));
        assertThat(fa.get(5, TimeUnit.SECONDS)).isEqualTo(ep(20, 10, 0xbbbb));
    }

    @Test
    void unknownOrMismatchedQpsAreRejected() throws Exception {
        both();
        assertThatThrownBy(() -> a.connect(B, ep(10, 99, 1)).get(5, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("reason " + CmMessage.REASON_NO_QP);
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 11, 5));
        assertThatThrownBy(() -> a.connect(B, ep(10, 20, 1)).get(5, TimeUnit.SECONDS))
                .cause()
                .hasMessageContaining("reason " + CmMessage.REASON_MISMATCH);
    }

    @Test
    void noPeerDaemonTimesOut() throws Exception {
        a = ConnectionManager.start(A, new ConnectionManager.Config(PORT, 50, 300, 400), da);
        assertThatThrownBy(() -> a.connect(B, ep(10, 20, 1)).get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("no answer");
    }

    @Test
    void disconnectReachesThePeer() throws Exception {
        both();
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 2));
        a.connect(B, ep(10, 20, 1)).get(5, TimeUnit.SECONDS);
        a.disconnect(
                B,
                new CmMessage.Disconnect(
                        10, 20, CmMessage.REASON_DESTROYED, 0xaaaa, CmMessage.Disconnect.FLAG_PLACED, 0x1234));
        assertThat(db.events.poll(5, TimeUnit.SECONDS))
                .isEqualTo("disconnect 20 10 " + CmMessage.REASON_DESTROYED + " aaaa placed " + 0x1234);
    }

    @Test
    void aDeadPeerIsLostWithinTheTimeoutAndARestartedOneServesAgain() throws Exception {
        both(FAST);
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 2));
        a.connect(B, ep(10, 20, 1)).get(5, TimeUnit.SECONDS);
        long t0 = System.nanoTime();
        b.close();
        b = null;
        String ev = da.events.poll(5, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(ev).startsWith("lost 7f000002");
        assertThat(ms).as("lost after %d ms (timeout 300 ms + a heartbeat)", ms).isLessThan(2000);

        FakeDaemon db2 = new FakeDaemon();
        db2.exists.put(21, true);
        db2.rtr.put(21, ep(21, 11, 3));
        b = ConnectionManager.start(B, FAST, db2);
        assertThat(a.connect(B, ep(11, 21, 4)).get(5, TimeUnit.SECONDS)).isEqualTo(ep(21, 11, 3));
    }

    @Test
    void aRestartWithinTheTimeoutIsSeenByItsNewBootId() throws Exception {
        a = ConnectionManager.start(A, new ConnectionManager.Config(PORT, 50, 5000, 2000), da);
        b = ConnectionManager.start(B, new ConnectionManager.Config(PORT, 50, 5000, 2000), db);
        db.exists.put(20, true);
        db.rtr.put(20, ep(20, 10, 2));
        a.connect(B, ep(10, 20, 1)).get(5, TimeUnit.SECONDS);
        b.close();
        // Until A sees the old connection closed, a CONNECT goes to the old instance and fails
        // with it when the new one says HELLO (spec 5): wait for that, the restart is what is tested.
        assertThat(waitFor(() -> !a.peerConnected(B)))
                .as("A saw the old instance's connection close")
                .isTrue();
        FakeDaemon db2 = new FakeDaemon();
        db2.exists.put(21, true);
        db2.rtr.put(21, ep(21, 11, 3));
        b = ConnectionManager.start(B, new ConnectionManager.Config(PORT, 50, 5000, 2000), db2);
        assertThat(a.connect(B, ep(11, 21, 4)).get(5, TimeUnit.SECONDS)).isEqualTo(ep(21, 11, 3));
        assertThat(da.events.poll(5, TimeUnit.SECONDS)).startsWith("lost 7f000002 restarted");
    }

    private static boolean waitFor(java.util.function.BooleanSupplier c) throws InterruptedException {
        for (int i = 0; i < 500; i++) {
            if (c.getAsBoolean()) {
                return true;
            }
            Thread.sleep(10);
        }
        return false;
    }
}
