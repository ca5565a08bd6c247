package io.metaroce.verbs.examples;

import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.PortAttributes;
import io.metaroce.verbs.Verbs;
import io.metaroce.verbs.examples.netty.NettyEcho;
import io.metaroce.verbs.examples.netty.NettyFlow;
import java.util.Arrays;

/**
 * {@code bin/jverbs EXAMPLE [options]}: {@code rc-pingpong}, {@code write-bw}, {@code devices}.
 *
 * <p><b>Thread safety:</b> a command-line entry point, run from main.
 */
public final class Main {

    private Main() {}

    public static void main(String[] args) {
        if (args.length == 0) {
            usage();
            System.exit(2);
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        int rc = switch (args[0]) {
            case "rc-pingpong" -> new RcPingPong(System.out, System.err).run(rest);
            case "write-bw" -> new WriteBw(System.out, System.err).run(rest);
            case "devices" -> devices();
            case "rpc-server" -> io.metaroce.verbs.examples.rpc.RpcExample.server(rest);
            case "rpc-client" -> io.metaroce.verbs.examples.rpc.RpcExample.client(rest);
            case "netty-echo-server" -> netty(args[0], () -> NettyEcho.server(rest));
            case "netty-echo-client" -> netty(args[0], () -> NettyEcho.client(rest));
            case "netty-flow-server" -> netty(args[0], () -> NettyFlow.server(rest));
            case "netty-flow-client" -> netty(args[0], () -> NettyFlow.client(rest));
            default -> {
                usage();
                yield 2;
            }
        };
        System.out.flush();
        System.exit(rc);
    }

    private static void usage() {
        System.err.println("usage: jverbs EXAMPLE [options] [server]");
        System.err.println("  rc-pingpong   ibv_rc_pingpong in Java (same options and output; interoperates with it)");
        System.err.println("  write-bw      RDMA WRITE bandwidth between two jverbs");
        System.err.println(
                "  rpc-server    request/response over endpoints: -d dev -p service [-n requests, then exit]");
        System.err.println(
                "  rpc-client    -d dev -p service -t threads -c calls-per-thread -e endpoints -w window [--jfr] server");
        System.err.println(
                "  netty-echo-server  a Netty echo over RDMA channels (--tcp: over TCP epoll): -d dev -p service");
        System.err.println("  netty-echo-client  -d dev -p service -n messages -s size -b burst [--tcp] server");
        System.err.println(
                "  netty-flow-server  a slow reader (auto-read off) over an RDMA channel: -d dev -p service -t bytes -r burst");
        System.err.println("  netty-flow-client  pushes -t bytes while writable: -d dev -p service -t bytes server");
        System.err.println("  devices       the devices, their first port, and where the verbs bind");
    }

    /** Runs a Netty example; what it throws is printed, exit status 1. */
    private static int netty(String name, java.util.concurrent.Callable<Integer> example) {
        try {
            return example.call();
        } catch (Exception e) {
            System.err.println(name + ": " + e);
            return 1;
        }
    }

    private static int devices() {
        System.out.println("ibv_open_device binds to "
                + Verbs.definingObject("ibv_open_device").orElse("?"));
        for (Device d : Device.list()) {
            System.out.printf("%-16s node GUID %s%n", d.name(), d.guidString());
            try (Context ctx = d.open()) {
                PortAttributes p = ctx.queryPort(1);
                System.out.printf(
                        "    port 1: %s, %s, active MTU %s, LID 0x%04x, GID[0] %s%n",
                        p.isActive() ? "ACTIVE" : "state " + p.state(),
                        p.isEthernet() ? "Ethernet" : "InfiniBand",
                        p.activeMtu() == null ? "?" : p.activeMtu().bytes(),
                        p.lid(),
                        ctx.queryGid(1, 0));
            } catch (RuntimeException e) {
                System.out.println("    " + e.getMessage());
            }
        }
        return 0;
    }
}
