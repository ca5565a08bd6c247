package io.metaroce.conformance;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Per-case results: JUnit XML, a pcap per failing case, and the one-line summary. */
final class Report {
    /** One case's outcome. */
    record Result(
            String id, String spec, boolean passed, String message, double seconds, List<WirePeer.Frame> frames) {}

    private final List<Result> results = new ArrayList<>();

    void add(Result r) {
        results.add(r);
    }

    List<Result> results() {
        return results;
    }

    long failed() {
        return results.stream().filter(r -> !r.passed()).count();
    }

    String summary(String target) {
        return "mrce-conformance: " + (results.size() - failed()) + " passed, " + failed() + " failed of "
                + results.size() + " cases against " + target;
    }

    /** Writes junit.xml and CASE.pcap for each failing case into {@code dir}. */
    void write(Path dir, String target) throws IOException {
        Files.createDirectories(dir);
        StringBuilder x = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        double total = results.stream().mapToDouble(Result::seconds).sum();
        x.append("<testsuite name=\"mrce-conformance\" tests=\"")
                .append(results.size())
                .append("\" failures=\"")
                .append(failed())
                .append("\" errors=\"0\" skipped=\"0\" time=\"")
                .append(String.format("%.3f", total))
                .append("\">\n");
        x.append("  <properties><property name=\"target\" value=\"")
                .append(esc(target))
                .append("\"/></properties>\n");
        for (Result r : results) {
            x.append("  <testcase classname=\"mrce-conformance\" name=\"")
                    .append(esc(r.id()))
                    .append("\" time=\"")
                    .append(String.format("%.3f", r.seconds()))
                    .append("\">\n");
            x.append("    <system-out>").append(esc(r.spec())).append("</system-out>\n");
            if (!r.passed()) {
                x.append("    <failure message=\"")
                        .append(esc(r.message()))
                        .append("\">")
                        .append(esc(r.spec() + "\n" + r.message() + "\npackets: " + pcapName(r)))
                        .append("</failure>\n");
                writePcap(dir.resolve(pcapName(r)), r.frames());
            }
            x.append("  </testcase>\n");
        }
        x.append("</testsuite>\n");
        Files.writeString(dir.resolve("junit.xml"), x.toString(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("summary.txt"), summary(target) + "\n", StandardCharsets.UTF_8);
    }

    static String pcapName(Result r) {
        return r.id().replaceAll("[^A-Za-z0-9._-]", "_") + ".pcap";
    }

    private static String esc(String s) {
        return s.replace("&", "&amp;")
                .replace("<", "&lt;")
                .replace(">", "&gt;")
                .replace("\"", "&quot;")
                .replaceAll("[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]", "?");
    }

    /** A pcap (LINKTYPE_IPV4 = 228) of the datagrams, with IPv4 and UDP headers made up around them. */
    static void writePcap(Path file, List<WirePeer.Frame> frames) throws IOException {
        try (OutputStream os = Files.newOutputStream(file);
                DataOutputStream out = new DataOutputStream(os)) {
            ByteBuffer gh = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
            gh.putInt(0xa1b2c3d4)
                    .putShort((short) 2)
                    .putShort((short) 4)
                    .putInt(0)
                    .putInt(0)
                    .putInt(65535)
                    .putInt(228);
            out.write(gh.array());
            long t0 = System.currentTimeMillis() * 1_000_000L - System.nanoTime();
            java.util.Map<String, Integer> tcpSeq = new java.util.HashMap<>();
            for (WirePeer.Frame f : frames) {
                byte[] ip = f.tcp() ? ipv4Tcp(f.src(), f.dst(), f.data(), tcpSeq) : ipv4Udp(f.src(), f.dst(), f.data());
                long ns = t0 + f.timeNs();
                ByteBuffer rh = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
                rh.putInt((int) (ns / 1_000_000_000L))
                        .putInt((int) (ns % 1_000_000_000L / 1000))
                        .putInt(ip.length)
                        .putInt(ip.length);
                out.write(rh.array());
                out.write(ip);
            }
        }
    }

    /**
     * A connection-manager frame as one TCP segment (PSH, ACK) with made-up sequence numbers that
     * run on per direction of a connection, so that Wireshark reassembles the stream.
     */
    static byte[] ipv4Tcp(
            InetSocketAddress src, InetSocketAddress dst, byte[] payload, java.util.Map<String, Integer> seq) {
        String fwd = src + ">" + dst;
        String rev = dst + ">" + src;
        int s = seq.getOrDefault(fwd, 1);
        seq.put(fwd, s + payload.length);
        int ack = seq.getOrDefault(rev, 1);
        ByteBuffer b = ByteBuffer.allocate(40 + payload.length);
        b.put(ipv4Header(src, dst, 6, 40 + payload.length));
        b.putShort((short) src.getPort())
                .putShort((short) dst.getPort())
                .putInt(s)
                .putInt(ack)
                .putShort((short) (0x5000 | 0x18))
                .putShort((short) 65535)
                .putShort((short) 0)
                .putShort((short) 0)
                .put(payload);
        return b.array();
    }

    private static byte[] ipv4Header(InetSocketAddress src, InetSocketAddress dst, int protocol, int totalLength) {
        ByteBuffer b = ByteBuffer.allocate(20);
        b.put((byte) 0x45)
                .put((byte) 0)
                .putShort((short) totalLength)
                .putShort((short) 0)
                .putShort((short) 0x4000)
                .put((byte) 64)
                .put((byte) protocol)
                .putShort((short) 0)
                .put(src.getAddress().getAddress())
                .put(dst.getAddress().getAddress());
        int sum = 0;
        for (int i = 0; i < 20; i += 2) {
            sum += b.getShort(i) & 0xffff;
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xffff) + (sum >>> 16);
        }
        b.putShort(10, (short) ~sum);
        return b.array();
    }

    static byte[] ipv4Udp(InetSocketAddress src, InetSocketAddress dst, byte[] payload) {
        ByteBuffer b = ByteBuffer.allocate(28 + payload.length);
        b.put(ipv4Header(src, dst, 17, 28 + payload.length));
        b.putShort((short) src.getPort())
                .putShort((short) dst.getPort())
                .putShort((short) (8 + payload.length))
                .putShort((short) 0)
                .put(payload);
        return b.array();
    }
}
