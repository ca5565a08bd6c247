package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Proves that {@link ControlProtocol}'s op codes, constants and op table agree with
 * {@code mrce_abi.h}: runs {@code mrce_abi_offsets} (built by provider-c's make from the header).
 * The struct layouts themselves are the abi module's, checked there by {@code MrceAbiAgreementTest}.
 */
class ControlProtocolAbiTest {

    private static final Map<String, Long> C = new TreeMap<>();

    @BeforeAll
    static void runOffsetsProgram() throws IOException, InterruptedException {
        Path program = Path.of(System.getProperty("metaroce.native.dir", "../provider-c/build"), "mrce_abi_offsets");
        assertThat(program).as("built by provider-c's make").isExecutable();
        Process p =
                new ProcessBuilder(program.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        for (String line : out.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            String[] kv = line.trim().split("\\s+");
            assertThat(kv).as(line).hasSize(2);
            C.put(kv[0], Long.parseLong(kv[1]));
        }
    }

    @Test
    void constantsAgree() {
        assertThat(C).containsEntry("const.MRCE_ABI_VERSION", (long) ControlProtocol.ABI_VERSION);
        assertThat(C).containsEntry("const.MRCE_CTRL_MAX_FRAME", (long) ControlProtocol.MAX_FRAME);
        assertThat(C).containsEntry("const.MRCE_NO_HANDLE", Integer.toUnsignedLong(ControlProtocol.NO_HANDLE));
        assertThat(C).containsEntry("const.MRCE_OP_MAX", (long) ControlProtocol.OP_MAX);
        assertThat(C).containsEntry("const.MRCE_MAX_ASYNC_EVENTS", (long) ControlProtocol.MAX_ASYNC_EVENTS);
        assertThat(C).containsEntry("mrce_ctrl_hdr.__size", (long) ControlProtocol.HEADER_SIZE);
        assertThat(C).containsEntry("const.MRCE_CM_PRIVATE_DATA_MAX", (long) ControlProtocol.CM_PRIVATE_DATA_MAX);
        assertThat(C).containsEntry("const.MRCE_CM_ACCEPTED", (long) ControlProtocol.CM_ACCEPTED);
        assertThat(C).containsEntry("const.MRCE_CM_REJECTED", (long) ControlProtocol.CM_REJECTED);
        assertThat(C).containsEntry("const.MRCE_CM_DEFAULT_BACKLOG", (long) ControlProtocol.CM_DEFAULT_BACKLOG);
        assertThat(C).containsEntry("const.MRCE_CM_MAX_BACKLOG", (long) ControlProtocol.CM_MAX_BACKLOG);
        // Op codes, where the offsets program prints them (const.MRCE_OP_HELLO ...).
        String[] ops = {
            null,
            "HELLO",
            "ALLOC_PD",
            "DEALLOC_PD",
            "REG_MR",
            "DEREG_MR",
            "CREATE_COMP_CHANNEL",
            "DESTROY_COMP_CHANNEL",
            "CREATE_CQ",
            "DESTROY_CQ",
            "CREATE_QP",
            "MODIFY_QP",
            "QUERY_QP",
            "DESTROY_QP",
            "CREATE_SRQ",
            "MODIFY_SRQ",
            "QUERY_SRQ",
            "DESTROY_SRQ",
            "GET_ASYNC_EVENT",
            "REREG_MR",
            "CM_LISTEN",
            "CM_UNLISTEN",
            "CM_CONNECT",
            "CM_GET_REQUEST",
            "CM_ACCEPT",
            "CM_REJECT",
            "CONTEXT_FD",
            "IMPORT_CONTEXT",
            "IMPORT_PD",
            "UNIMPORT_PD",
            "IMPORT_MR",
            "UNIMPORT_MR",
            "CM_BIND",
            "SHARE_MR"
        };
        for (int op = 1; op <= ControlProtocol.OP_MAX; op++) {
            assertThat(ControlProtocol.opName(op)).isEqualTo(ops[op]);
            assertThat(C).as(ops[op]).containsEntry("const.MRCE_OP_" + ops[op], (long) op);
        }
    }

    @Test
    void opTableSizesAreTheCStructSizes() {
        String[][] table = {
            {"HELLO", "mrce_hello_req", "mrce_hello_resp"},
            {"REG_MR", "mrce_reg_mr_req", "mrce_reg_mr_resp"},
            {"CREATE_CQ", "mrce_create_cq_req", "mrce_create_cq_resp"},
            {"CREATE_QP", "mrce_create_qp_req", "mrce_create_qp_resp"},
            {"MODIFY_QP", "mrce_modify_qp_req", null},
            {"SHARE_MR", "mrce_share_mr_req", null},
            {"QUERY_QP", "mrce_handle_req", "mrce_qp_attr"},
            {"CREATE_SRQ", "mrce_create_srq_req", "mrce_create_srq_resp"},
            {"MODIFY_SRQ", "mrce_modify_srq_req", null},
            {"QUERY_SRQ", "mrce_handle_req", "mrce_srq_attr"},
            {"GET_ASYNC_EVENT", null, "mrce_async_event"},
            {"REREG_MR", "mrce_rereg_mr_req", "mrce_reg_mr_resp"},
            {"ALLOC_PD", null, "mrce_handle_resp"},
            {"CM_LISTEN", "mrce_cm_listen_req", null},
            {"CM_CONNECT", "mrce_cm_connect_req", "mrce_cm_connect_resp"},
            {"CM_GET_REQUEST", "mrce_cm_get_request_req", "mrce_cm_request"},
            {"CM_ACCEPT", "mrce_cm_accept_req", null},
            {"CM_REJECT", "mrce_cm_reject_req", null},
            {"CONTEXT_FD", null, null},
            {"IMPORT_CONTEXT", "mrce_import_context_req", null},
            {"IMPORT_PD", "mrce_handle_req", null},
            {"UNIMPORT_PD", "mrce_handle_req", null},
            {"IMPORT_MR", "mrce_import_mr_req", "mrce_import_mr_resp"},
            {"UNIMPORT_MR", "mrce_handle_req", null},
            {"CM_BIND", "mrce_cm_listen_req", null}
        };
        for (String[] row : table) {
            int op = C.get("const.MRCE_OP_" + row[0]).intValue();
            long req = row[1] == null ? 0 : C.get(row[1] + ".__size");
            long resp = row[2] == null ? 0 : C.get(row[2] + ".__size");
            assertThat((long) ControlProtocol.requestSize(op))
                    .as(row[0] + " request")
                    .isEqualTo(req);
            assertThat((long) ControlProtocol.responseSize(op))
                    .as(row[0] + " response")
                    .isEqualTo(resp);
        }
    }

    @Test
    void requestSizesFollowTheOpTable() {
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_HELLO)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_ALLOC_PD)).isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DEALLOC_PD)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_REG_MR)).isEqualTo(32);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DEREG_MR)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CREATE_COMP_CHANNEL))
                .isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DESTROY_COMP_CHANNEL))
                .isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CREATE_CQ)).isEqualTo(16);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DESTROY_CQ)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CREATE_QP)).isEqualTo(48);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_MODIFY_QP)).isEqualTo(104);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_QUERY_QP)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DESTROY_QP)).isEqualTo(8);
        assertThat(C).containsEntry("mrce_modify_qp_req.__size", 104L);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CREATE_SRQ)).isEqualTo(16);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_MODIFY_SRQ)).isEqualTo(16);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_QUERY_SRQ)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DESTROY_SRQ)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_GET_ASYNC_EVENT))
                .isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_REREG_MR)).isEqualTo(40);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CREATE_SRQ)).isEqualTo(24);
        assertThat(ControlProtocol.responseFds(ControlProtocol.OP_CREATE_SRQ)).isEqualTo(1);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_QUERY_SRQ)).isEqualTo(16);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_GET_ASYNC_EVENT))
                .isEqualTo(8);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_REREG_MR)).isEqualTo(16);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_HELLO)).isEqualTo(176);
        assertThat(ControlProtocol.responseFds(ControlProtocol.OP_HELLO)).isEqualTo(2);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_QUERY_QP)).isEqualTo(96);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_LISTEN)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_UNLISTEN)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_CONNECT)).isEqualTo(248);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CM_CONNECT)).isEqualTo(232);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_GET_REQUEST))
                .isEqualTo(8);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CM_GET_REQUEST))
                .isEqualTo(248);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_ACCEPT)).isEqualTo(232);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CM_ACCEPT)).isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_REJECT)).isEqualTo(200);
        assertThat(ControlProtocol.responseFds(ControlProtocol.OP_CONTEXT_FD)).isEqualTo(1);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_IMPORT_CONTEXT))
                .isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_IMPORT_MR)).isEqualTo(8);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_IMPORT_MR)).isEqualTo(32);
    }

    @Test
    void defaultSocketPathIsNamedAfterTheNetNamespaceInode() throws IOException {
        long ino = (Long) Files.getAttribute(Path.of("/proc/self/ns/net"), "unix:ino");
        assertThat(LocalControlPaths.defaultSocketPath()).isEqualTo(Path.of("/tmp/metaroce/nicd-" + ino + ".sock"));
        assertThat(Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString())
                .isEqualTo("net:[" + ino + "]");
    }
}
