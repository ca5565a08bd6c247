package io.metaroce.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ServerSocket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link TcpConnectionService}'s listener on loopback, no device needed (the QP is not touched
 * before a peer connects): it binds at listen, its accept times out, and close wakes an accept
 * in progress and frees the port.
 */
class TcpListenerTest {

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void acceptWithATimeoutGivesUpWithSocketTimeoutException() throws Exception {
        int port = freePort();
        try (ConnectionService.Listener l = new TcpConnectionService().listen(port)) {
            assertThatThrownBy(() -> l.accept(null, ConnectOptions.defaults(0), Duration.ofMillis(20)))
                    .isInstanceOf(SocketTimeoutException.class)
                    .hasMessageContaining("port " + port);
        }
    }

    private static boolean inAccept(Thread t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().equals(ServerSocket.class.getName())
                    && e.getMethodName().equals("implAccept")) {
                return true;
            }
        }
        return false;
    }

    /** An accept on a listener already closed says the listener closed. */
    @Test
    void anAcceptAfterCloseSaysTheListenerClosed() throws Exception {
        int port = freePort();
        ConnectionService.Listener l = new TcpConnectionService().listen(port);
        l.close();
        assertThatThrownBy(() -> l.accept(null, ConnectOptions.defaults(0), Duration.ofMillis(20)))
                .isInstanceOf(SocketException.class)
                .hasMessage("listener on port " + port + " closed");
    }

    @Test
    void closeWakesAnAcceptInProgressAndFreesThePort() throws Exception {
        int port = freePort();
        ConnectionService.Listener l = new TcpConnectionService().listen(port);
        AtomicReference<Throwable> end = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        Thread acceptor = Thread.ofPlatform().start(() -> {
            started.countDown();
            try {
                l.accept(null, ConnectOptions.defaults(0));
                end.set(new AssertionError("accept returned"));
            } catch (Throwable t) {
                end.set(t);
            }
        });
        assertThat(started.await(60, TimeUnit.SECONDS)).isTrue();
        // Close only once the thread is blocked inside the accept, so the test shows what it
        // names (a close before the accept is the other test's case).
        while (!inAccept(acceptor) && acceptor.isAlive()) {
            Thread.sleep(1);
        }
        l.close();
        acceptor.join(60_000);
        assertThat(acceptor.isAlive()).as("the close woke the accept").isFalse();
        assertThat(end.get()).isInstanceOf(SocketException.class).hasMessage("listener on port " + port + " closed");
        assertThatThrownBy(() -> l.accept(null, ConnectOptions.defaults(0))).isInstanceOf(SocketException.class);
        try (ConnectionService.Listener again = new TcpConnectionService().listen(port)) {
            assertThat(again).isNotNull(); // the port is free again
        }
    }
}
