package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.NO_HANDLE;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.control.cm.CmMessage;
import io.metaroce.control.cm.ConnectionManager;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A daemon whose peer daemon restarts (new boot id) fails only the QPs connected to the old
 * incarnation: a QP that reached RTR while the peer was down is connected to the new one.
 */
class CmBridgeRestartTest {
    static final int A = Inet4.parse("127.0.0.1");
    static final int B = Inet4.parse("127.0.0.2");
    static final ConnectionManager.Config CONFIG = new ConnectionManager.Config(24796, 50, 10_000, 5000);

    private TestNode node;
    private CmBridge bridge;
    private ConnectionManager peer;

    /** The peer daemon: accepts every CONNECT with an endpoint of its own. */
    static final class AcceptAll implements ConnectionManager.Listener {
        @Override
        public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
            return new ConnectionManager.Decision.Accept(
                    new CmMessage.Endpoint(remote.peerQpn(), remote.qpn(), 4096, 256, 1, 0x5eed, new int[] {1, 2}));
        }

        @Override
        public void onDisconnect(int peerIp, CmMessage.Disconnect d) {}

        @Override
        public void onPeerLost(int peerIp, String why) {}
    }

    @AfterEach
    void tearDown() {
        if (node != null) {
            node.close(); // its QPs' DISCONNECTs go out through the bridge
        }
        if (bridge != null) {
            bridge.close();
        }
        if (peer != null) {
            peer.close();
        }
    }

    private void pumpUntil(String what, BooleanSupplier done) throws InterruptedException {
        for (int i = 0; i < 2000; i++) {
            node.pump();
            if (done.getAsBoolean()) {
                return;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("timed out waiting for " + what);
    }

    @Test
    void aQpConnectedWhileThePeerRestartsSurvivesTheRestart() throws Exception {
        restart(null);
    }

    /** The same with both daemons authenticating with a cluster secret (connection-manager.md section 8). */
    @Test
    void theSameWithAClusterSecret() throws Exception {
        restart("a cluster secret of 32 bytes ....".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        assertThat(bridge.manager().authRefusals()).isZero();
        assertThat(peer.authRefusals()).isZero();
    }

    private void restart(byte[] secret) throws Exception {
        MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, System::nanoTime);
        MemoryLink.End end = link.end(A, 4793);
        link.connect(end, link.end(B, 4793));
        node = new TestNode(end, 4793, System::nanoTime);
        bridge = CmBridge.start(node.engine, A, CONFIG, 1000, secret);
        // The manager's handshake with itself at start left nothing: no peer, no QP's handshake.
        assertThat(bridge.manager().livePeers()).isZero();
        assertThat(bridge.handshakes.get() + bridge.failures.get()).isZero();
        peer = ConnectionManager.start(B, CONFIG, new AcceptAll(), secret);
        node.hello();
        int pd = node.allocPd();
        TestNode.CqHandles cq = node.createCq(16, NO_HANDLE);

        TestNode.QpHandles old = node.createQp(pd, cq.handle(), cq.handle(), 8, 1, 0);
        node.connect(old.handle(), B, 20, 100, 200, Ibv.MTU_1024);
        pumpUntil("the first handshake", () -> bridge.handshakes.get() == 1);

        peer.close();
        pumpUntil(
                "the connection to the stopped peer to close",
                () -> !bridge.manager().peerConnected(B));
        // Reaches RTR while the peer daemon is down: its CONNECT waits for the next connection.
        TestNode.QpHandles fresh = node.createQp(pd, cq.handle(), cq.handle(), 8, 1, 0);
        node.connect(fresh.handle(), B, 21, 300, 400, Ibv.MTU_1024);
        peer = ConnectionManager.start(B, CONFIG, new AcceptAll(), secret); // the restarted daemon: a new boot id

        pumpUntil(
                "the second handshake and the old QP's failure",
                () -> bridge.handshakes.get() == 2 && bridge.failures.get() == 1);
        for (int i = 0; i < 50; i++) { // any further command (a late failure) has run
            node.pump();
            Thread.sleep(2);
        }
        assertThat(node.queryQp(old.handle()).qpState)
                .as("connected to the lost incarnation")
                .isEqualTo(Ibv.QPS_ERR);
        assertThat(node.queryQp(fresh.handle()).qpState)
                .as("connected to the new incarnation")
                .isEqualTo(Ibv.QPS_RTS);
        assertThat(bridge.failures.get()).isEqualTo(1);
    }
}
