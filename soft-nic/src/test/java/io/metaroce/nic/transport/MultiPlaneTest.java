package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.port.PlanePort;
import io.metaroce.nic.sim.SimFabric;
import org.junit.jupiter.api.Test;

/**
 * Multi-plane QPs (docs/spec/transport.md, "Multi-plane QPs"): two real engines, each on a
 * {@link PlanePort} over two simulated fabrics of 4 links (plane 0 and plane 1), stream checked
 * SENDs over one RC QP of 8 paths (SimStream compares every byte). Both planes carry the stream;
 * when every link of plane 1 is black-holed mid-run the stream goes on over plane 0 with no error,
 * and once plane 1 heals its paths are probed back and carry traffic again. A redraw keeps a
 * path's plane.
 */
class MultiPlaneTest {

    static SimStream.Config twoPlanes() {
        SimStream.Config c = new SimStream.Config();
        c.seed = 7;
        c.planes = 2;
        c.paths = 8;
        c.stepNs = 2_000;
        c.warmupNs = 0;
        return c;
    }

    static long delivered(SimFabric f) {
        long n = 0;
        for (int i = 0; i < f.links(); i++) {
            n += f.link(i).deliveredFrames;
        }
        return n;
    }

    @Test
    void bothPlanesCarryTheStream() throws Exception {
        SimStream.Config c = twoPlanes();
        c.measureNs = 20_000_000L;
        long[] frames = new long[2];
        c.schedule = (f, t) -> frames[0] = delivered(f);
        c.plane1Schedule = (f, t) -> frames[1] = delivered(f);
        int[] onPlane = new int[2];
        c.inspect = r -> {
            for (int i = 0; i < r.pathCount(); i++) {
                onPlane[PlanePort.planeOf(r.path(i).entropy, 2)]++;
            }
        };
        SimStream.Result r = SimStream.run(c);
        System.out.printf(
                "MultiPlaneTest: %d messages, %.2f Gb/s, frames delivered plane 0 %d, plane 1 %d%n",
                r.messagesChecked(), r.gbps(), frames[0], frames[1]);
        assertThat(r.failed()).as(r.note()).isFalse();
        assertThat(r.messagesChecked()).isGreaterThan(100);
        assertThat(onPlane).as("paths per plane").containsExactly(4, 4);
        assertThat(frames[0]).as("plane 0 frames").isGreaterThan(1000);
        assertThat(frames[1]).as("plane 1 frames").isGreaterThan(1000);
        assertThat(Math.abs(frames[0] - frames[1])).as("spread").isLessThan((frames[0] + frames[1]) / 4);
    }

    @Test
    void aPlaneThatDiesIsLeftAndReadmittedWhenItHeals() throws Exception {
        SimStream.Config c = twoPlanes();
        c.measureNs = 120_000_000L;
        long down = 10_000_000L;
        long up = 40_000_000L;
        long[] plane0 = new long[4];
        long[] plane1 = new long[4];
        c.schedule = (f, t) -> {
            if (t == down) {
                plane0[0] = delivered(f);
            } else if (t == down + 10_000_000L) {
                plane0[1] = delivered(f);
            }
        };
        c.plane1Schedule = (f, t) -> {
            if (t == down) {
                plane1[0] = delivered(f);
                f.forEachLink(l -> l.blackhole(true));
            } else if (t == down + 1_000_000L) {
                plane1[1] = delivered(f); // what was on the wire has landed by now
            } else if (t == up) {
                plane1[2] = delivered(f);
                f.forEachLink(l -> l.blackhole(false));
            }
            plane1[3] = delivered(f);
        };
        int[] activeOnPlane1 = new int[1];
        c.inspect = r -> {
            for (int i = 0; i < r.pathCount(); i++) {
                Path p = r.path(i);
                if (PlanePort.planeOf(p.entropy, 2) == 1 && p.state == Path.ACTIVE) {
                    activeOnPlane1[0]++;
                }
            }
        };
        SimStream.Result r = SimStream.run(c);
        System.out.printf(
                "MultiPlaneTest: plane 1 black-holed 10..40 ms: %d messages, %d redraws, %d retirements,"
                        + " plane 1 frames before %d, during %d, after %d; plane 0 during %d%n",
                r.messagesChecked(),
                r.redraws(),
                r.retirements(),
                plane1[0],
                plane1[2] - plane1[1],
                plane1[3] - plane1[2],
                plane0[1] - plane0[0]);
        assertThat(r.failed()).as("no error completion: " + r.note()).isFalse();
        assertThat(plane1[0]).as("plane 1 carried traffic before").isGreaterThan(300);
        assertThat(plane1[2] - plane1[1])
                .as("nothing through plane 1 while dead")
                .isZero();
        assertThat(plane0[1] - plane0[0])
                .as("plane 0 carries the stream meanwhile")
                .isGreaterThan(300);
        assertThat(plane1[3] - plane1[2])
                .as("plane 1 carries traffic again after it healed")
                .isGreaterThan(1000);
        assertThat(activeOnPlane1[0])
                .as("plane 1's paths ACTIVE again at the end")
                .isEqualTo(4);
        assertThat(r.retirements()).as("plane 1's paths were retired").isGreaterThanOrEqualTo(4);
    }

    @Test
    void aRedrawKeepsThePathsPlane() {
        for (int pool : new int[] {0, 1, 7, 64}) {
            PathSet s = new PathSet();
            s.planes = 2;
            s.start(0x1234, 8, pool, 10_000, 1_000_000);
            for (int i = 0; i < 8; i++) {
                Path p = s.paths[i];
                int plane = PlanePort.planeOf(p.entropy, 2);
                assertThat(plane)
                        .as("path %d, pool %d", i, pool)
                        .isEqualTo(PlanePort.planeOf(s.paths[0].entropy + i, 2));
                for (int k = 0; k < 300; k++) {
                    p.entropy = s.redraw(p, 1000L * k);
                    assertThat(PlanePort.planeOf(p.entropy, 2))
                            .as("path %d redraw %d pool %d", i, k, pool)
                            .isEqualTo(plane);
                }
            }
        }
    }
}
