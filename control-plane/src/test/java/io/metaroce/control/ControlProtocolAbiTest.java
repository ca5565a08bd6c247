package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Proves that {@link ControlProtocol} and {@code mrce_abi.h} agree: runs {@code mrce_abi_offsets}
 * (built by provider-c's make from the header) and compares every control-protocol offset, size
 * and constant, in both directions.
 */
class ControlProtocolAbiTest {

    private static final Map<String, Class<?>> STRUCTS = Map.ofEntries(
            Map.entry("mrce_ctrl_hdr", ControlProtocol.CtrlHdr.class),
            Map.entry("mrce_handle_req", ControlProtocol.HandleReq.class),
            Map.entry("mrce_handle_resp", ControlProtocol.HandleResp.class),
            Map.entry("mrce_hello_req", ControlProtocol.HelloReq.class),
            Map.entry("mrce_hello_resp", ControlProtocol.HelloResp.class),
            Map.entry("mrce_reg_mr_req", ControlProtocol.RegMrReq.class),
            Map.entry("mrce_reg_mr_resp", ControlProtocol.RegMrResp.class),
            Map.entry("mrce_create_cq_req", ControlProtocol.CreateCqReq.class),
            Map.entry("mrce_create_cq_resp", ControlProtocol.CreateCqResp.class),
            Map.entry("mrce_create_qp_req", ControlProtocol.CreateQpReq.class),
            Map.entry("mrce_create_qp_resp", ControlProtocol.CreateQpResp.class),
            Map.entry("mrce_qp_attr", ControlProtocol.QpAttr.class),
            Map.entry("mrce_modify_qp_req", ControlProtocol.ModifyQpReq.class),
            Map.entry("mrce_create_srq_req", ControlProtocol.CreateSrqReq.class),
            Map.entry("mrce_create_srq_resp", ControlProtocol.CreateSrqResp.class),
            Map.entry("mrce_modify_srq_req", ControlProtocol.ModifySrqReq.class),
            Map.entry("mrce_srq_attr", ControlProtocol.SrqAttr.class),
            Map.entry("mrce_async_event", ControlProtocol.AsyncEvent.class),
            Map.entry("mrce_rereg_mr_req", ControlProtocol.ReregMrReq.class),
            Map.entry("mrce_cm_listen_req", ControlProtocol.CmListenReq.class),
            Map.entry("mrce_cm_connect_req", ControlProtocol.CmConnectReq.class),
            Map.entry("mrce_cm_connect_resp", ControlProtocol.CmConnectResp.class),
            Map.entry("mrce_cm_get_request_req", ControlProtocol.CmGetRequestReq.class),
            Map.entry("mrce_cm_request", ControlProtocol.CmRequest.class),
            Map.entry("mrce_cm_accept_req", ControlProtocol.CmAcceptReq.class),
            Map.entry("mrce_cm_reject_req", ControlProtocol.CmRejectReq.class));

    private static final Map<String, Long> C = new TreeMap<>();

    @BeforeAll
    static void runOffsetsProgram() throws IOException, InterruptedException {
        Path program = Path.of(System.getProperty("metaroce.native.dir", "../provider-c/build"), "mrce_abi_offsets");
        assertThat(program).as("built by provider-c's make").isExecutable();
        Process p = new ProcessBuilder(program.toString()).redirectErrorStream(true).start();
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
    void everyCOffsetAndSizeHasTheSameJavaConstant() throws ReflectiveOperationException {
        int compared = 0;
        for (Map.Entry<String, Long> e : C.entrySet()) {
            String struct = e.getKey().substring(0, e.getKey().indexOf('.'));
            String field = e.getKey().substring(e.getKey().indexOf('.') + 1);
            Class<?> descriptor = STRUCTS.get(struct);
            if (descriptor == null) {
                continue; // rings, WQE, CQE: the daemon's ring descriptors check those
            }
            String name = field.equals("__size") ? "SIZE" : field.toUpperCase() + "_OFFSET";
            Field constant = descriptor.getField(name);
            assertThat((long) constant.getInt(null)).as(e.getKey()).isEqualTo(e.getValue());
            compared++;
        }
        assertThat(compared).isGreaterThan(100);
    }

    @Test
    void everyJavaConstantExistsInC() throws IllegalAccessException {
        for (Map.Entry<String, Class<?>> s : STRUCTS.entrySet()) {
            for (Field f : s.getValue().getFields()) {
                if (!Modifier.isStatic(f.getModifiers())) {
                    continue;
                }
                String cName = f.getName().equals("SIZE")
                        ? s.getKey() + ".__size"
                        : s.getKey() + "." + f.getName().substring(0, f.getName().length() - "_OFFSET".length())
                                .toLowerCase();
                assertThat(C).as(cName).containsEntry(cName, (long) f.getInt(null));
            }
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
        String[] ops = {null, "HELLO", "ALLOC_PD", "DEALLOC_PD", "REG_MR", "DEREG_MR", "CREATE_COMP_CHANNEL",
            "DESTROY_COMP_CHANNEL", "CREATE_CQ", "DESTROY_CQ", "CREATE_QP", "MODIFY_QP", "QUERY_QP", "DESTROY_QP",
            "CREATE_SRQ", "MODIFY_SRQ", "QUERY_SRQ", "DESTROY_SRQ", "GET_ASYNC_EVENT", "REREG_MR", "CM_LISTEN",
            "CM_UNLISTEN", "CM_CONNECT", "CM_GET_REQUEST", "CM_ACCEPT", "CM_REJECT"};
        for (int op = 1; op <= ControlProtocol.OP_MAX; op++) {
            assertThat(ControlProtocol.opName(op)).isEqualTo(ops[op]);
            assertThat(C).as(ops[op]).containsEntry("const.MRCE_OP_" + ops[op], (long) op);
        }
    }

    @Test
    void requestSizesFollowTheOpTable() {
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_HELLO)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_ALLOC_PD)).isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DEALLOC_PD)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_REG_MR)).isEqualTo(32);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DEREG_MR)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CREATE_COMP_CHANNEL)).isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_DESTROY_COMP_CHANNEL)).isEqualTo(8);
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
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_GET_ASYNC_EVENT)).isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_REREG_MR)).isEqualTo(40);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CREATE_SRQ)).isEqualTo(24);
        assertThat(ControlProtocol.responseFds(ControlProtocol.OP_CREATE_SRQ)).isEqualTo(1);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_QUERY_SRQ)).isEqualTo(16);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_GET_ASYNC_EVENT)).isEqualTo(8);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_REREG_MR)).isEqualTo(16);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_HELLO)).isEqualTo(176);
        assertThat(ControlProtocol.responseFds(ControlProtocol.OP_HELLO)).isEqualTo(2);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_QUERY_QP)).isEqualTo(96);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_LISTEN)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_UNLISTEN)).isEqualTo(8);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_CONNECT)).isEqualTo(232);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CM_CONNECT)).isEqualTo(232);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_GET_REQUEST)).isEqualTo(8);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CM_GET_REQUEST)).isEqualTo(232);
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_ACCEPT)).isEqualTo(232);
        assertThat(ControlProtocol.responseSize(ControlProtocol.OP_CM_ACCEPT)).isZero();
        assertThat(ControlProtocol.requestSize(ControlProtocol.OP_CM_REJECT)).isEqualTo(200);
    }

    @Test
    void defaultSocketPathIsNamedAfterTheNetNamespaceInode() throws IOException {
        long ino = (Long) Files.getAttribute(Path.of("/proc/self/ns/net"), "unix:ino");
        assertThat(LocalControlPaths.defaultSocketPath())
                .isEqualTo(Path.of("/tmp/metaroce/nicd-" + ino + ".sock"));
        assertThat(Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString()).isEqualTo("net:[" + ino + "]");
    }
}
