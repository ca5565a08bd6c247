package io.metaroce.nic.transport;

import io.metaroce.nic.port.Port;
import io.metaroce.nic.port.PortCounters;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Port} in front of another (a test link end) that records every frame the engine sends
 * (while {@link #recording}) and delivers frames a test injects before the link's own. Test
 * support for the fuzzers: the recorded frames are the seeds, the injected ones their mutants.
 */
final class TapPort implements Port {
    record Sent(byte[] bytes, int dstIp, int dstPort, int entropy) {}

    private final Port inner;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment rx;
    private final ByteBuffer rxView;
    final List<Sent> sent = new ArrayList<>();
    boolean recording;
    private byte[] injected;
    private int injectedSrcIp;
    private int injectedSrcPort;
    private int injectedEcn;

    TapPort(Port inner) {
        this.inner = inner;
        rx = arena.allocate(inner.maxFrame(), 64);
        rxView = rx.asByteBuffer();
    }

    /** The next poll delivers {@code frame} (at most maxFrame bytes) first. */
    void inject(byte[] frame, int srcIp, int srcPort, int ecn) {
        injected = frame;
        injectedSrcIp = srcIp;
        injectedSrcPort = srcPort;
        injectedEcn = ecn;
    }

    @Override
    public int poll(FrameHandler handler) {
        if (injected != null) {
            byte[] f = injected;
            injected = null;
            MemorySegment.copy(MemorySegment.ofArray(f), 0, rx, 0, f.length);
            rxView.clear().limit(f.length);
            counters().rxFrames++;
            handler.onFrame(rx, rxView, f.length, injectedSrcIp, injectedSrcPort, injectedEcn);
            return 1;
        }
        return inner.poll(handler);
    }

    @Override
    public MemorySegment claim() {
        return inner.claim();
    }

    @Override
    public ByteBuffer claimedView() {
        return inner.claimedView();
    }

    @Override
    public void commit(int length, int dstIp, int dstPort, int entropy) {
        if (recording) {
            sent.add(
                    new Sent(inner.claim().asSlice(0, length).toArray(ValueLayout.JAVA_BYTE), dstIp, dstPort, entropy));
        }
        inner.commit(length, dstIp, dstPort, entropy);
    }

    @Override
    public int flush() {
        return inner.flush();
    }

    @Override
    public boolean readsEcn() {
        return inner.readsEcn();
    }

    @Override
    public int maxFrame() {
        return inner.maxFrame();
    }

    @Override
    public int localIp() {
        return inner.localIp();
    }

    @Override
    public int localPort() {
        return inner.localPort();
    }

    @Override
    public int fd() {
        return inner.fd();
    }

    @Override
    public PortCounters counters() {
        return inner.counters();
    }

    @Override
    public void close() {
        inner.close();
        arena.close();
    }
}
