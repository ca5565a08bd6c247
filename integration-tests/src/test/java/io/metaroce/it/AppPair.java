package io.metaroce.it;

import java.time.Duration;

/** Waiting for the server and the client of one test application, each in its own host. */
final class AppPair {
    private AppPair() {}

    /** Exit codes of both sides; -1 for a server killed because its client had failed. */
    record Exits(int server, int client) {}

    /**
     * Waits for the client (up to {@code clientTimeout}), then the server. A server left waiting by
     * a failed client is killed after a few seconds and reported with exit -1, so the failure shows
     * the client's own error. A side that outlives its wait fails with the other side's output and
     * the fabric's diagnostics.
     */
    static Exits await(NetnsFabric fabric, Proc server, Proc client, Duration clientTimeout) {
        int clientExit = waitOrExplain(fabric, client, server, clientTimeout);
        int serverExit;
        if (clientExit == 0) {
            serverExit = waitOrExplain(fabric, server, client, Duration.ofSeconds(30));
        } else {
            try {
                serverExit = server.waitFor(Duration.ofSeconds(5));
            } catch (AssertionError stillWaiting) {
                serverExit = -1;
            }
        }
        return new Exits(serverExit, clientExit);
    }

    private static int waitOrExplain(NetnsFabric f, Proc p, Proc other, Duration timeout) {
        Integer exit = p.tryWait(timeout);
        if (exit != null) {
            return exit;
        }
        // The daemons' view (their QPs and paths) while the stuck side still runs, then kill it.
        String diagnostics = f.transportDiagnostics();
        try {
            return p.waitFor(Duration.ZERO);
        } catch (AssertionError e) {
            throw new AssertionError(
                    e.getMessage() + "\n--- " + other.name() + " output:\n" + other.output() + "\n" + diagnostics, e);
        }
    }
}
