package io.metaroce.nic.port.xdp;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class FrameHeadersTest {

    @Test
    void buildsEthernetIpv4UdpHeadersWithAValidChecksum() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment f = arena.allocate(AfXdpPort.HEADERS + 100);
            AfXdpPort.writeHeaders(
                    f,
                    0,
                    StaticL2Resolver.parseMac("02:00:00:00:00:02"),
                    StaticL2Resolver.parseMac("02:00:00:00:00:01"),
                    0xc6120001,
                    0xc6120002,
                    4800,
                    4793,
                    100);
            byte[] h = f.asSlice(0, AfXdpPort.HEADERS).toArray(ValueLayout.JAVA_BYTE);
            // checksum by hand: 4502+0080+0000+4000+4011+c612+0001+c612+0002 = 0x251ba -> 0x51bc -> ~ 0xae43
            assertThat(HexFormat.of().formatHex(h))
                    .isEqualTo("020000000002" + "020000000001" + "0800"
                            + "4502" + "0080" + "0000" + "4000" + "4011" + "ae43" + "c6120001" + "c6120002"
                            + "12c0" + "12b9" + "006c" + "0000");
            assertThat(AfXdpPort.ipChecksum(f, 14))
                    .as("a valid header sums to 0xffff")
                    .isZero();
        }
    }

    @Test
    void parsesMacAddresses() {
        assertThat(StaticL2Resolver.parseMac("aa:bb:cc:dd:ee:ff")).isEqualTo(0xaabbccddeeffL);
    }
}
