package io.metaroce.it.jverbs;

import io.metaroce.it.Env;
import io.metaroce.it.Proc;
import io.metaroce.it.Wait;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInfo;

/**
 * The base of the java-verbs ITs: the {@link JverbsFabric} (two namespaces, a daemon in each) of
 * one test class, built before its first test (skipped without namespaces) and torn down after
 * its last; {@link Mtu} on the class sets the link's MTU (1500 without). The classes run one
 * after another, so one static field serves them all.
 */
abstract class JverbsFabricTest {

    /** The link's MTU of the annotated test class. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.TYPE)
    @interface Mtu {
        int value();
    }

    static JverbsFabric fabric;

    @BeforeAll
    static void buildFabric(TestInfo info) {
        Env.assumeNamespaces();
        Class<?> test = info.getTestClass().orElseThrow();
        Mtu mtu = test.getAnnotation(Mtu.class);
        fabric = JverbsFabric.withDaemons(test.getSimpleName(), mtu == null ? 1500 : mtu.value());
    }

    @AfterAll
    static void tearDownFabric() {
        if (fabric != null) {
            fabric.close();
            fabric = null;
        }
    }

    /** Waits (60 s at most) until {@code p} printed {@code text}; fails with its output and the fabric's state. */
    static void awaitLine(Proc p, String text) {
        boolean printed = Wait.until(Duration.ofSeconds(60), () -> p.output().contains(text) || !p.isAlive());
        if (!printed || !p.output().contains(text)) {
            throw new AssertionError(p.name() + " did not print \"" + text + "\" (alive=" + p.isAlive() + "):\n"
                    + p.output() + "\n" + fabric.diagnostics());
        }
    }
}
