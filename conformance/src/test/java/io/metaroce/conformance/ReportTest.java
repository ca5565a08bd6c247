package io.metaroce.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report files: JUnit XML per case, a pcap per failing case, the summary line. */
class ReportTest {

    @Test
    void failingCaseGetsAFailureElementAndAPcapOfItsDatagrams(@TempDir Path dir) throws Exception {
        InetSocketAddress a = new InetSocketAddress("198.18.0.1", 4794);
        InetSocketAddress b = new InetSocketAddress("198.18.0.2", 4793);
        byte[] pkt = new Packet().encode();
        Report r = new Report();
        r.add(new Report.Result("rc.ok", "T §4", true, "", 0.5, List.of()));
        r.add(new Report.Result(
                "rc.bad<1>",
                "T §5 rule 2",
                false,
                "placed \"twice\"",
                0.25,
                List.of(new WirePeer.Frame(1000, true, a, b, pkt))));
        r.write(dir, "198.18.0.2:4793");

        String xml = Files.readString(dir.resolve("junit.xml"));
        assertThat(xml)
                .contains("tests=\"2\" failures=\"1\"")
                .contains("name=\"rc.ok\"")
                .contains("name=\"rc.bad&lt;1&gt;\"")
                .contains("<failure message=\"placed &quot;twice&quot;\">");
        assertThat(Files.readString(dir.resolve("summary.txt")))
                .isEqualTo("mrce-conformance: 1 passed, 1 failed of 2 cases against 198.18.0.2:4793\n");
        assertThat(dir.resolve("rc.ok.pcap")).doesNotExist();

        ByteBuffer pcap = ByteBuffer.wrap(Files.readAllBytes(dir.resolve("rc.bad_1_.pcap")))
                .order(ByteOrder.LITTLE_ENDIAN);
        assertThat(pcap.getInt(0)).isEqualTo(0xa1b2c3d4);
        assertThat(pcap.getInt(20)).as("LINKTYPE_IPV4").isEqualTo(228);
        assertThat(pcap.getInt(24 + 8)).as("captured length").isEqualTo(28 + pkt.length);
        assertThat(pcap.capacity()).isEqualTo(24 + 16 + 28 + pkt.length);
        ByteBuffer ip = pcap.slice(40, 28 + pkt.length).order(ByteOrder.BIG_ENDIAN);
        assertThat(ip.get(0)).isEqualTo((byte) 0x45);
        assertThat(ip.get(9)).as("UDP").isEqualTo((byte) 17);
        int sum = 0;
        for (int i = 0; i < 20; i += 2) {
            sum += ip.getShort(i) & 0xffff;
        }
        assertThat((sum & 0xffff) + (sum >>> 16)).as("IPv4 header checksum").isEqualTo(0xffff);
        assertThat(ip.getShort(20) & 0xffff).isEqualTo(4794);
        assertThat(ip.getShort(22) & 0xffff).isEqualTo(4793);
    }

    @Test
    void connectionManagerFramesBecomeTcpSegmentsWithRunningSequenceNumbers(@TempDir Path dir) throws Exception {
        InetSocketAddress suite = new InetSocketAddress("198.18.0.1", 40000);
        InetSocketAddress target = new InetSocketAddress("198.18.0.2", 4792);
        byte[] ping = {0, 12, 6, 0, 1, 2, 3, 4, 5, 6, 7, 8};
        byte[] pong = {0, 12, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8};
        Report r = new Report();
        r.add(new Report.Result(
                "cm.x",
                "CM-5.1",
                false,
                "no PONG",
                0.1,
                List.of(
                        new WirePeer.Frame(1000, true, suite, target, ping, true),
                        new WirePeer.Frame(2000, true, suite, target, ping, true),
                        new WirePeer.Frame(3000, false, target, suite, pong, true))));
        r.write(dir, "198.18.0.2:4793");
        ByteBuffer pcap =
                ByteBuffer.wrap(Files.readAllBytes(dir.resolve("cm.x.pcap"))).order(ByteOrder.LITTLE_ENDIAN);
        int seg = 16 + 40 + 12;
        assertThat(pcap.capacity()).isEqualTo(24 + 3 * seg);
        ByteBuffer first = pcap.slice(24 + 16, 52).order(ByteOrder.BIG_ENDIAN);
        ByteBuffer second = pcap.slice(24 + seg + 16, 52).order(ByteOrder.BIG_ENDIAN);
        ByteBuffer third = pcap.slice(24 + 2 * seg + 16, 52).order(ByteOrder.BIG_ENDIAN);
        assertThat(first.get(9)).as("TCP").isEqualTo((byte) 6);
        assertThat(first.getShort(2) & 0xffff).as("IPv4 total length").isEqualTo(52);
        assertThat(first.getShort(22) & 0xffff).isEqualTo(4792);
        assertThat(first.getInt(24)).as("first sequence number").isEqualTo(1);
        assertThat(second.getInt(24)).as("runs on by the first frame's length").isEqualTo(13);
        assertThat(third.getInt(24)).as("the other direction's own sequence").isEqualTo(1);
        assertThat(third.getInt(28)).as("acknowledges both frames").isEqualTo(25);
        assertThat(first.get(32) & 0xff).as("data offset 5 words").isEqualTo(0x50);
        assertThat(first.get(40 + 2)).as("the frame's type byte").isEqualTo((byte) 6);
    }
}
