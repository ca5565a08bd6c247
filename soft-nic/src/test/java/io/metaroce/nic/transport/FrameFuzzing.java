package io.metaroce.nic.transport;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.metaroce.nic.port.PortCounters;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterAll;

/**
 * Coverage-guided fuzzing (Jazzer) of the engine's receive path: each input picks a real frame
 * of {@link FrameFuzzRig#captureSeeds} (every opcode, as the engine built it), overwrites fields
 * and bytes with fuzzer data, may change its length, addressing and CRC, and delivers it to the
 * real engine of A or B, which then run on with the peer. After every input: no exception left
 * the engines, and no byte outside a registered region changed (canary guards). RC QPs that left
 * RTS (a fuzzed NAK can be fatal, as it should be) are reset and connected again.
 *
 * <p>Runs in its own surefire execution with JAZZER_FUZZ=1 (soft-nic/pom.xml): 10^5 inputs in
 * every build, 10^7 with -Pfuzz-long (docs/fuzzing.md).
 */
class FrameFuzzing {
    private static FrameFuzzRig rig;
    private static long inputs;
    private static long rebuilds;
    private static long delivered;
    private static final PortCounters dropsA = new PortCounters();
    private static final PortCounters dropsB = new PortCounters();
    private static final TransportCounters transport = new TransportCounters();

    @FuzzTest(maxExecutions = 100_000)
    void receive(FuzzedDataProvider data) throws Exception {
        if (rig == null) {
            rig = newRig();
        }
        inputs++;
        int index = data.consumeInt(0, rig.seeds.size() - 1);
        FrameFuzzRig.Seed seed = rig.seeds.get(index);
        byte[] f = mutate(seed.bytes(), data);
        int work = data.consumeInt(0, 7);
        if (work >= 4) { // the requester has a live request the frame may answer or acknowledge
            rig.postWork(work - 4);
        }
        int ecn = data.consumeBoolean() ? 3 : 0;
        long advanceNs = data.consumeLong(0, 2_000_000L);
        rig.deliver(f, seed.toA(), ecn, advanceNs, 2);
        delivered++;
        String broken = rig.guardsIntact();
        if (broken != null) {
            throw new AssertionError("memory outside region " + broken + " changed after a " + f.length
                    + "-byte frame from seed " + seed.name());
        }
        if (!rig.healthy()) {
            rig.reconnect();
            rebuilds++;
        }
    }

    /** The seed with fuzzer-chosen field writes, length, addressing and CRC. */
    static byte[] mutate(byte[] seed, FuzzedDataProvider data) {
        int edits = data.consumeInt(0, 6);
        byte[] f = seed.clone();
        if (data.consumeBoolean()) { // a new length: truncated or grown (zero-filled)
            f = java.util.Arrays.copyOf(f, data.consumeInt(0, Wire.MAX_FRAME));
        }
        if (f.length == 0) {
            return f;
        }
        MemorySegment m = MemorySegment.ofArray(f);
        for (int i = 0; i < edits; i++) {
            int kind = data.consumeInt(0, 3);
            int width = 1 << kind;
            if (f.length < width) {
                continue;
            }
            int at = data.consumeInt(0, f.length - width);
            switch (kind) {
                case 0 -> Wire.putU8(m, at, data.consumeByte());
                case 1 -> Wire.putU16(m, at, data.consumeShort());
                case 2 -> Wire.putU32(m, at, data.consumeInt());
                default -> Wire.putU64(m, at, data.consumeLong());
            }
        }
        if (f.length >= Wire.HEADER_SIZE && !data.consumeBoolean()) {
            // keep the addressing valid (else the frame stops at the QP lookup)
            MemorySegment s = MemorySegment.ofArray(seed);
            Wire.putU8(m, Wire.OFF_VERSION, Wire.VERSION);
            Wire.putU32(m, Wire.OFF_DST_QPN, Wire.u32(s, Wire.OFF_DST_QPN));
            Wire.putU32(m, Wire.OFF_SRC_QPN, Wire.u32(s, Wire.OFF_SRC_QPN));
            Wire.putU32(m, Wire.OFF_TOKEN, Wire.u32(s, Wire.OFF_TOKEN));
        }
        if (f.length >= Wire.HEADER_SIZE && !data.consumeBoolean()) {
            FrameFuzzRig.seal(f); // else mostly a CRC failure
        }
        return f;
    }

    private static FrameFuzzRig newRig() throws Exception {
        FrameFuzzRig r = new FrameFuzzRig();
        r.captureSeeds();
        return r;
    }

    private static void retire() {
        add(dropsA, rig.a.port.counters());
        add(dropsB, rig.b.port.counters());
        TransportCounters ta = rig.a.engine.datapath().counters;
        TransportCounters tb = rig.b.engine.datapath().counters;
        transport.malformed += ta.malformed + tb.malformed;
        transport.accessErrors += ta.accessErrors + tb.accessErrors;
        transport.dataRx += ta.dataRx + tb.dataRx;
        transport.acksRx += ta.acksRx + tb.acksRx;
        transport.naksRx += ta.naksRx + tb.naksRx;
        transport.outOfWindow += ta.outOfWindow + tb.outOfWindow;
        transport.duplicates += ta.duplicates + tb.duplicates;
        transport.responsesRx += ta.responsesRx + tb.responsesRx;
        rig.close();
    }

    private static void add(PortCounters sum, PortCounters c) {
        sum.rxFrames += c.rxFrames;
        sum.rxShort += c.rxShort;
        sum.rxBadVersion += c.rxBadVersion;
        sum.rxBadCrc += c.rxBadCrc;
        sum.rxUnknownQp += c.rxUnknownQp;
        sum.rxBadOpcode += c.rxBadOpcode;
        sum.rxBadToken += c.rxBadToken;
    }

    @AfterAll
    static void report() {
        if (rig == null) {
            return;
        }
        int seeds = rig.seeds.size();
        StringBuilder names = new StringBuilder();
        for (FrameFuzzRig.Seed s : rig.seeds) {
            names.append(names.isEmpty() ? "" : ", ").append(s.name());
        }
        retire();
        rig = null;
        System.out.println("FrameFuzzing: " + inputs + " inputs, " + delivered + " frames delivered, " + seeds
                + " seed frames, " + rebuilds + " reconnects (an RC QP left RTS)");
        System.out.println("FrameFuzzing: seeds: " + names);
        System.out.println("FrameFuzzing: drops: short " + (dropsA.rxShort + dropsB.rxShort) + " badVersion "
                + (dropsA.rxBadVersion + dropsB.rxBadVersion) + " badCrc " + (dropsA.rxBadCrc + dropsB.rxBadCrc)
                + " unknownQp " + (dropsA.rxUnknownQp + dropsB.rxUnknownQp) + " badOpcode "
                + (dropsA.rxBadOpcode + dropsB.rxBadOpcode) + " badToken " + (dropsA.rxBadToken + dropsB.rxBadToken)
                + "; transport: malformed " + transport.malformed + " accessErrors " + transport.accessErrors
                + " dataRx " + transport.dataRx + " acksRx " + transport.acksRx + " naksRx " + transport.naksRx
                + " responsesRx " + transport.responsesRx + " outOfWindow " + transport.outOfWindow);
    }
}
