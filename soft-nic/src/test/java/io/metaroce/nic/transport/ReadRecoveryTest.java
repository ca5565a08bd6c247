package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.transport.RequesterHarness.Pkt;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A READ requester against a peer the test plays (spec 8, READ recovery): responses land in any
 * order by their offset; once the request is acknowledged and responses stop, only the missing
 * ranges are re-requested (FLAG_RESEND, outside the RSN stream and the paths' PSN spaces); with
 * no response at all, retry_cnt timeouts end in IBV_WC_RETRY_EXC_ERR.
 */
class ReadRecoveryTest {
    static final int P = RequesterHarness.P;

    @Test
    void onlyTheMissingRangesAreReRequestedAndTheReadCompletes() throws Exception {
        try (RequesterHarness h = new RequesterHarness(2)) {
            int len = 10 * P - 100;
            h.buf.asSlice(0, 16 * P).fill((byte) 0x5a);
            h.postRead(7, 1000, len, 0x1234, 0xabc000L);
            List<Pkt> out = h.pump();
            assertThat(out).singleElement().satisfies(p -> {
                assertThat(p.opcode()).isEqualTo(Wire.OP_READ_REQ);
                assertThat(p.imm()).as("bytes requested").isEqualTo(len);
                assertThat(p.offset()).isZero();
                assertThat(p.len()).isEqualTo(Wire.RETH_SIZE);
            });
            int rsn = out.get(0).rsn();
            h.clock.addAndGet(10_000);
            h.ackPlaced(out, RcRequester.WINDOW);
            byte[] data = RdmaRig.pattern(3, len);
            int[] order = {9, 5, 0, 1, 6, 2};
            for (int i : order) {
                h.readResponse(rsn, i * P, len, java.util.Arrays.copyOfRange(data, i * P, Math.min(len, (i + 1) * P)));
            }
            h.readResponse(rsn, 5 * P, len, java.util.Arrays.copyOfRange(data, 5 * P, 6 * P)); // duplicate
            h.step(1000);
            assertThat(h.completions).isEmpty();
            List<Pkt> resent = new ArrayList<>();
            for (int i = 0; i < 100 && resent.isEmpty(); i++) {
                resent.addAll(h.step(1_000_000));
            }
            assertThat(resent)
                    .allMatch(p -> p.opcode() == Wire.OP_READ_REQ
                            && p.rsn() == rsn
                            && (p.flags() & Wire.FLAG_RESEND) != 0
                            && p.path() == 0
                            && p.psn() == 0);
            assertThat(resent).extracting(Pkt::offset).containsExactly(3 * P, 7 * P);
            assertThat(resent).extracting(Pkt::imm).containsExactly(2 * P, 2 * P);
            for (int i : new int[] {8, 3, 7, 4}) {
                h.readResponse(rsn, i * P, len, java.util.Arrays.copyOfRange(data, i * P, Math.min(len, (i + 1) * P)));
            }
            h.step(1000);
            assertThat(h.completions).singleElement().satisfies(c -> {
                assertThat(c.wrId()).isEqualTo(7);
                assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(c.opcode()).isEqualTo(Ibv.WC_RDMA_READ);
                assertThat(c.byteLen()).isEqualTo(len);
            });
            assertThat(h.buf.asSlice(1000, len).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(data);
            assertThat(h.buf.get(ValueLayout.JAVA_BYTE, 999)).isEqualTo((byte) 0x5a);
            assertThat(h.buf.get(ValueLayout.JAVA_BYTE, 1000 + len)).isEqualTo((byte) 0x5a);
            assertThat(h.req().activeTrackers()).isZero();
        }
    }

    @Test
    void aResponseAcknowledgesItsRequestWhenTheAckIsLost() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            h.postRead(1, 0, 100, 1, 0);
            List<Pkt> out = h.pump();
            h.readResponse(out.get(0).rsn(), 0, 100, new byte[100]);
            h.step(1000);
            assertThat(h.completions).extracting(c -> c.status()).containsExactly(Ibv.WC_SUCCESS);
            assertThat(h.req().unacknowledged()).isZero();
        }
    }

    @Test
    void responsesThatNeverComeEndInRetryExceeded() throws Exception {
        try (RequesterHarness h = new RequesterHarness(1)) {
            h.postRead(1, 0, 3 * P, 1, 0);
            List<Pkt> out = h.pump();
            h.clock.addAndGet(10_000);
            h.ackPlaced(out, RcRequester.WINDOW);
            int resends = 0;
            for (int i = 0; i < 10_000 && h.completions.isEmpty(); i++) {
                for (Pkt p : h.step(1_000_000)) {
                    if ((p.flags() & Wire.FLAG_RESEND) != 0) {
                        resends++;
                        assertThat(p.offset()).isZero();
                        assertThat(p.imm()).isEqualTo(3 * P);
                    }
                }
            }
            assertThat(h.completions).extracting(c -> c.status()).containsExactly(Ibv.WC_RETRY_EXC_ERR);
            assertThat(resends)
                    .as("one re-request per timeout, retry_cnt (7) of them")
                    .isEqualTo(8);
        }
    }
}
