package io.metaroce.nic.verbs;

import io.metaroce.abi.IpAddr;
import io.metaroce.nic.sys.Inet4;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;

/**
 * What the daemon reports about the netdev it serves (read once at start). {@code ipv4} is the
 * served address as an {@link IpAddr} int: an IPv4 address, or the handle of an IPv6 address;
 * {@code mtu} the netdev's MTU as the transport counts it (over IPv6, {@link
 * #IPV6_EXTRA_HEADER} less).
 */
public record NetInfo(String ifname, int ipv4, int mtu, boolean linkUp, int speedMbps) {

    /**
     * How much longer an IPv6 header is than an IPv4 one. A daemon serving IPv6 reports, and
     * computes its frame and payload sizes from, {@code mtu} = the netdev MTU less this.
     */
    public static final int IPV6_EXTRA_HEADER = 20;

    /**
     * Reads the interface from the current network namespace. {@code addrOverride} (an
     * {@link IpAddr} int, or 0) replaces the interface's address (loopback mode: 127.0.0.2 on
     * lo). Without it the daemon serves the interface's first IPv4 address, or on an interface
     * with none (an IPv6-only host) its first global IPv6 address (not link-local: peers behind a
     * router cannot reach that).
     */
    public static NetInfo of(String ifname, int addrOverride) throws IOException {
        NetworkInterface nif = NetworkInterface.getByName(ifname);
        if (nif == null) {
            throw new IOException(
                    Files.isDirectory(Path.of("/sys/class/net", ifname))
                            ? "interface " + ifname + " is down (ip link set " + ifname + " up)"
                            : "no network interface " + ifname + " in this network namespace");
        }
        int ip = addrOverride;
        if (ip == 0) {
            Enumeration<InetAddress> addrs = nif.getInetAddresses();
            while (addrs.hasMoreElements()) {
                InetAddress a = addrs.nextElement();
                if (a instanceof Inet4Address) {
                    ip = Inet4.fromBytes(a.getAddress(), 0);
                    break;
                }
            }
            addrs = nif.getInetAddresses();
            while (ip == 0 && addrs.hasMoreElements()) {
                InetAddress a = addrs.nextElement();
                if (a instanceof Inet6Address
                        && !a.isLinkLocalAddress()
                        && !a.isLoopbackAddress()
                        && !a.isMulticastAddress()) {
                    ip = IpAddr.of(a);
                }
            }
            if (ip == 0) {
                throw new IOException("interface " + ifname + " has no IPv4 or global IPv6 address (use --addr)");
            }
        }
        Path sys = Path.of("/sys/class/net", ifname);
        int speed = 0;
        try {
            speed = Math.max(
                    0, Integer.parseInt(Files.readString(sys.resolve("speed")).trim()));
        } catch (IOException | NumberFormatException e) {
            speed = 0; // virtual devices have none
        }
        // The transport's formulas count a 20-byte IPv4 header (docs/spec/transport.md, section 1):
        // over IPv6, whose header is 40 bytes, they work on the netdev MTU less 20.
        int mtu = IpAddr.isV6(ip) ? nif.getMTU() - IPV6_EXTRA_HEADER : nif.getMTU();
        return new NetInfo(ifname, ip, mtu, nif.isUp(), speed);
    }

    /** The netdev's carrier now (/sys/class/net/IF/carrier; unreadable while the link is down). */
    public static boolean carrier(String ifname) {
        try {
            return Files.readString(Path.of("/sys/class/net", ifname, "carrier"))
                    .trim()
                    .equals("1");
        } catch (IOException e) {
            return false;
        }
    }
}
