package io.metaroce.nic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.metaroce.nic.transport.TransportSettings;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** mrce-nicd's options become one checked, immutable {@link DaemonConfig}. */
class NicDaemonConfigTest {

    private static DaemonConfig config(String... args) {
        NicDaemon d = new NicDaemon();
        DaemonConfig.withNamedValues(new CommandLine(d)).parseArgs(args);
        return d.config();
    }

    private static CommandLine.ParameterException parseError(String... args) {
        try {
            DaemonConfig.withNamedValues(new CommandLine(new NicDaemon())).parseArgs(args);
        } catch (CommandLine.ParameterException e) {
            return e;
        }
        throw new AssertionError("accepted " + String.join(" ", args));
    }

    @Test
    void defaultsAreTheDocumentedOnes() {
        DaemonConfig c = config("--ifname", "eth0");
        assertThat(c.port()).isEqualTo(DaemonConfig.PortKind.UDP);
        assertThat(c.threading()).isEqualTo(DaemonConfig.Threading.AUTO);
        assertThat(c.udpPort()).isEqualTo(4793);
        assertThat(c.entropyPorts()).isEqualTo(64);
        TransportSettings t = c.transport();
        assertThat(t.baseline()).isFalse();
        assertThat(t.pathsPerQp()).isEqualTo(TransportSettings.DEFAULT_PATHS);
        assertThat(t.entropyPorts()).isEqualTo(64);
        assertThat(t.rtoMinNs()).isEqualTo(10_000_000L);
        assertThat(t.tlpMinNs()).as("half the RTO floor").isEqualTo(5_000_000L);
        assertThat(t.ccSlackMinNs()).isEqualTo(1_000_000L);
        assertThat(t.qpWindowGain()).isEqualTo(2);
        assertThat(t.rtoInitialNs()).as("at least twice the floor").isEqualTo(20_000_000L);
        assertThat(c.cm().port()).isEqualTo(4792);
        assertThat(c.cm().on()).isTrue();
        assertThat(c.idle()).isEqualTo(new DaemonConfig.Idle(DaemonConfig.IdleKind.BACKOFF, 20, 0));
        assertThat(c.metricsPort()).isNull();
        assertThat(c.socketPerms()).isEqualTo("rw-rw-rw-");
    }

    /** --addr takes an IPv4 or an IPv6 literal; anything else is refused with the option's name. */
    @Test
    void addrTakesIpv4AndIpv6Literals() {
        assertThat(config("--ifname", "eth0", "--addr", "198.18.0.1").addr()).isEqualTo("198.18.0.1");
        assertThat(config("--ifname", "eth0", "--addr", "2001:db8::1", "--port", "xdp")
                        .addr())
                .isEqualTo("2001:db8::1");
        assertThat(io.metaroce.abi.IpAddr.isV6(NicDaemon.parseAddr("2001:db8::1")))
                .isTrue();
        assertThat(io.metaroce.abi.IpAddr.toString(NicDaemon.parseAddr("2001:db8::1")))
                .isEqualTo("2001:db8:0:0:0:0:0:1");
        assertThat(NicDaemon.parseAddr("198.18.0.1")).isEqualTo(0xc6120001);
        assertThat(NicDaemon.parseAddr("::ffff:198.18.0.1"))
                .as("IPv4-mapped: the IPv4 address")
                .isEqualTo(0xc6120001);
        for (String bad : new String[] {
            "eth0", "198.18.0", "2001:db8::1::2", "ff02::1", "::", "fe80::1", "0.0.0.0", "240.0.0.1", "example.org"
        }) {
            assertThatThrownBy(() -> config("--ifname", "eth0", "--addr", bad))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("--addr");
        }
    }

    @Test
    void enumsTakeTheirCommandLineNames() {
        DaemonConfig c = config(
                "--ifname",
                "eth0",
                "--port",
                "xdp-native",
                "--transport",
                "baseline",
                "--paths",
                "8",
                "--threading",
                "shared",
                "--idle-strategy",
                "busy-spin",
                "--entropy-ports",
                "0");
        assertThat(c.port()).isEqualTo(DaemonConfig.PortKind.XDP_NATIVE);
        assertThat(c.port().cliName()).isEqualTo("xdp-native");
        assertThat(c.threading()).isEqualTo(DaemonConfig.Threading.SHARED);
        assertThat(c.idle().kind()).isEqualTo(DaemonConfig.IdleKind.BUSY_SPIN);
        assertThat(c.transport().baseline()).isTrue();
        assertThat(c.transport().pathsPerQp()).as("the baseline has one path").isEqualTo(1);
        assertThat(c.transport().transportName()).isEqualTo("baseline");
        assertThat(c.entropyPorts()).as("the port sends from the data port").isZero();
        assertThat(c.transport().entropyPorts())
                .as("one entropy class for the transport")
                .isEqualTo(1);
        assertThat(parseError("--ifname", "eth0", "--port", "tcp"))
                .hasMessageContaining("--port")
                .hasMessageContaining("'tcp' is not one of udp, xdp, xdp-native");
        assertThat(parseError("--ifname", "eth0", "--transport", "rxe"))
                .hasMessageContaining("--transport")
                .hasMessageContaining("'rxe' is not one of metaroce, baseline");
        assertThat(parseError("--ifname", "eth0", "--idle-strategy", "nap"))
                .hasMessageContaining("--idle-strategy")
                .hasMessageContaining("'nap' is not one of backoff, busy-spin, yield");
        assertThat(parseError("--ifname", "eth0", "--threading", "many")).hasMessageContaining("--threading");
    }

    @Test
    void declaredRangesAreChecked() {
        assertThatThrownBy(() -> config("--ifname", "eth0", "--paths", "0")).hasMessage("--paths must be 1..256");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--paths", "257")).hasMessage("--paths must be 1..256");
        assertThat(config("--ifname", "eth0", "--paths", "256").transport().paths())
                .isEqualTo(256);
        assertThatThrownBy(() -> config("--ifname", "eth0", "--udp-port", "0"))
                .hasMessage("--udp-port must be 1..65535");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--user-max-qp", "-1"))
                .hasMessage("--user-max-qp must be 0 or more");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--rto-min-us", "100001"))
                .hasMessage("--rto-min-us must be 1..100000");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--idle-spins", "-1"))
                .hasMessage("--idle-spins must be 0 or more");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--metrics-port", "70000"))
                .hasMessage("--metrics-port must be 0..65535");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--qp-window-gain", "0"))
                .hasMessage("--qp-window-gain must be 1..16");
        assertThat(config("--ifname", "eth0", "--qp-window-gain", "4")
                        .transport()
                        .qpWindowGain())
                .isEqualTo(4);
    }

    @Test
    void optionsThatDependOnEachOtherAreChecked() {
        assertThatThrownBy(() -> config("--ifname", "eth0", "--rto-min-us", "1000", "--tlp-min-us", "2000"))
                .hasMessageContaining("--tlp-min-us must be 1..--rto-min-us");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--cm-heartbeat-ms", "500", "--cm-peer-timeout-ms", "999"))
                .hasMessageContaining("two heartbeats");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--udp-port", "65000", "--entropy-ports", "600"))
                .hasMessageContaining("fit above --udp-port");
        assertThatThrownBy(() -> config("--device", "a=eth0", "--device", "b=eth1", "--sock", "/tmp/x.sock"))
                .hasMessageContaining("--sock and --addr");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--sock-mode", "0777"))
                .hasMessageContaining("only read/write");
        assertThatThrownBy(() -> config("--ifname", "eth0", "--cm-port", "0", "--cm-secret-file", "/nonexistent"))
                .hasMessageContaining("needs the connection manager");
        DaemonConfig two = config("--device", "a=eth0", "--device", "b=eth1", "--metrics-port", "9100");
        assertThat(two.metricsPortOf(0)).isEqualTo(9100);
        assertThat(two.metricsPortOf(1)).isEqualTo(9101);
        assertThat(config("--ifname", "eth0", "--metrics-port", "0").metricsPortOf(0))
                .as("a free port")
                .isZero();
    }
}
