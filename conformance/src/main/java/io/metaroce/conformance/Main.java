package io.metaroce.conformance;

import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code mrce-conformance --target IP[:PORT] [--cm-port N] [--agent HOST:PORT] [--local IP]
 * [--report DIR] [--only PREFIX]}: runs every case against the implementation at IP and prints
 * one line per case and a summary; exit 0 iff every case passed, 2 on a usage error.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        System.exit(run(args));
    }

    static int run(String[] args) throws Exception {
        String target = null;
        int cmPort = 4792;
        String agentAt = null;
        String localIp = null;
        Path reportDir = Path.of("mrce-conformance-report");
        String only = "";
        for (int i = 0; i < args.length; i++) {
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--target" -> target = v;
                case "--cm-port" -> cmPort = Integer.parseInt(v);
                case "--agent" -> agentAt = v;
                case "--local" -> localIp = v;
                case "--report" -> reportDir = Path.of(v);
                case "--only" -> only = v;
                case "-h", "--help" -> {
                    System.out.println("usage: mrce-conformance --target IP[:PORT] [--cm-port N] [--agent HOST:PORT]"
                            + " [--local IP] [--report DIR] [--only PREFIX]");
                    return 0;
                }
                default -> {
                    System.err.println("mrce-conformance: unknown argument " + args[i]);
                    return 2;
                }
            }
            i++;
        }
        if (target == null) {
            System.err.println("mrce-conformance: --target IP[:PORT] is required");
            return 2;
        }
        int colon = target.indexOf(':');
        InetAddress targetIp = InetAddress.getByName(colon < 0 ? target : target.substring(0, colon));
        int dataPort = colon < 0 ? 4793 : Integer.parseInt(target.substring(colon + 1));
        InetAddress local = localIp != null ? InetAddress.getByName(localIp) : routeSource(targetIp, dataPort);
        String agentHost = targetIp.getHostAddress();
        int agentPort = 4795;
        if (agentAt != null) {
            int c = agentAt.lastIndexOf(':');
            agentHost = agentAt.substring(0, c);
            agentPort = Integer.parseInt(agentAt.substring(c + 1));
        }
        String where = targetIp.getHostAddress() + ":" + dataPort;
        Report report = new Report();
        try (AgentClient agent = new AgentClient(agentHost, agentPort);
                WirePeer wire = new WirePeer(local, dataPort, new InetSocketAddress(targetIp, dataPort));
                CmPeer cm = new CmPeer(local, cmPort)) {
            cm.recorder = wire;
            Suite suite = new Suite(agent, wire, cm, targetIp, cmPort);
            List<Suite.Case> cases = Suite.cases();
            for (Suite.Case c : cases) {
                if (!c.id().startsWith(only)) {
                    continue;
                }
                int mark = wire.mark();
                long t0 = System.nanoTime();
                String failure = null;
                try {
                    c.body().run(suite);
                } catch (AssertionError e) {
                    failure = e.getMessage();
                } catch (Exception | Error e) {
                    failure = "error: " + e;
                } finally {
                    suite.closeAll();
                }
                double secs = (System.nanoTime() - t0) / 1e9;
                Report.Result r = new Report.Result(
                        c.id(),
                        c.spec(),
                        failure == null,
                        failure == null ? "" : failure,
                        secs,
                        wire.framesSince(mark));
                report.add(r);
                System.out.printf(
                        "%s %-42s %6.3fs  %s%s%n",
                        r.passed() ? "PASS" : "FAIL",
                        c.id(),
                        secs,
                        c.spec(),
                        r.passed()
                                ? ""
                                : "\n     " + failure + "\n     packets: " + reportDir.resolve(Report.pcapName(r)));
            }
        }
        report.write(reportDir, where);
        System.out.println(report.summary(where));
        return report.failed() == 0 ? 0 : 1;
    }

    /** The local address the kernel would send from to reach the target. */
    private static InetAddress routeSource(InetAddress target, int port) throws Exception {
        try (DatagramSocket s = new DatagramSocket()) {
            s.connect(target, port);
            return s.getLocalAddress();
        }
    }
}
