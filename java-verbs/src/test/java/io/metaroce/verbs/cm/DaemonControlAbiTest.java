package io.metaroce.verbs.cm;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * java-verbs speaks the daemon's control protocol without depending on the daemon's modules, so
 * {@link DaemonControl} keeps its own few offsets. This test holds each of them to
 * {@code mrce_abi.h}: it runs provider-c's {@code mrce_abi_offsets} (the C compiler's view) and
 * compares every int constant of DaemonControl with the C names it stands for; a constant that
 * names nothing here fails too, so none can be added unchecked.
 */
class DaemonControlAbiTest {

    private static final String[] CM_STRUCTS = {
        "mrce_cm_connect_req", "mrce_cm_connect_resp", "mrce_cm_request", "mrce_cm_accept_req"
    };

    /** DaemonControl's constant -> the C values it must equal. */
    private static final Map<String, List<String>> MEANS = new TreeMap<>(Map.ofEntries(
            Map.entry("ABI_VERSION", List.of("const.MRCE_ABI_VERSION")),
            Map.entry("HEADER", List.of("mrce_ctrl_hdr.__size")),
            Map.entry("MAX_FRAME", List.of("const.MRCE_CTRL_MAX_FRAME")),
            Map.entry("OP_HELLO", List.of("const.MRCE_OP_HELLO")),
            Map.entry("OP_CM_LISTEN", List.of("const.MRCE_OP_CM_LISTEN")),
            Map.entry("OP_CM_UNLISTEN", List.of("const.MRCE_OP_CM_UNLISTEN")),
            Map.entry("OP_CM_CONNECT", List.of("const.MRCE_OP_CM_CONNECT")),
            Map.entry("OP_CM_GET_REQUEST", List.of("const.MRCE_OP_CM_GET_REQUEST")),
            Map.entry("OP_CM_ACCEPT", List.of("const.MRCE_OP_CM_ACCEPT")),
            Map.entry("OP_CM_REJECT", List.of("const.MRCE_OP_CM_REJECT")),
            Map.entry("HELLO_REQ_SIZE", List.of("mrce_hello_req.__size")),
            Map.entry("HELLO_RESP_GID", List.of("mrce_hello_resp.gid")),
            Map.entry("LISTEN_SIZE", List.of("mrce_cm_listen_req.__size")),
            Map.entry("LISTEN_SERVICE", List.of("mrce_cm_listen_req.service_id")),
            Map.entry("LISTEN_BACKLOG", List.of("mrce_cm_listen_req.backlog")),
            Map.entry("GET_REQUEST_SIZE", List.of("mrce_cm_get_request_req.__size")),
            Map.entry("GET_REQUEST_TIMEOUT", List.of("mrce_cm_get_request_req.timeout_ms")),
            Map.entry(
                    "CM_STRUCT",
                    List.of(
                            "mrce_cm_connect_resp.__size",
                            "mrce_cm_accept_req.__size",
                            "mrce_cm_connect_req.peer_ipv6",
                            "mrce_cm_request.peer_ipv6")),
            Map.entry("CM_STRUCT_V6", List.of("mrce_cm_connect_req.__size", "mrce_cm_request.__size")),
            Map.entry("QPN", each("qpn")),
            Map.entry("PSN", each("psn")),
            Map.entry("GID", each("gid")),
            Map.entry("PD_LEN", each("private_data_len")),
            Map.entry("PD", each("private_data")),
            Map.entry("CONNECT_PEER", List.of("mrce_cm_connect_req.peer_ipv4")),
            Map.entry("CONNECT_SERVICE", List.of("mrce_cm_connect_req.service_id")),
            Map.entry("CONNECT_TIMEOUT", List.of("mrce_cm_connect_req.timeout_ms")),
            Map.entry("RESP_RESULT", List.of("mrce_cm_connect_resp.result")),
            Map.entry("REQUEST_HANDLE", List.of("mrce_cm_request.request")),
            Map.entry("REQUEST_SERVICE", List.of("mrce_cm_request.service_id")),
            Map.entry("REQUEST_PEER", List.of("mrce_cm_request.peer_ipv4")),
            Map.entry("PEER_IPV6", List.of("mrce_cm_connect_req.peer_ipv6", "mrce_cm_request.peer_ipv6")),
            Map.entry("ACCEPT_HANDLE", List.of("mrce_cm_accept_req.request")),
            Map.entry("REJECT_SIZE", List.of("mrce_cm_reject_req.__size")),
            Map.entry("REJECT_HANDLE", List.of("mrce_cm_reject_req.request")),
            Map.entry("REJECT_PD_LEN", List.of("mrce_cm_reject_req.private_data_len")),
            Map.entry("REJECT_PD", List.of("mrce_cm_reject_req.private_data")),
            Map.entry("CM_ACCEPTED", List.of("const.MRCE_CM_ACCEPTED")),
            Map.entry("CM_REJECTED", List.of("const.MRCE_CM_REJECTED"))));

    private static List<String> each(String field) {
        return java.util.Arrays.stream(CM_STRUCTS).map(s -> s + "." + field).toList();
    }

    private static Map<String, Long> cOffsets() throws Exception {
        Path program = Path.of(System.getProperty("metaroce.native.dir", "../provider-c/build"), "mrce_abi_offsets");
        assertThat(program).as("built by provider-c's make").isExecutable();
        Process p =
                new ProcessBuilder(program.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        Map<String, Long> c = new TreeMap<>();
        for (String line : out.split("\n")) {
            if (!line.isBlank()) {
                String[] kv = line.trim().split("\\s+");
                c.put(kv[0], Long.parseLong(kv[1]));
            }
        }
        return c;
    }

    @Test
    void everyConstantIsTheCValue() throws Exception {
        Map<String, Long> c = cOffsets();
        int compared = 0;
        for (Field f : DaemonControl.class.getDeclaredFields()) {
            if (!Modifier.isStatic(f.getModifiers()) || f.getType() != int.class) {
                continue;
            }
            f.setAccessible(true);
            List<String> names = MEANS.get(f.getName());
            assertThat(names)
                    .as("DaemonControl." + f.getName() + " has a C name in this test")
                    .isNotNull();
            for (String name : names) {
                assertThat(c).as(name + " printed by mrce_abi_offsets").containsKey(name);
                assertThat((long) f.getInt(null))
                        .as("DaemonControl." + f.getName() + " = " + name)
                        .isEqualTo(c.get(name));
                compared++;
            }
        }
        assertThat(compared).isGreaterThanOrEqualTo(MEANS.size());
    }
}
