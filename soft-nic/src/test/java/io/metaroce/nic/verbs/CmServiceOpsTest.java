package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.CmGetRequestReqDescriptor;
import io.metaroce.abi.CmListenReqDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.control.cm.CmMessage;
import io.metaroce.control.cm.ConnectionManager;
import io.metaroce.control.cm.ServiceTable;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** VerbsService hands ops 20..25 to the ServiceTable, after HELLO, and releases a closed session's listens. */
class CmServiceOpsTest {
    private final AtomicLong clock = new AtomicLong();
    private TestNode node;
    private ConnectionManager cm;
    private ServiceTable table;

    private TestNode node() throws Exception {
        MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, clock::get);
        MemoryLink.End end = link.end(Inet4.parse("198.18.0.1"), 4793);
        link.connect(end, link.end(Inet4.parse("198.18.0.2"), 4793));
        node = new TestNode(end, 4793, clock::get, Limits.defaults());
        return node;
    }

    @AfterEach
    void tearDown() {
        if (node != null) {
            node.close();
        }
        if (table != null) {
            table.close();
        }
        if (cm != null) {
            cm.close();
        }
    }

    private static ByteBuffer listen(int service) {
        ByteBuffer b = TestNode.req(CmListenReqDescriptor.SIZE);
        b.putInt((int) CmListenReqDescriptor.OFF_SERVICE_ID, service);
        return b;
    }

    @Test
    void withoutTheManagerTheOpsAreNotSupported() throws Exception {
        node();
        assertThat(node.call(MRCE_OP_CM_LISTEN, listen(5)).status())
                .as("before HELLO")
                .isEqualTo(Errno.EPROTO);
        node.hello();
        assertThat(node.call(MRCE_OP_CM_LISTEN, listen(5)).status()).isEqualTo(Errno.EOPNOTSUPP);
        assertThat(node.call(MRCE_OP_CM_BIND, listen(5)).status()).isEqualTo(Errno.EOPNOTSUPP);
        assertThat(node.call(MRCE_OP_CM_GET_REQUEST, TestNode.req(CmGetRequestReqDescriptor.SIZE))
                        .status())
                .isEqualTo(Errno.EOPNOTSUPP);
    }

    @Test
    void listensGoAwayWithTheSession() throws Exception {
        node();
        cm = ConnectionManager.start(
                0x7f000001, new ConnectionManager.Config(24795, 50, 300, 1000), new ConnectionManager.Listener() {
                    @Override
                    public ConnectionManager.Decision onConnect(int peerIp, CmMessage.Endpoint remote) {
                        return new ConnectionManager.Decision.Reject(CmMessage.REASON_NO_QP);
                    }

                    @Override
                    public void onDisconnect(int peerIp, CmMessage.Disconnect d) {}

                    @Override
                    public void onPeerLost(int peerIp, String why) {}
                });
        table = new ServiceTable(cm, 1000);
        cm.serviceHandler(table);
        node.service.services(table);
        node.hello();
        assertThat(node.call(MRCE_OP_CM_LISTEN, listen(5)).status()).isZero();
        assertThat(node.call(MRCE_OP_CM_LISTEN, listen(5)).status())
                .as("EADDRINUSE")
                .isEqualTo(98);
        assertThat(node.call(MRCE_OP_CM_GET_REQUEST, TestNode.req(CmGetRequestReqDescriptor.SIZE))
                        .status())
                .isEqualTo(Errno.EAGAIN);
        assertThat(node.call(MRCE_OP_CM_BIND, listen(5)).status())
                .as("bind of a listened id")
                .isEqualTo(98);
        assertThat(node.call(MRCE_OP_CM_BIND, listen(6)).status()).isZero();
        assertThat(node.call(MRCE_OP_CM_BIND, listen(6)).status())
                .as("second bind")
                .isEqualTo(98);
        assertThat(table.listening()).isEqualTo(1);
        assertThat(table.bound()).isEqualTo(1);
        assertThat(node.service.objectsJson()).contains("\"cmService\":{\"listening\":1,\"bound\":1,\"held\":0");
        node.service.onSessionClosed(node.session);
        assertThat(table.listening()).isZero();
        assertThat(table.bound()).isZero();
    }
}
