package io.metaroce.it.container;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.container.ContainerFabric.Counters;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Unmodified applications between containers on the standard fabric (hosts A and C behind leaf
 * A, host B behind leaf B, four ECMP spine links), one daemon per container.
 */
@Tag("container")
@Timeout(600)
class ContainerScenariosIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final AtomicInteger PORT = new AtomicInteger(19100);
    private static ContainerFabric fabric;
    private static Node a;
    private static Node b;
    private static Node c;

    @BeforeAll
    static void fabric() {
        ContainerEnv.assumeDocker();
        fabric = ContainerFabric.builder("ContainerScenariosIT").leafA("A", "C").leafB("B").build();
        a = fabric.host("A");
        b = fabric.host("B");
        c = fabric.host("C");
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void rcPingPongChecksDataAcrossContainers() {
        Counters before = fabric.spineCounters();
        int port = PORT.getAndIncrement();
        Apps.Exits e = Apps.startPingPong(fabric, b, a, port, "-c", "-n", "1000").finish(RUN_TIMEOUT);
        Apps.assertPingPong(e, 4096, 1000, "ibv_rc_pingpong -c -n 1000, A to B");
        Counters carried = fabric.spineCounters().minus(before);
        System.out.printf("ContainerScenariosIT: rc_pingpong: packets per spine link %s%n", carried);
        assertThat(carried.totalAtoB()).as("A->B packets on the spine").isGreaterThanOrEqualTo(1000);
        assertThat(carried.totalBtoA()).as("B->A packets on the spine").isGreaterThanOrEqualTo(1000);
    }
}
