package io.metaroce.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Two "hosts" in one network namespace, both on its {@code lo}: A serves 127.0.0.1 and B
 * 127.0.0.2 ({@code --addr}), each daemon with its own control socket ({@code --sock}, found by
 * the applications through {@code METAROCE_SOCK}). What {@code bin/mrce-demo} does without root,
 * in a namespace of the test's own.
 */
final class LoopbackFabric extends NetnsFabric {

    private final Path sockDir;

    private LoopbackFabric(String testName) {
        super(testName);
        String ns = ns("lo");
        this.a = new Host("A", ns, "lo", "127.0.0.1");
        this.b = new Host("B", ns, "lo", "127.0.0.2");
        try {
            // Short and private: a control socket's path must fit sun_path (108 bytes).
            this.sockDir = Files.createTempDirectory("mrceit-" + tag + "-");
        } catch (IOException e) {
            throw new IllegalStateException("cannot create a socket directory", e);
        }
    }

    static LoopbackFabric create(String testName) {
        LoopbackFabric f = new LoopbackFabric(testName);
        f.create();
        return f;
    }

    @Override
    protected void build() {
        addNamespace(a.ns());
    }

    @Override
    Path defaultSocket(Host h) {
        return sockDir.resolve("nicd-" + h.name() + ".sock");
    }

    /** mrce-nicd on lo serving the host's address, with the host's own control socket. */
    @Override
    Daemon startDaemon(Host h, String... extraArgs) {
        List<String> args = new ArrayList<>(
                List.of("--addr", h.addr(), "--sock", defaultSocket(h).toString()));
        args.addAll(List.of(extraArgs));
        return super.startDaemon(h, args.toArray(String[]::new));
    }

    /** The application finds its host's daemon by METAROCE_SOCK. */
    @Override
    Proc startApp(Host h, String name, List<String> cmd) {
        List<String> full = new ArrayList<>(List.of("env", "METAROCE_SOCK=" + defaultSocket(h)));
        full.addAll(cmd);
        return super.startApp(h, name, full);
    }

    @Override
    public void close() {
        super.close();
        try (Stream<Path> files = Files.walk(sockDir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // already gone
        }
    }
}
