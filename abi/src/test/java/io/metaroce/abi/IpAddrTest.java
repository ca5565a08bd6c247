package io.metaroce.abi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import org.junit.jupiter.api.Test;

class IpAddrTest {

    private static byte[] bytes(String literal) throws Exception {
        return InetAddress.getByName(literal).getAddress();
    }

    @Test
    void ipv4MappedGidIsTheIpv4Int() throws Exception {
        byte[] gid = new byte[16];
        gid[10] = (byte) 0xff;
        gid[11] = (byte) 0xff;
        System.arraycopy(bytes("198.18.0.2"), 0, gid, 12, 4);
        int a = IpAddr.fromGid(gid);
        assertThat(a).isEqualTo(198 << 24 | 18 << 16 | 2);
        assertThat(IpAddr.isV6(a)).isFalse();
        assertThat(IpAddr.gid(a)).isEqualTo(gid);
        assertThat(IpAddr.toString(a)).isEqualTo("198.18.0.2");
    }

    @Test
    void ipv6GidIsAStableHandleThatGivesItsAddressBack() throws Exception {
        byte[] gid = bytes("2001:db8::7");
        int h = IpAddr.fromGid(gid);
        assertThat(IpAddr.isV6(h)).isTrue();
        assertThat(IpAddr.fromGid(bytes("2001:db8::7"))).isEqualTo(h);
        assertThat(IpAddr.parse("2001:db8::7")).isEqualTo(h);
        assertThat(IpAddr.of(InetAddress.getByName("2001:db8::7"))).isEqualTo(h);
        assertThat(IpAddr.gid(h)).isEqualTo(gid);
        assertThat(IpAddr.hi(h)).isEqualTo(0x20010db800000000L);
        assertThat(IpAddr.lo(h)).isEqualTo(7L);
        assertThat(IpAddr.lookup(0x20010db800000000L, 7L)).isEqualTo(h);
        assertThat(IpAddr.toInet(h)).isEqualTo(InetAddress.getByName("2001:db8::7"));
        int other = IpAddr.fromGid(bytes("2001:db8::8"));
        assertThat(other).isNotEqualTo(h);
        assertThat(IpAddr.isV6(other)).isTrue();
    }

    @Test
    void zeroGidReservedIpv4AndUnknownHandlesNameNothing() throws Exception {
        assertThat(IpAddr.fromGid(new byte[16])).isZero();
        byte[] reserved = new byte[16];
        reserved[10] = (byte) 0xff;
        reserved[11] = (byte) 0xff;
        reserved[12] = (byte) 240;
        assertThat(IpAddr.fromGid(reserved)).isZero();
        assertThat(IpAddr.lookup(0x20010db8ffffffffL, 0x1234L)).isZero();
        // A handle never given (a peer's bad field) reads as ::, never an exception.
        assertThat(IpAddr.gid(0xFFFFFFFF)).isEqualTo(new byte[16]);
        assertThatThrownBy(() -> IpAddr.parse("host.example")).isInstanceOf(IllegalArgumentException.class);
    }
}
