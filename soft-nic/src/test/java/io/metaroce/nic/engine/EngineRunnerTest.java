package io.metaroce.nic.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.port.UdpPort;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.transport.TransportSettings;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The engine threads: mrce-nicd --threading shared (one thread runs the engines of several devices,
 * wakes for any of them from its sleep in epoll, and hands an engine back on remove) and a device's
 * own thread.
 */
class EngineRunnerTest {

    @Test
    void oneThreadRunsEveryEngineAndLetsGoOfARemovedOne() throws Exception {
        int udp = 20000 + new Random().nextInt(20000);
        try (EngineAgent e0 = new EngineAgent(
                        new UdpPort(Inet4.parse("127.0.0.1"), udp, EngineAgent.FRAME_BYTES, 32),
                        new MrTable(16),
                        TransportSettings.SIMULATION);
                EngineAgent e1 = new EngineAgent(
                        new UdpPort(Inet4.parse("127.0.0.2"), udp, EngineAgent.FRAME_BYTES, 32),
                        new MrTable(16),
                        TransportSettings.SIMULATION);
                EngineRunner runner = new EngineRunner("mrce-engine-shared", IdleStrategy.backoff(0, 0))) {
            runner.add(e0);
            runner.add(e1);
            runner.start();
            // With no spins the thread sleeps in epoll at once: each command must wake it.
            for (int round = 0; round < 50; round++) {
                Thread t0 = ranOn(e0);
                Thread t1 = ranOn(e1);
                assertThat(t0.getName()).isEqualTo("mrce-engine-shared");
                assertThat(t1).isSameAs(t0);
            }
            runner.remove(e1);
            // e1 is the caller's again: a command queued now runs only when the caller drives it.
            AtomicReference<Thread> ranOn = new AtomicReference<>();
            e1.submit(() -> ranOn.set(Thread.currentThread()));
            assertThat(ranOn.get()).as("nobody runs a removed engine").isNull();
            assertThat(ranOn(e0).getName()).as("the other engine still runs").isEqualTo("mrce-engine-shared");
            assertThat(ranOn.get()).isNull();
            e1.doWork(System.nanoTime());
            assertThat(ranOn.get()).isSameAs(Thread.currentThread());
        }
    }

    @Test
    void aDedicatedRunnerSleepsOnItsEngineAndEveryCommandWakesIt() throws Exception {
        int udp = 20000 + new Random().nextInt(20000);
        try (EngineAgent e = new EngineAgent(
                new UdpPort(Inet4.parse("127.0.0.1"), udp, EngineAgent.FRAME_BYTES, 32),
                new MrTable(16),
                TransportSettings.SIMULATION)) {
            EngineRunner runner = EngineRunner.dedicated(e, IdleStrategy.backoff(0, 0));
            runner.start();
            try {
                for (int round = 0; round < 50; round++) {
                    assertThat(ranOn(e).getName()).isEqualTo("mrce-engine");
                }
            } finally {
                runner.close();
            }
            assertThat(runner.summary()).startsWith("mrce-engine: busy cycles");
            // Stopped: the caller owns the engine again.
            AtomicReference<Thread> ranOn = new AtomicReference<>();
            e.submit(() -> ranOn.set(Thread.currentThread()));
            e.doWork(System.nanoTime());
            assertThat(ranOn.get()).isSameAs(Thread.currentThread());
        }
    }

    private static Thread ranOn(EngineAgent engine) throws InterruptedException {
        AtomicReference<Thread> thread = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        assertThat(engine.submit(() -> {
                    thread.set(Thread.currentThread());
                    done.countDown();
                }))
                .isTrue();
        assertThat(done.await(10, TimeUnit.SECONDS)).as("the command ran").isTrue();
        return thread.get();
    }
}
