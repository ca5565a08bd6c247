package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.port.PortCounters;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.QpModifier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Blind injection (issue 12): while a 256 KiB RDMA WRITE runs from A to B, frames aimed at B's
 * QP with a wrong source address, token, destination or source QPN, or a guessed rkey are fed to
 * B's engine. Each is dropped and counted before the transport sees it, the transfer completes
 * with the right bytes and the region the forgeries aimed at keeps its canary. With the
 * connection manager off the token is derived (spec: security); "on" stands in for the manager
 * with random tokens set at RTR, as CmBridge does.
 */
class InjectionTest {
    private static final int LEN = 256 * 1024;
    private static final long FORGED_OFF = 512 * 1024;

    @ParameterizedTest(name = "connection manager {0}")
    @ValueSource(booleans = {false, true})
    void forgedFramesAreDroppedAndCountedWhileATransferCompletes(boolean cm) throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        SplittableRandom rnd = new SplittableRandom(7);
        if (cm) {
            c.setup = r -> {
                QpLifecycle stub = new QpLifecycle() {
                    @Override
                    public void onRtr(Qp qp) {
                        qp.rxToken = rnd.nextInt() | 1;
                    }
                };
                r.a.engine.datapath().lifecycle = stub;
                r.b.engine.datapath().lifecycle = stub;
            };
        }
        try (RdmaRig r = new RdmaRig(c);
                Arena arena = Arena.ofConfined()) {
            Qp qa = r.engineQpA(0);
            Qp qb = r.engineQpB(0);
            if (cm) {
                qa.txToken = qb.rxToken; // what the handshake's endpoints carry
                qb.txToken = qa.rxToken;
            } else {
                assertThat(qb.rxToken)
                        .as("derived from the QPNs and A's start PSN")
                        .isEqualTo(QpModifier.derivedToken(qb.qpn, qa.qpn, 0x123456))
                        .isEqualTo(qa.txToken);
                assertThat(qa.rxToken).isEqualTo(qb.txToken).isNotEqualTo(qb.rxToken);
            }
            assertThat(qb.rxToken).isNotZero();
            byte[] data = RdmaRig.pattern(3, LEN);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, r.local, 0, LEN);
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_RDMA_WRITE,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {LEN},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            r.step(20_000);

            PortCounters pc = r.b.port.counters();
            long unknown = pc.rxUnknownQp;
            long badToken = pc.rxBadToken;
            long badSource = pc.rxBadSource;
            MemorySegment f = arena.allocate(Wire.HEADER_SIZE + Wire.RETH_SIZE + 1024);
            int rkey = r.remoteMr[2];
            int guessedKey = rkey ^ 0x100; // the next table slot, as with predictable keys
            int rogue = Inet4.parse("198.18.0.99");
            // wrong source, all else right (an on-path copy replayed from elsewhere)
            inject(r, f, rogue, qb.qpn, qa.qpn, qb.rxToken, rkey);
            // wrong token (a blind guess), wrong token with a guessed key
            inject(r, f, RdmaRig.IP_A, qb.qpn, qa.qpn, qb.rxToken + 1, rkey);
            inject(r, f, RdmaRig.IP_A, qb.qpn, qa.qpn, 0, guessedKey);
            // wrong destination QPN (another generation of B's slot), wrong source QPN
            inject(r, f, RdmaRig.IP_A, qb.qpn ^ (1 << EngineAgent.QP_INDEX_BITS), qa.qpn, qb.rxToken, rkey);
            assertThat(r.b.engine.lastUnknownQp())
                    .as("why the engine dropped it")
                    .startsWith("RC opcode " + Wire.OP_WRITE + " to QPN 0x"
                            + Integer.toHexString(qb.qpn ^ (1 << EngineAgent.QP_INDEX_BITS)))
                    .endsWith("(198.18.0.1:4793): the slot holds QPN 0x" + Integer.toHexString(qb.qpn));
            inject(r, f, RdmaRig.IP_A, qb.qpn, qa.qpn ^ 1, qb.rxToken, rkey);
            assertThat(r.b.engine.lastUnknownQp())
                    .contains("from QPN 0x" + Integer.toHexString(qa.qpn ^ 1))
                    .endsWith("the source QPN is not the QP's destination 0x" + Integer.toHexString(qa.qpn));
            assertThat(pc.rxBadSource - badSource).as("wrong source").isEqualTo(1);
            assertThat(pc.rxBadToken - badToken).as("wrong token").isEqualTo(2);
            // a QPN whose table slot is empty
            int slotMask = EngineAgent.MAX_QP - 1;
            int emptySlotQpn = (qb.qpn & ~slotMask) | ((qb.qpn + 1) & slotMask);
            inject(r, f, RdmaRig.IP_A, emptySlotQpn, qa.qpn, qb.rxToken, rkey);
            assertThat(r.b.engine.lastUnknownQp()).endsWith("no QP in table slot " + (emptySlotQpn & slotMask));
            assertThat(pc.rxUnknownQp - unknown).as("wrong QPN").isEqualTo(3);

            r.runUntil(1, 0, 20_000);
            assertThat(r.sendCqes).hasSize(1);
            assertThat(r.sendCqes.getFirst().status()).isZero();
            assertThat(RdmaRig.bytes(r.remote, 0, LEN)).isEqualTo(data);
            RdmaRig.assertCanary(r.remote, LEN, r.remote.byteSize(), "beyond the transfer");
            assertThat(qb.state).isEqualTo(Ibv.QPS_RTS);
        }
    }

    /** Feeds B's engine a sealed 1 KiB WRITE packet aimed at FORGED_OFF of B's region. */
    private static void inject(RdmaRig r, MemorySegment f, int srcIp, int dstQpn, int srcQpn, int token, int rkey) {
        f.fill((byte) 0xee);
        Wire.header(f, Wire.OP_WRITE, 0, 0, 7, 0, dstQpn, srcQpn, token, 0, 0, 1024, 0, 0, 0);
        Wire.putU32(f, Wire.OFF_RKEY, rkey);
        Wire.putU32(f, Wire.OFF_RESP_UNIT, 0);
        Wire.putU64(f, Wire.OFF_VA, r.remoteAddr(FORGED_OFF));
        int len = (int) f.byteSize();
        ByteBuffer view = f.asByteBuffer();
        Wire.seal(new CRC32C(), f, view, len);
        r.b.engine.onFrame(f, f.asByteBuffer(), len, srcIp, 4793, 0);
    }
}
