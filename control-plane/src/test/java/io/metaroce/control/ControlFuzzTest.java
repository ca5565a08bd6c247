package io.metaroce.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Feeds random and mutated frames through the real per-connection pipeline (decoder, encoder,
 * session handler) on an EmbeddedChannel. For each input it predicts, from the protocol rules
 * alone, which frames the daemon must see and whether the connection must close; no exception may
 * escape and every input buffer must be released (run with leakDetectionLevel=paranoid).
 */
class ControlFuzzTest {

    private static final int ITERATIONS = Integer.getInteger("metaroce.fuzz.iterations", 100_000);

    @Test
    void randomAndMutatedStreams() {
        Logger sessionLog = (Logger) LoggerFactory.getLogger(ChannelSession.class);
        Level before = sessionLog.getLevel();
        sessionLog.setLevel(Level.OFF); // tens of thousands of "closing ... protocol error" lines otherwise
        try {
            fuzz();
        } finally {
            sessionLog.setLevel(before);
        }
    }

    private void fuzz() {
        SplittableRandom random = new SplittableRandom(0x6d72636531L);
        int closedCount = 0;
        int delivered = 0;
        for (int i = 0; i < ITERATIONS; i++) {
            byte[] stream = randomStream(random);
            Expectation expect = predict(stream);
            RecordingHandler handler = new RecordingHandler();
            EmbeddedChannel ch = new EmbeddedChannel();
            ChannelSession session = new ChannelSession(i, 1234, 0, 0, ch);
            ch.pipeline()
                    .addLast(
                            new ControlRequestDecoder(),
                            ControlResponseEncoder.INSTANCE,
                            new LocalControlChannelHandler(session, handler));

            List<ByteBuf> chunks = new ArrayList<>();
            int off = 0;
            while (off < stream.length) {
                int n = Math.min(stream.length - off, 1 + random.nextInt(64));
                ByteBuf chunk = Unpooled.buffer(n).writeBytes(stream, off, n);
                chunks.add(chunk);
                if (ch.isOpen()) {
                    ch.writeInbound(chunk);
                } else {
                    chunk.release();
                }
                off += n;
            }
            ch.checkException();
            assertThat(handler.requests).as("iteration %d", i).hasSize(expect.valid.size());
            for (int k = 0; k < expect.valid.size(); k++) {
                assertThat(handler.requests.get(k).seq()).isEqualTo(expect.valid.get(k).seq);
                assertThat(handler.requests.get(k).payload()).isEqualTo(expect.valid.get(k).payload);
            }
            assertThat(ch.isOpen()).as("iteration %d open", i).isEqualTo(!expect.closes);
            assertFalse(ch.finish());
            for (ByteBuf chunk : chunks) { // a partial frame stays cumulated until the channel closes
                assertThat(chunk.refCnt()).as("leaked input").isZero();
            }
            assertThat(handler.closed).hasSize(1);
            closedCount += expect.closes ? 1 : 0;
            delivered += expect.valid.size();
        }
        // The generator must exercise both outcomes a lot.
        assertThat(closedCount).isGreaterThan(ITERATIONS / 4);
        assertThat(delivered).isGreaterThan(ITERATIONS / 4);
    }

    private record Valid(int seq, byte[] payload) {}

    private record Expectation(List<Valid> valid, boolean closes) {}

    /** The protocol rules, restated independently of the decoder. */
    private static Expectation predict(byte[] stream) {
        List<Valid> valid = new ArrayList<>();
        ByteBuffer b = ByteBuffer.wrap(stream).order(ByteOrder.LITTLE_ENDIAN);
        int off = 0;
        while (stream.length - off >= 4) {
            long len = Integer.toUnsignedLong(b.getInt(off));
            if (len > ControlProtocol.MAX_FRAME || len < 4) {
                return new Expectation(valid, true);
            }
            if (stream.length - off < len) {
                return new Expectation(valid, false); // waits for the rest
            }
            if (len < 16) {
                return new Expectation(valid, true);
            }
            int op = Short.toUnsignedInt(b.getShort(off + 4));
            int status = Short.toUnsignedInt(b.getShort(off + 6));
            int nfds = Short.toUnsignedInt(b.getShort(off + 12));
            if (op < 1
                    || op > ControlProtocol.OP_MAX
                    || status != 0
                    || nfds != 0
                    || len - 16 != ControlProtocol.requestSize(op)) {
                return new Expectation(valid, true);
            }
            byte[] payload = new byte[(int) len - 16];
            System.arraycopy(stream, off + 16, payload, 0, payload.length);
            valid.add(new Valid(b.getInt(off + 8), payload));
            off += (int) len;
        }
        return new Expectation(valid, false);
    }

    private static byte[] randomStream(SplittableRandom random) {
        int frames = 1 + random.nextInt(4);
        List<byte[]> parts = new ArrayList<>();
        for (int f = 0; f < frames; f++) {
            switch (random.nextInt(6)) {
                case 0 -> { // pure garbage
                    byte[] g = new byte[random.nextInt(40)];
                    random.nextBytes(g);
                    parts.add(g);
                }
                case 1 -> { // a valid frame with one byte flipped
                    byte[] v = Frames.request(1 + random.nextInt(ControlProtocol.OP_MAX), random.nextInt());
                    v[random.nextInt(v.length)] ^= (byte) (1 + random.nextInt(255));
                    parts.add(v);
                }
                case 2 -> { // a valid header with a random field value
                    byte[] v = Frames.request(1 + random.nextInt(ControlProtocol.OP_MAX), random.nextInt());
                    ByteBuffer b = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
                    switch (random.nextInt(4)) {
                        case 0 -> b.putInt(0, random.nextInt(5000));
                        case 1 -> b.putShort(4, (short) random.nextInt(16));
                        case 2 -> b.putShort(6, (short) random.nextInt(2));
                        default -> b.putShort(12, (short) random.nextInt(2));
                    }
                    parts.add(v);
                }
                case 3 -> { // truncated
                    byte[] v = Frames.request(1 + random.nextInt(ControlProtocol.OP_MAX), random.nextInt());
                    parts.add(java.util.Arrays.copyOf(v, random.nextInt(v.length)));
                }
                default -> parts.add(Frames.request(1 + random.nextInt(ControlProtocol.OP_MAX), random.nextInt()));
            }
        }
        return Frames.concat(parts.toArray(new byte[0][]));
    }
}
