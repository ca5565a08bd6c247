package io.metaroce.nic;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** mrce-nicd's --ifname / --device options: which devices a daemon serves (docs/multi-nic.md). */
class NicDaemonDevicesTest {

    @Test
    void ifnameIsDeviceMrce0() {
        assertThat(NicDaemon.parseDevices("eth0", null)).containsExactly(new NicDaemon.Device("mrce0", "eth0"));
        assertThat(NicDaemon.parseDevices("eth0", List.of())).containsExactly(new NicDaemon.Device("mrce0", "eth0"));
    }

    @Test
    void devicesKeepTheirNamesAndOrder() {
        assertThat(NicDaemon.parseDevices(null, List.of("mrce1=eth1", "mrce0=eth0", "rail_7=ens7f1")))
                .containsExactly(
                        new NicDaemon.Device("mrce1", "eth1"),
                        new NicDaemon.Device("mrce0", "eth0"),
                        new NicDaemon.Device("rail_7", "ens7f1"));
    }

    @Test
    void badOrConflictingDevicesAreRefusedWithTheReason() {
        assertThatThrownBy(() -> NicDaemon.parseDevices(null, null)).hasMessageContaining("--ifname IF or --device");
        assertThatThrownBy(() -> NicDaemon.parseDevices("eth0", List.of("mrce1=eth1")))
                .hasMessageContaining("not both");
        for (String bad : List.of(
                "mrce1",
                "=eth1",
                "mrce1=",
                "mrce-1=eth1",
                "a/b=eth1",
                "mrce1=a/b",
                "abcdefghijklmnop=eth1",
                "mrce1=abcdefghijklmnop")) {
            assertThatThrownBy(() -> NicDaemon.parseDevices(null, List.of(bad)))
                    .as(bad)
                    .hasMessageContaining("expected NAME=IF");
        }
        assertThatThrownBy(() -> NicDaemon.parseDevices(null, List.of("mrce1=eth1", "mrce1=eth2")))
                .hasMessageContaining("named twice");
        assertThatThrownBy(() -> NicDaemon.parseDevices(null, List.of("mrce1=eth1", "mrce2=eth1")))
                .hasMessageContaining("served twice");
    }

    @Test
    void aMultiPlaneDeviceNamesItsPlanesWithPlus() {
        assertThat(NicDaemon.parseDevices(null, List.of("mrce0=p1+p2", "mrce1=eth9")))
                .containsExactly(
                        new NicDaemon.Device("mrce0", "p1", List.of("p1", "p2")),
                        new NicDaemon.Device("mrce1", "eth9"));
        assertThat(NicDaemon.parseDevices(null, List.of("mrce0=eth0")).get(0).planes())
                .containsExactly("eth0");
        for (String bad : List.of("mrce0=eth0+", "mrce0=+eth1", "mrce0=a+b+c+d+e+f+g+h+i", "mrce0=eth0++eth1")) {
            assertThatThrownBy(() -> NicDaemon.parseDevices(null, List.of(bad)))
                    .as(bad)
                    .hasMessageContaining("expected NAME=IF");
        }
        assertThatThrownBy(() -> NicDaemon.parseDevices(null, List.of("mrce0=eth0+eth0")))
                .hasMessageContaining("served twice");
        assertThatThrownBy(() -> NicDaemon.parseDevices(null, List.of("mrce0=eth0+eth1", "mrce1=eth1")))
                .hasMessageContaining("served twice");
    }
}
