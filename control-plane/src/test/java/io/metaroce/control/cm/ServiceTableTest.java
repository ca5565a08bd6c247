package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.CmAcceptReqDescriptor;
import io.metaroce.abi.CmConnectReqDescriptor;
import io.metaroce.abi.CmConnectRespDescriptor;
import io.metaroce.abi.CmListenReqDescriptor;
import io.metaroce.abi.CmRejectReqDescriptor;
import io.metaroce.abi.CmRequestDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.IpAddr;
import io.metaroce.control.ControlProtocol;
import io.metaroce.control.LocalSession;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Two daemons' service tables over two real connection managers (127.0.0.1, 127.0.0.2), driven
 * through the local ops as the control socket hands them over, with sessions that record their
 * responses.
 */
class ServiceTableTest {
    static final int A = ConnectionManagerTest.A;
    static final int B = ConnectionManagerTest.B;
    /** No peer is lost in the middle of a test when the machine stalls a JVM (30 s peer timeout). */
    static final ConnectionManager.Config STEADY = new ConnectionManager.Config(24794, 50, 30_000, 2000);

    static final byte[] GID_A = ConnectionManagerServiceTest.GID_A;
    static final byte[] GID_B = ConnectionManagerServiceTest.GID_B;
    private static final AtomicLong IDS = new AtomicLong(1);

    record Response(int op, int seq, int status, ByteBuffer payload) {
        int i(int off) {
            return payload.getInt(off);
        }

        String privateData(int lenOff, int dataOff) {
            byte[] b = new byte[payload.getInt(lenOff)];
            payload.get(dataOff, b);
            return new String(b, StandardCharsets.US_ASCII);
        }
    }

    /** A control connection that records its responses. */
    static final class Session implements LocalSession {
        final long id = IDS.getAndIncrement();
        final BlockingQueue<Response> responses = new LinkedBlockingQueue<>();
        private int seq = 1;

        @Override
        public long id() {
            return id;
        }

        @Override
        public int pid() {
            return 4242;
        }

        @Override
        public int uid() {
            return 0;
        }

        @Override
        public int gid() {
            return 0;
        }

        @Override
        public void respond(int op, int seq, int status, ByteBuffer payload, int... fds) {
            ByteBuffer copy = ByteBuffer.allocate(payload.remaining()).order(ByteOrder.LITTLE_ENDIAN);
            copy.put(payload.duplicate()).flip();
            if (status != 0) {
                assertThat(copy.remaining())
                        .as("an error response has no payload")
                        .isZero();
            } else {
                assertThat(copy.remaining()).isEqualTo(ControlProtocol.responseSize(op));
            }
            responses.add(new Response(op, seq, status, copy));
        }

        @Override
        public void close(String reason) {}

        int next() {
            return seq++;
        }

        Response await() throws InterruptedException {
            Response r = responses.poll(5, TimeUnit.SECONDS);
            assertThat(r).as("a response within 5 s").isNotNull();
            return r;
        }
    }

    private ConnectionManager cmA;
    private ConnectionManager cmB;
    private ServiceTable a;
    private ServiceTable b;

    @BeforeEach
    void start() throws Exception {
        cmA = ConnectionManager.start(A, STEADY, new ConnectionManagerTest.FakeDaemon());
        cmB = ConnectionManager.start(B, STEADY, new ConnectionManagerTest.FakeDaemon());
        a = new ServiceTable(cmA, 2000);
        b = new ServiceTable(cmB, 2000);
        cmA.serviceHandler(a);
        cmB.serviceHandler(b);
    }

    @AfterEach
    void stop() {
        a.close();
        b.close();
        cmA.close();
        cmB.close();
    }

    static ByteBuffer buf(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    static int listen(ServiceTable t, Session s, int service, int backlog) {
        ByteBuffer p = buf(CmListenReqDescriptor.SIZE).putInt(0, service).putInt(4, backlog);
        int seq = s.next();
        t.onRequest(s, ControlProtocol.OP_CM_LISTEN, seq, p);
        return seq;
    }

    static int bind(ServiceTable t, Session s, int service) {
        int seq = s.next();
        t.onRequest(
                s,
                ControlProtocol.OP_CM_BIND,
                seq,
                buf(CmListenReqDescriptor.SIZE).putInt(0, service));
        return seq;
    }

    static int unlisten(ServiceTable t, Session s, int service) {
        int seq = s.next();
        t.onRequest(s, ControlProtocol.OP_CM_UNLISTEN, seq, buf(8).putInt(0, service));
        return seq;
    }

    static int connect(ServiceTable t, Session s, int peer, int service, int qpn, int psn, String pd, int timeoutMs) {
        ByteBuffer p = buf(CmConnectReqDescriptor.SIZE);
        p.order(ByteOrder.BIG_ENDIAN)
                .putInt(CmConnectReqDescriptor.OFF_PEER_IPV4, peer)
                .order(ByteOrder.LITTLE_ENDIAN);
        p.putInt(CmConnectReqDescriptor.OFF_SERVICE_ID, service)
                .putInt(CmConnectReqDescriptor.OFF_QPN, qpn)
                .putInt(CmConnectReqDescriptor.OFF_PSN, psn)
                .put(CmConnectReqDescriptor.OFF_GID, GID_A)
                .putInt(CmConnectReqDescriptor.OFF_TIMEOUT_MS, timeoutMs)
                .putInt(CmConnectReqDescriptor.OFF_PRIVATE_DATA_LEN, pd.length())
                .put(CmConnectReqDescriptor.OFF_PRIVATE_DATA, ascii(pd));
        int seq = s.next();
        t.onRequest(s, ControlProtocol.OP_CM_CONNECT, seq, p);
        return seq;
    }

    static int getRequest(ServiceTable t, Session s, int timeoutMs) {
        int seq = s.next();
        t.onRequest(s, ControlProtocol.OP_CM_GET_REQUEST, seq, buf(8).putInt(0, timeoutMs));
        return seq;
    }

    static int accept(ServiceTable t, Session s, int handle, int qpn, int psn, String pd) {
        ByteBuffer p = buf(CmAcceptReqDescriptor.SIZE)
                .putInt(CmAcceptReqDescriptor.OFF_REQUEST, handle)
                .putInt(CmAcceptReqDescriptor.OFF_QPN, qpn)
                .putInt(CmAcceptReqDescriptor.OFF_PSN, psn)
                .put(CmAcceptReqDescriptor.OFF_GID, GID_B)
                .putInt(CmAcceptReqDescriptor.OFF_PRIVATE_DATA_LEN, pd.length())
                .put(CmAcceptReqDescriptor.OFF_PRIVATE_DATA, ascii(pd));
        int seq = s.next();
        t.onRequest(s, ControlProtocol.OP_CM_ACCEPT, seq, p);
        return seq;
    }

    static int reject(ServiceTable t, Session s, int handle, String pd) {
        ByteBuffer p = buf(CmRejectReqDescriptor.SIZE)
                .putInt(CmRejectReqDescriptor.OFF_REQUEST, handle)
                .putInt(CmRejectReqDescriptor.OFF_PRIVATE_DATA_LEN, pd.length())
                .put(CmRejectReqDescriptor.OFF_PRIVATE_DATA, ascii(pd));
        int seq = s.next();
        t.onRequest(s, ControlProtocol.OP_CM_REJECT, seq, p);
        return seq;
    }

    private static Response expect(Session s, int op, int seq, int status) throws InterruptedException {
        Response r = s.await();
        assertThat(r.op()).isEqualTo(op);
        assertThat(r.seq()).isEqualTo(seq);
        assertThat(r.status()).as("status of %s", ControlProtocol.opName(op)).isEqualTo(status);
        return r;
    }

    /**
     * CM_CONNECT with peer_ipv4 0 names the peer in peer_ipv6 (the way an IPv6 peer is named;
     * here B's IPv4-mapped address, which names B), and CM_GET_REQUEST names the requester in
     * peer_ipv6 as well (IPv4 as ::ffff:a.b.c.d; for an IPv6 requester peer_ipv4 is 0).
     */
    @Test
    void connectNamesThePeerInPeerIpv6WhenPeerIpv4IsZero() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 18516, 0), 0);
        int get = getRequest(b, server, 5000);
        ByteBuffer p = buf(CmConnectReqDescriptor.SIZE);
        p.put(CmConnectReqDescriptor.OFF_PEER_IPV6, IpAddr.gid(B))
                .putInt(CmConnectReqDescriptor.OFF_SERVICE_ID, 18516)
                .putInt(CmConnectReqDescriptor.OFF_QPN, 0x11)
                .put(CmConnectReqDescriptor.OFF_GID, GID_A);
        int conn = client.next();
        a.onRequest(client, ControlProtocol.OP_CM_CONNECT, conn, p);
        Response req = expect(server, ControlProtocol.OP_CM_GET_REQUEST, get, 0);
        byte[] peer = new byte[16];
        req.payload().get(CmRequestDescriptor.OFF_PEER_IPV6, peer);
        assertThat(peer).isEqualTo(IpAddr.gid(A));
        assertThat(req.payload().order(ByteOrder.BIG_ENDIAN).getInt(CmRequestDescriptor.OFF_PEER_IPV4))
                .isEqualTo(A);
        req.payload().order(ByteOrder.LITTLE_ENDIAN);
        expect(
                server,
                ControlProtocol.OP_CM_REJECT,
                reject(b, server, req.i(CmRequestDescriptor.OFF_REQUEST), "no"),
                0);
        Response r = expect(client, ControlProtocol.OP_CM_CONNECT, conn, 0);
        assertThat(r.i(CmConnectRespDescriptor.OFF_RESULT)).isEqualTo(ControlProtocol.CM_REJECTED);
        // neither address: EINVAL
        expect(client, ControlProtocol.OP_CM_CONNECT, connect(a, client, 0, 18516, 1, 2, "", 0), Errno.EINVAL);
    }

    @Test
    void listenConnectAcceptExchangesEndpointsAndPrivateData() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 18515, 0), 0);
        int get = getRequest(b, server, 5000); // waits
        int conn = connect(a, client, B, 18515, 0x11, 0x222, "hello from A", 0);
        Response req = expect(server, ControlProtocol.OP_CM_GET_REQUEST, get, 0);
        assertThat(req.i(CmRequestDescriptor.OFF_SERVICE_ID)).isEqualTo(18515);
        assertThat(req.i(CmRequestDescriptor.OFF_QPN)).isEqualTo(0x11);
        assertThat(req.i(CmRequestDescriptor.OFF_PSN)).isEqualTo(0x222);
        assertThat(req.payload().order(ByteOrder.BIG_ENDIAN).getInt(CmRequestDescriptor.OFF_PEER_IPV4))
                .isEqualTo(A);
        req.payload().order(ByteOrder.LITTLE_ENDIAN);
        byte[] gid = new byte[16];
        req.payload().get(CmRequestDescriptor.OFF_GID, gid);
        assertThat(gid).isEqualTo(GID_A);
        assertThat(req.privateData(CmRequestDescriptor.OFF_PRIVATE_DATA_LEN, CmRequestDescriptor.OFF_PRIVATE_DATA))
                .isEqualTo("hello from A");
        assertThat(client.responses).isEmpty();
        int acc = accept(b, server, req.i(CmRequestDescriptor.OFF_REQUEST), 0x33, 0x444, "welcome, from B");
        Response r = expect(client, ControlProtocol.OP_CM_CONNECT, conn, 0);
        assertThat(r.i(CmConnectRespDescriptor.OFF_RESULT)).isEqualTo(ControlProtocol.CM_ACCEPTED);
        assertThat(r.i(CmConnectRespDescriptor.OFF_QPN)).isEqualTo(0x33);
        assertThat(r.i(CmConnectRespDescriptor.OFF_PSN)).isEqualTo(0x444);
        r.payload().get(CmConnectRespDescriptor.OFF_GID, gid);
        assertThat(gid).isEqualTo(GID_B);
        assertThat(r.privateData(
                        CmConnectRespDescriptor.OFF_PRIVATE_DATA_LEN, CmConnectRespDescriptor.OFF_PRIVATE_DATA))
                .isEqualTo("welcome, from B");
        expect(server, ControlProtocol.OP_CM_ACCEPT, acc, 0); // after the requester's SVC_READY
        assertThat(b.kept()).isZero();
        assertThat(a.connecting()).isZero();
    }

    @Test
    void rejectCarriesPrivateDataToTheRequester() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 7, 0), 0);
        int conn = connect(a, client, B, 7, 1, 2, "", 0);
        Response req = expect(server, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, server, 5000), 0);
        expect(
                server,
                ControlProtocol.OP_CM_REJECT,
                reject(b, server, req.i(CmRequestDescriptor.OFF_REQUEST), "full, sorry"),
                0);
        Response r = expect(client, ControlProtocol.OP_CM_CONNECT, conn, 0);
        assertThat(r.i(CmConnectRespDescriptor.OFF_RESULT)).isEqualTo(ControlProtocol.CM_REJECTED);
        assertThat(r.privateData(
                        CmConnectRespDescriptor.OFF_PRIVATE_DATA_LEN, CmConnectRespDescriptor.OFF_PRIVATE_DATA))
                .isEqualTo("full, sorry");
        // answered: the handle is gone
        expect(
                server,
                ControlProtocol.OP_CM_ACCEPT,
                accept(b, server, req.i(CmRequestDescriptor.OFF_REQUEST), 1, 1, ""),
                Errno.ENOENT);
    }

    @Test
    void noListenerIsRefusedAtOnce() throws Exception {
        Session client = new Session();
        expect(client, ControlProtocol.OP_CM_CONNECT, connect(a, client, B, 99, 1, 2, "", 60_000), Errno.ECONNREFUSED);
    }

    @Test
    void oneListenerPerServiceAndBadRequestsAreErrors() throws Exception {
        Session s1 = new Session();
        Session s2 = new Session();
        expect(s1, ControlProtocol.OP_CM_LISTEN, listen(b, s1, 5, 0), 0);
        expect(s2, ControlProtocol.OP_CM_LISTEN, listen(b, s2, 5, 0), Errno.EADDRINUSE);
        expect(s1, ControlProtocol.OP_CM_LISTEN, listen(b, s1, 5, 0), Errno.EADDRINUSE);
        expect(s1, ControlProtocol.OP_CM_LISTEN, listen(b, s1, 0, 0), Errno.EINVAL);
        expect(s1, ControlProtocol.OP_CM_LISTEN, listen(b, s1, 6, ControlProtocol.CM_MAX_BACKLOG + 1), Errno.EINVAL);
        expect(s2, ControlProtocol.OP_CM_UNLISTEN, unlisten(b, s2, 5), Errno.ENOENT);
        expect(s2, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, s2, 10), Errno.EINVAL); // listens on nothing
        expect(s1, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, s1, 0), Errno.EAGAIN);
        expect(s1, ControlProtocol.OP_CM_ACCEPT, accept(b, s1, 12345, 1, 1, ""), Errno.ENOENT);
        expect(s1, ControlProtocol.OP_CM_REJECT, reject(b, s1, 12345, ""), Errno.ENOENT);
        expect(s2, ControlProtocol.OP_CM_CONNECT, connect(a, s2, B, 5, 1 << 24, 2, "", 0), Errno.EINVAL);
        expect(s2, ControlProtocol.OP_CM_CONNECT, connect(a, s2, 0, 5, 1, 2, "", 0), Errno.EINVAL);
        expect(s2, ControlProtocol.OP_CM_CONNECT, connect(a, s2, B, 0, 1, 2, "", 0), Errno.EINVAL);
        ByteBuffer big = buf(CmConnectReqDescriptor.SIZE);
        big.order(ByteOrder.BIG_ENDIAN)
                .putInt(0, B)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(4, 5)
                .putInt(CmConnectReqDescriptor.OFF_PRIVATE_DATA_LEN, 193);
        a.onRequest(s2, ControlProtocol.OP_CM_CONNECT, 77, big);
        expect(s2, ControlProtocol.OP_CM_CONNECT, 77, Errno.EINVAL);
        // a second long poll while one waits
        int first = getRequest(b, s1, 5000);
        expect(s1, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, s1, 5000), Errno.EBUSY);
        // unlistening the last service ends the waiting one
        int un = unlisten(b, s1, 5);
        expect(s1, ControlProtocol.OP_CM_GET_REQUEST, first, Errno.ECANCELED);
        expect(s1, ControlProtocol.OP_CM_UNLISTEN, un, 0);
        assertThat(b.listening()).isZero();
    }

    @Test
    void aLongPollEndsWithEagainAtItsTimeout() throws Exception {
        Session s = new Session();
        expect(s, ControlProtocol.OP_CM_LISTEN, listen(b, s, 5, 0), 0);
        expect(s, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, s, 50), Errno.EAGAIN);
    }

    @Test
    void aClosedListenerLeavesNothingAndItsRequestersAreReset() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 9, 0), 0);
        // one request handed out, one still queued
        int c1 = connect(a, client, B, 9, 1, 1, "one", 0);
        expect(server, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, server, 5000), 0);
        int c2 = connect(a, client, B, 9, 2, 2, "two", 0);
        waitFor(() -> b.kept() == 2);
        b.onSessionClosed(server);
        Response r1 = client.await();
        Response r2 = client.await();
        assertThat(java.util.Set.of(r1.seq(), r2.seq())).containsExactlyInAnyOrder(c1, c2);
        assertThat(r1.status()).isEqualTo(Errno.ECONNRESET);
        assertThat(r2.status()).isEqualTo(Errno.ECONNRESET);
        assertThat(b.listening()).isZero();
        assertThat(b.kept()).isZero();
        // the service is free again
        Session again = new Session();
        expect(again, ControlProtocol.OP_CM_LISTEN, listen(b, again, 9, 0), 0);
    }

    @Test
    void aRequesterThatGoesAwayMakesTheAcceptFail() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 11, 0), 0);
        connect(a, client, B, 11, 1, 1, "", 0);
        Response req = expect(server, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, server, 5000), 0);
        a.onSessionClosed(client);
        assertThat(a.connecting()).isZero();
        waitFor(() -> b.kept() == 0); // the cancel reached B
        assertThat(b.kept()).isZero();
        Response acc = expect(
                server,
                ControlProtocol.OP_CM_ACCEPT,
                accept(b, server, req.i(CmRequestDescriptor.OFF_REQUEST), 3, 3, ""),
                Errno.ECONNABORTED);
        assertThat(acc.payload().remaining()).isZero();
    }

    @Test
    void aRequesterThatTimesOutGetsEtimedout() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 12, 0), 0);
        int c = connect(a, client, B, 12, 1, 1, "", 200);
        expect(client, ControlProtocol.OP_CM_CONNECT, c, Errno.ETIMEDOUT);
        waitFor(() -> b.kept() == 0);
        assertThat(b.kept()).as("the timed-out request was withdrawn").isZero();
        expect(server, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, server, 0), Errno.EAGAIN);
    }

    @Test
    void aFullBacklogRefusesWithEnobufs() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 13, 1), 0);
        connect(a, client, B, 13, 1, 1, "", 0);
        waitFor(() -> b.kept() == 1);
        expect(client, ControlProtocol.OP_CM_CONNECT, connect(a, client, B, 13, 2, 2, "", 0), Errno.ENOBUFS);
    }

    @Test
    void aBindReservesTheServiceId() throws Exception {
        Session s1 = new Session();
        Session s2 = new Session();
        expect(s1, ControlProtocol.OP_CM_BIND, bind(b, s1, 21), 0);
        expect(s2, ControlProtocol.OP_CM_BIND, bind(b, s2, 21), Errno.EADDRINUSE);
        expect(s1, ControlProtocol.OP_CM_BIND, bind(b, s1, 21), Errno.EADDRINUSE);
        expect(s2, ControlProtocol.OP_CM_LISTEN, listen(b, s2, 21, 0), Errno.EADDRINUSE);
        expect(s1, ControlProtocol.OP_CM_BIND, bind(b, s1, 0), Errno.EINVAL);
        expect(s1, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, s1, 10), Errno.EINVAL); // bound, not listening
        assertThat(b.bound()).isEqualTo(1);
        assertThat(b.listening()).isZero();
        expect(s1, ControlProtocol.OP_CM_LISTEN, listen(b, s1, 21, 0), 0);
        assertThat(b.bound()).isZero();
        assertThat(b.listening()).isEqualTo(1);
        expect(s1, ControlProtocol.OP_CM_LISTEN, listen(b, s1, 21, 0), Errno.EADDRINUSE);
        // a listened service cannot be bound; an unbound one is free again
        expect(s2, ControlProtocol.OP_CM_BIND, bind(b, s2, 21), Errno.EADDRINUSE);
        expect(s2, ControlProtocol.OP_CM_BIND, bind(b, s2, 22), 0);
        expect(s1, ControlProtocol.OP_CM_UNLISTEN, unlisten(b, s1, 22), Errno.ENOENT);
        expect(s2, ControlProtocol.OP_CM_UNLISTEN, unlisten(b, s2, 22), 0);
        expect(s1, ControlProtocol.OP_CM_BIND, bind(b, s1, 22), 0);
        b.onSessionClosed(s1);
        assertThat(b.bound()).isZero();
        assertThat(b.listening()).isZero();
        expect(s2, ControlProtocol.OP_CM_LISTEN, listen(b, s2, 21, 0), 0);
    }

    /** SERVER binds SERVICE at B, and CLIENT's connect to it (QPN, private data PD) is held there: its seq. */
    private int heldConnect(Session server, Session client, int service, int qpn, String pd) throws Exception {
        expect(server, ControlProtocol.OP_CM_BIND, bind(b, server, service), 0);
        int conn = connect(a, client, B, service, qpn, 0x25, pd, 0);
        waitFor(() -> b.held() == 1);
        assertThat(b.held()).as("held at B").isEqualTo(1);
        assertThat(client.responses).as("no answer while held").isEmpty();
        return conn;
    }

    @Test
    void aRequestForABoundServiceIsHeldUntilItsListen() throws Exception {
        Session server = new Session();
        Session client = new Session();
        int conn = heldConnect(server, client, 23, 0x15, "early");
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 23, 0), 0);
        assertThat(b.held()).isZero();
        Response req = expect(server, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, server, 5000), 0);
        assertThat(req.i(CmRequestDescriptor.OFF_QPN)).isEqualTo(0x15);
        assertThat(req.privateData(CmRequestDescriptor.OFF_PRIVATE_DATA_LEN, CmRequestDescriptor.OFF_PRIVATE_DATA))
                .isEqualTo("early");
        int acc = accept(b, server, req.i(CmRequestDescriptor.OFF_REQUEST), 0x35, 0x45, "late welcome");
        Response r = expect(client, ControlProtocol.OP_CM_CONNECT, conn, 0);
        assertThat(r.i(CmConnectRespDescriptor.OFF_RESULT)).isEqualTo(ControlProtocol.CM_ACCEPTED);
        assertThat(r.i(CmConnectRespDescriptor.OFF_QPN)).isEqualTo(0x35);
        expect(server, ControlProtocol.OP_CM_ACCEPT, acc, 0);
        assertThat(b.kept()).isZero();
    }

    @Test
    void heldRequestsAreRefusedWhenTheBindGoesAway() throws Exception {
        Session server = new Session();
        Session client = new Session();
        int c1 = heldConnect(server, client, 24, 1, "");
        expect(server, ControlProtocol.OP_CM_UNLISTEN, unlisten(b, server, 24), 0);
        expect(client, ControlProtocol.OP_CM_CONNECT, c1, Errno.ECONNREFUSED); // NO_LISTENER
        int c2 = heldConnect(server, client, 24, 2, "");
        b.onSessionClosed(server);
        expect(client, ControlProtocol.OP_CM_CONNECT, c2, Errno.ECONNREFUSED);
        assertThat(b.kept()).isZero();
        assertThat(b.bound()).isZero();
    }

    @Test
    void aHeldRequestIsRefusedAtTheEndOfTheHoldTime() throws Exception {
        ServiceTable shortHold = new ServiceTable(cmB, 2000, 100);
        cmB.serviceHandler(shortHold);
        try {
            Session server = new Session();
            Session client = new Session();
            expect(server, ControlProtocol.OP_CM_BIND, bind(shortHold, server, 25), 0);
            expect(
                    client,
                    ControlProtocol.OP_CM_CONNECT,
                    connect(a, client, B, 25, 1, 1, "", 60_000),
                    Errno.ECONNREFUSED);
            assertThat(shortHold.kept()).isZero();
            assertThat(shortHold.bound()).as("the bind stays").isEqualTo(1);
        } finally {
            shortHold.close();
        }
    }

    @Test
    void aHeldRequestWithdrawnByItsRequesterIsDropped() throws Exception {
        Session server = new Session();
        Session client = new Session();
        heldConnect(server, client, 26, 1, "");
        a.onSessionClosed(client);
        waitFor(() -> b.held() == 0);
        assertThat(b.kept()).isZero();
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 26, 0), 0);
        expect(server, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, server, 0), Errno.EAGAIN);
    }

    @Test
    void heldRequestsAreBounded() throws Exception {
        Session server = new Session();
        Session client = new Session();
        expect(server, ControlProtocol.OP_CM_BIND, bind(b, server, 27), 0);
        for (int i = 0; i < ServiceTable.MAX_HELD; i++) {
            connect(a, client, B, 27, i + 1, 1, "", 0);
        }
        waitFor(() -> b.held() == ServiceTable.MAX_HELD);
        assertThat(b.held()).isEqualTo(ServiceTable.MAX_HELD);
        Session other = new Session(); // a connection has at most MAX_CONNECTS outstanding
        expect(other, ControlProtocol.OP_CM_CONNECT, connect(a, other, B, 27, 999, 1, "", 0), Errno.ENOBUFS);
        // a backlog of 2 at the listen takes the first two in arrival order; the rest are BUSY
        expect(server, ControlProtocol.OP_CM_LISTEN, listen(b, server, 27, 2), 0);
        for (int i = 0; i < ServiceTable.MAX_HELD - 2; i++) {
            assertThat(client.await().status()).isEqualTo(Errno.ENOBUFS);
        }
        assertThat(server.responses).isEmpty();
        assertThat(b.kept()).isEqualTo(2);
        for (int i = 0; i < 2; i++) {
            Response req = expect(server, ControlProtocol.OP_CM_GET_REQUEST, getRequest(b, server, 0), 0);
            assertThat(req.i(CmRequestDescriptor.OFF_QPN)).isEqualTo(i + 1);
        }
    }

    private static void waitFor(java.util.function.BooleanSupplier c) throws InterruptedException {
        for (int i = 0; i < 500 && !c.getAsBoolean(); i++) {
            Thread.sleep(10);
        }
    }
}
