package io.metaroce.control.cm;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.util.ResourceLeakDetector;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Random and mutated frames into the connection manager's decoder on an EmbeddedChannel: every
 * input either decodes into messages that re-encode to the same bytes, or ends in a
 * {@link CmProtocolException}, never another exception, and the decoder releases every input
 * buffer (checked by reference count, with paranoid leak detection on). {@code -Dmetaroce.fuzz.iterations=1000000} (the {@code fuzz} profile) for the long run.
 */
class CmFuzzTest {
    private static final int ITERATIONS = Integer.getInteger("metaroce.fuzz.iterations", 100_000);

    @Test
    void randomAndMutatedFrames() {
        ResourceLeakDetector.Level saved = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        try {
            SplittableRandom r = new SplittableRandom(0xc0ffeeL);
            int decoded = 0;
            int rejected = 0;
            for (int i = 0; i < ITERATIONS; i++) {
                ByteBuf input = PooledByteBufAllocator.DEFAULT.buffer();
                if (r.nextInt(4) == 0) {
                    byte[] junk = new byte[r.nextInt(600)];
                    r.nextBytes(junk);
                    input.writeBytes(junk);
                } else {
                    CmMessage m = CmCodecTest.ALL.get(r.nextInt(CmCodecTest.ALL.size()));
                    CmCodec.encode(m, input);
                    int flips = r.nextInt(4);
                    for (int k = 0; k < flips && input.readableBytes() > 0; k++) {
                        int at = r.nextInt(input.readableBytes());
                        input.setByte(at, input.getByte(at) ^ (1 << r.nextInt(8)));
                    }
                    if (r.nextInt(8) == 0) {
                        input.writerIndex(r.nextInt(input.writerIndex() + 1));
                    }
                }
                EmbeddedChannel ch = new EmbeddedChannel(new CmCodec.Decoder());
                try {
                    ch.writeInbound(input.retain());
                    Object m;
                    while ((m = ch.readInbound()) != null) {
                        ByteBuf again = Unpooled.buffer();
                        CmCodec.encode((CmMessage) m, again);
                        EmbeddedChannel dec = new EmbeddedChannel(new CmCodec.Decoder());
                        dec.writeInbound(again.retainedDuplicate());
                        assertThat((Object) dec.readInbound()).isEqualTo(m);
                        dec.finishAndReleaseAll();
                        again.release();
                        decoded++;
                    }
                } catch (DecoderException e) {
                    assertThat(e.getCause()).isInstanceOf(CmProtocolException.class);
                    rejected++;
                }
                ch.finishAndReleaseAll();
                assertThat(input.refCnt()).as("the decoder released its input").isEqualTo(1);
                input.release();
            }
            assertThat(decoded).isGreaterThan(ITERATIONS / 10);
            assertThat(rejected).isGreaterThan(ITERATIONS / 10);
        } finally {
            ResourceLeakDetector.setLevel(saved);
        }
    }
}
