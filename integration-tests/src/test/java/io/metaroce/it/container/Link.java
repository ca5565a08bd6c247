package io.metaroce.it.container;

import io.metaroce.it.Env;
import io.metaroce.it.Sh;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One veth link of a {@link ContainerFabric}, between two network namespaces (a leaf's, a
 * container's). Breakable from the test, on both ends' egress so both directions suffer:
 * random loss or a blackhole for MetaRoCE's UDP (the tc-BPF drop programs of
 * integration-tests/bpf, port 4793), a rate limit (TBF), link down/up. Counts what crossed it.
 */
final class Link {

    /** The share of MetaRoCE's UDP packets the drop program discards (integration-tests/bpf builds these). */
    enum Loss {
        PCT_1("drop_1pct.o"),
        PCT_5("drop_5pct.o"),
        BLACKHOLE("drop_100pct.o");

        final String object;

        Loss(String object) {
            this.object = object;
        }
    }

    /** One end: how to run a host binary in its namespace, and the interface there. */
    record End(String where, List<String> netns, String ifname) {
        String[] cmd(String... args) {
            List<String> full = new ArrayList<>(netns);
            full.addAll(List.of(args));
            return full.toArray(String[]::new);
        }
    }

    private final String name;
    private final End a;
    private final End b;

    Link(String name, End a, End b) {
        this.name = name;
        this.a = a;
        this.b = b;
    }

    String name() {
        return name;
    }

    End a() {
        return a;
    }

    End b() {
        return b;
    }

    /** Drops MetaRoCE's UDP packets at {@code loss}'s rate, both ways (replacing any drop program). */
    void loss(Loss loss) {
        Path obj = Env.bpfDir().resolve(loss.object);
        if (!Files.isRegularFile(obj)) {
            throw new IllegalStateException(obj + " is missing: the integration-tests build makes it");
        }
        for (End e : List.of(a, b)) {
            Sh.check(e.cmd("tc", "qdisc", "replace", "dev", e.ifname(), "clsact"));
            Sh.check(e.cmd(
                    "tc",
                    "filter",
                    "replace",
                    "dev",
                    e.ifname(),
                    "egress",
                    "pref",
                    "1",
                    "handle",
                    "1",
                    "bpf",
                    "da",
                    "obj",
                    obj.toString(),
                    "sec",
                    "tc"));
        }
    }

    /** Drops every MetaRoCE UDP packet, both ways. */
    void blackhole() {
        loss(Loss.BLACKHOLE);
    }

    /** Removes loss and blackhole (the clsact qdisc), keeps a rate limit. */
    void clearLoss() {
        for (End e : List.of(a, b)) {
            Sh.runOrKill(e.cmd("tc", "qdisc", "del", "dev", e.ifname(), "clsact"));
        }
    }

    /**
     * Limits the link to {@code rate} (tc syntax, e.g. "50mbit") each way with a token bucket
     * filter: a slow link, not a lossy one (the queue holds up to {@code latencyMs} of traffic).
     */
    void rate(String rate, int latencyMs) {
        for (End e : List.of(a, b)) {
            Sh.check(e.cmd(
                    "tc",
                    "qdisc",
                    "replace",
                    "dev",
                    e.ifname(),
                    "root",
                    "tbf",
                    "rate",
                    rate,
                    "burst",
                    "32kb",
                    "latency",
                    latencyMs + "ms"));
        }
    }

    /** Removes a rate limit. */
    void clearRate() {
        for (End e : List.of(a, b)) {
            Sh.runOrKill(e.cmd("tc", "qdisc", "del", "dev", e.ifname(), "root"));
        }
    }

    /** Back to a healthy link: no loss, no rate limit, up. */
    void clear() {
        clearLoss();
        clearRate();
        Sh.check(a.cmd("ip", "link", "set", a.ifname(), "up"));
    }

    /** Takes the link down at end A (end B loses its carrier). */
    void down() {
        Sh.check(a.cmd("ip", "link", "set", a.ifname(), "down"));
    }

    void up() {
        Sh.check(a.cmd("ip", "link", "set", a.ifname(), "up"));
    }

    /** Packets sent into the link at end A (toward B): what crossed, since drops happen before the count. */
    long txPacketsAtoB() {
        return txPackets(a);
    }

    /** Packets sent into the link at end B (toward A). */
    long txPacketsBtoA() {
        return txPackets(b);
    }

    private static long txPackets(End e) {
        return txPackets(Sh.check(e.cmd("cat", "/proc/net/dev")), e.ifname());
    }

    /**
     * An interface's transmitted packets from /proc/net/dev as read in its namespace (/proc/net is
     * the reader's namespace's, unlike a /sys mounted for another one).
     */
    static long txPackets(String procNetDev, String ifname) {
        for (String line : procNetDev.lines().toList()) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).strip().equals(ifname)) {
                String[] f = line.substring(colon + 1).strip().split("\\s+");
                return Long.parseLong(
                        f[9]); // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets
            }
        }
        throw new IllegalStateException("no " + ifname + " in /proc/net/dev:\n" + procNetDev);
    }

    @Override
    public String toString() {
        return name + " (" + a.where() + " " + a.ifname() + " = " + b.where() + " " + b.ifname() + ")";
    }
}
