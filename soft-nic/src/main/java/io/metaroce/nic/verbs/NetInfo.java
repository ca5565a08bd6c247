package io.metaroce.nic.verbs;

import io.metaroce.nic.sys.Inet4;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;

/** What the daemon reports about the netdev it serves (read once at start). */
public record NetInfo(String ifname, int ipv4, int mtu, boolean linkUp, int speedMbps) {

    /**
     * Reads the interface from the current network namespace. {@code addrOverride} (host-order
     * IPv4, or 0) replaces the interface's first IPv4 address (loopback mode: 127.0.0.2 on lo).
     */
    public static NetInfo of(String ifname, int addrOverride) throws IOException {
        NetworkInterface nif = NetworkInterface.getByName(ifname);
        if (nif == null) {
            throw new IOException(Files.isDirectory(Path.of("/sys/class/net", ifname))
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
            if (ip == 0) {
                throw new IOException("interface " + ifname + " has no IPv4 address (use --addr)");
            }
        }
        Path sys = Path.of("/sys/class/net", ifname);
        int speed = 0;
        try {
            speed = Math.max(0, Integer.parseInt(Files.readString(sys.resolve("speed")).trim()));
        } catch (IOException | NumberFormatException e) {
            speed = 0; // virtual devices have none
        }
        return new NetInfo(ifname, ip, nif.getMTU(), nif.isUp(), speed);
    }

    /** The netdev's carrier now (/sys/class/net/IF/carrier; unreadable while the link is down). */
    public static boolean carrier(String ifname) {
        try {
            return Files.readString(Path.of("/sys/class/net", ifname, "carrier")).trim().equals("1");
        } catch (IOException e) {
            return false;
        }
    }
}
