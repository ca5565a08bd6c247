package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The service messages between two real managers on 127.0.0.1 and 127.0.0.2. */
class ConnectionManagerServiceTest {
    static final int A = ConnectionManagerTest.A;
    static final int B = ConnectionManagerTest.B;
    /** A peer silent for 300 ms is lost: only for the test about losing a peer. */
    static final ConnectionManager.Config FAST = new ConnectionManager.Config(24793, 50, 300, 2000);
    /** Everything else: no peer is lost in the middle of a test when the machine stalls a JVM. */
    static final ConnectionManager.Config STEADY = new ConnectionManager.Config(24793, 50, 30_000, 2000);

    static final byte[] GID_A = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 127, 0, 0, 1};
    static final byte[] GID_B = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 127, 0, 0, 2};

    /** Keeps requests for service 7, refuses others; records what it sees. */
    static final class Services implements ConnectionManager.ServiceHandler {
        final BlockingQueue<CmMessage.SvcRequest> requests = new LinkedBlockingQueue<>();
        final BlockingQueue<String> cancels = new LinkedBlockingQueue<>();
        volatile int peer;

        @Override
        public int onServiceRequest(int peerIp, CmMessage.SvcRequest r) {
            if (r.serviceId() != 7) {
                return CmMessage.SVC_NO_LISTENER;
            }
            peer = peerIp;
            requests.add(r);
            return 0;
        }

        @Override
        public void onServiceCancel(int peerIp, int requestId, int reason) {
            cancels.add(requestId + " " + reason);
        }
    }

    private ConnectionManager a;
    private ConnectionManager b;
    private final Services sb = new Services();

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    private void both(ConnectionManager.Config ca, ConnectionManager.Config cb) throws Exception {
        a = ConnectionManager.start(A, ca, new ConnectionManagerTest.FakeDaemon());
        b = ConnectionManager.start(B, cb, new ConnectionManagerTest.FakeDaemon());
        b.serviceHandler(sb);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void acceptCarriesBothSidesEndpointsAndPrivateData() throws Exception {
        both(STEADY, STEADY);
        CompletableFuture<CmMessage> call = a.requestService(B, 7, 0x11, 0x222, GID_A, bytes("from A"), 5000);
        CmMessage.SvcRequest r = sb.requests.poll(5, TimeUnit.SECONDS);
        assertThat(r).isNotNull();
        assertThat(sb.peer).isEqualTo(A);
        assertThat(r.serviceId()).isEqualTo(7);
        assertThat(r.qpn()).isEqualTo(0x11);
        assertThat(r.psn()).isEqualTo(0x222);
        assertThat(r.gid()).isEqualTo(GID_A);
        assertThat(new String(r.privateData(), StandardCharsets.US_ASCII)).isEqualTo("from A");
        assertThat(call).isNotDone();
        CompletableFuture<Void> accepted = b.acceptService(A, r.requestId(), 0x33, 0x444, GID_B, bytes("from B"));
        CmMessage answer = call.get(5, TimeUnit.SECONDS);
        assertThat(answer).isInstanceOf(CmMessage.SvcReply.class);
        CmMessage.SvcReply reply = (CmMessage.SvcReply) answer;
        assertThat(reply.qpn()).isEqualTo(0x33);
        assertThat(reply.psn()).isEqualTo(0x444);
        assertThat(reply.gid()).isEqualTo(GID_B);
        assertThat(new String(reply.privateData(), StandardCharsets.US_ASCII)).isEqualTo("from B");
        accepted.get(5, TimeUnit.SECONDS); // the requester's SVC_READY arrived
        // answered: a second accept of the same request fails
        assertThatThrownBy(() -> b.acceptService(A, r.requestId(), 1, 1, GID_B, new byte[0])
                        .get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("is gone");
    }

    @Test
    void rejectCarriesPrivateDataAndNoListenerIsImmediate() throws Exception {
        both(STEADY, STEADY);
        CompletableFuture<CmMessage> call = a.requestService(B, 7, 1, 2, GID_A, new byte[0], 5000);
        CmMessage.SvcRequest r = sb.requests.poll(5, TimeUnit.SECONDS);
        b.rejectService(A, r.requestId(), CmMessage.SVC_REJECTED, bytes("not today"));
        CmMessage.SvcReject rej = (CmMessage.SvcReject) call.get(5, TimeUnit.SECONDS);
        assertThat(rej.reason()).isEqualTo(CmMessage.SVC_REJECTED);
        assertThat(new String(rej.privateData(), StandardCharsets.US_ASCII)).isEqualTo("not today");

        CmMessage none =
                a.requestService(B, 8, 1, 2, GID_A, new byte[0], 60_000).get(5, TimeUnit.SECONDS);
        assertThat(none).isEqualTo(new CmMessage.SvcReject(2, CmMessage.SVC_NO_LISTENER, new byte[0]));
    }

    @Test
    void aRequesterThatTimesOutOrCancelsWithdrawsItsRequest() throws Exception {
        both(STEADY, STEADY);
        CompletableFuture<CmMessage> call = a.requestService(B, 7, 1, 2, GID_A, new byte[0], 300);
        CmMessage.SvcRequest r = sb.requests.poll(5, TimeUnit.SECONDS);
        assertThatThrownBy(() -> call.get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("within 300 ms");
        assertThat(sb.cancels.poll(5, TimeUnit.SECONDS)).isEqualTo(r.requestId() + " " + CmMessage.SVC_TIMEOUT);
        assertThatThrownBy(() -> b.acceptService(A, r.requestId(), 1, 1, GID_B, new byte[0])
                        .get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .satisfies(e -> assertThat(((CmRejectedException) e).reason()).isEqualTo(CmMessage.REASON_DESTROYED));

        CompletableFuture<CmMessage> call2 = a.requestService(B, 7, 1, 2, GID_A, new byte[0], 60_000);
        CmMessage.SvcRequest r2 = sb.requests.poll(5, TimeUnit.SECONDS);
        call2.cancel(false);
        assertThat(sb.cancels.poll(5, TimeUnit.SECONDS)).isEqualTo(r2.requestId() + " " + CmMessage.SVC_CANCELLED);
    }

    @Test
    void anAcceptWhoseRequesterGaveUpFails() throws Exception {
        both(STEADY, STEADY);
        CompletableFuture<CmMessage> call = a.requestService(B, 7, 1, 2, GID_A, new byte[0], 60_000);
        CmMessage.SvcRequest r = sb.requests.poll(5, TimeUnit.SECONDS);
        call.cancel(false);
        assertThat(sb.cancels.poll(5, TimeUnit.SECONDS)).isNotNull();
        assertThatThrownBy(() -> b.acceptService(A, r.requestId(), 1, 1, GID_B, new byte[0])
                        .get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("is gone");
    }

    @Test
    void aLostPeerFailsBothSides() throws Exception {
        both(FAST, FAST);
        CompletableFuture<CmMessage> call = a.requestService(B, 7, 1, 2, GID_A, new byte[0], 60_000);
        CmMessage.SvcRequest r = sb.requests.poll(5, TimeUnit.SECONDS);
        assertThat(r).isNotNull();
        a.close();
        a = null;
        // B loses A within its peer timeout: the kept request is cancelled
        assertThat(sb.cancels.poll(5, TimeUnit.SECONDS)).isEqualTo(r.requestId() + " " + CmMessage.SVC_CANCELLED);
        assertThatThrownBy(() -> call.get(5, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void noPeerDaemonTimesOut() throws Exception {
        a = ConnectionManager.start(A, STEADY, new ConnectionManagerTest.FakeDaemon());
        assertThatThrownBy(() ->
                        a.requestService(B, 7, 1, 2, GID_A, new byte[0], 400).get(5, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(CmRejectedException.class)
                .hasMessageContaining("no answer from 127.0.0.2 for service 7");
    }

    @Test
    void badArgumentsAreRefused() throws Exception {
        a = ConnectionManager.start(A, STEADY, new ConnectionManagerTest.FakeDaemon());
        assertThatThrownBy(() -> a.requestService(B, 0, 1, 2, GID_A, new byte[0], 400))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.requestService(B, 7, 1 << 24, 2, GID_A, new byte[0], 400))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.requestService(B, 7, 1, 2, GID_A, new byte[193], 400))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
