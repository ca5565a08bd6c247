package io.metaroce.it.container;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Container;
import io.metaroce.it.Env;
import io.metaroce.it.Proc;
import io.metaroce.it.Sh;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.testcontainers.DockerClientFactory;

/**
 * What the container tests need from the machine: root (namespaces, veths, nsenter), a Docker
 * daemon, and the node image ({@code docker/build-image}, cached). Without root or Docker the
 * tests are skipped with the reason, unless {@code MRCE_REQUIRE_DOCKER=1} (bin/mrce-test sets it
 * once it has a daemon running), which turns the skip into a failure.
 */
final class ContainerEnv {

    /** Every container the fabric makes carries this label, its value the owning JVM's pid. */
    static final String OWNER_LABEL = "io.metaroce.it.owner";
    /** Leaf and management namespaces: {@code mrcect-<jvm pid>-<random>-<role>}. */
    static final String NS_PREFIX = "mrcect-";

    private static final Duration IMAGE_BUILD_TIMEOUT = Duration.ofMinutes(10);
    private static String image;
    private static boolean reaped;

    private ContainerEnv() {}

    /** Skips (or, with MRCE_REQUIRE_DOCKER=1, fails) unless root and a Docker daemon are here. */
    static void assumeDocker() {
        boolean required = "1".equals(System.getenv("MRCE_REQUIRE_DOCKER"));
        String missing = null;
        if (!Env.isRoot()) {
            missing = "needs root (namespaces, veths, nsenter into containers)";
        } else if (!dockerAvailable()) {
            missing = "needs a running Docker daemon (bin/mrce-test starts dockerd; or start it yourself)";
        }
        if (missing != null && required) {
            throw new IllegalStateException(missing + ", and MRCE_REQUIRE_DOCKER=1");
        }
        String reason = missing + "; skipped";
        assumeTrue(missing == null, reason);
    }

    private static boolean dockerAvailable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException e) {
            return false;
        }
    }

    static DockerClient client() {
        return DockerClientFactory.instance().client();
    }

    /** The node image, built (or found in the cache) once per JVM by docker/build-image. */
    static synchronized String image() {
        if (image == null) {
            Proc.Result r = Sh.runOrKill(
                    IMAGE_BUILD_TIMEOUT,
                    List.of(Env.root().resolve("docker/build-image").toString(), "--quiet"));
            List<String> lines = r.output().strip().lines().toList();
            if (!r.ok() || lines.isEmpty() || !lines.getLast().startsWith("metaroce/node:")) {
                throw new IllegalStateException("docker/build-image failed (exit " + r.exit() + "):\n" + r.output());
            }
            image = lines.getLast().strip();
        }
        return image;
    }

    /**
     * Removes what earlier runs left (a JVM killed before its teardown): containers labelled with
     * {@link #OWNER_LABEL} and namespaces named {@link #NS_PREFIX}..., whose owning JVM is gone.
     * Once per JVM.
     */
    static synchronized void reapLeftovers() {
        if (reaped) {
            return;
        }
        reaped = true;
        reapNow();
    }

    /** {@link #reapLeftovers()} without the once-per-JVM guard. */
    static void reapNow() {
        DockerClient docker = client();
        List<Container> ours = docker.listContainersCmd()
                .withShowAll(true)
                .withLabelFilter(List.of(OWNER_LABEL))
                .exec();
        for (Container c : ours) {
            Map<String, String> labels = c.getLabels();
            if (!ownerAlive(labels == null ? null : labels.get(OWNER_LABEL))) {
                try {
                    docker.removeContainerCmd(c.getId())
                            .withForce(true)
                            .withRemoveVolumes(true)
                            .exec();
                } catch (RuntimeException e) {
                    System.err.println("container fabric: cannot remove leftover container " + c.getId() + ": " + e);
                }
            }
        }
        Proc.Result list = Sh.runOrKill("ip", "netns", "list");
        for (String line : list.output().lines().toList()) {
            String ns = line.strip().split("\\s+")[0];
            if (ns.startsWith(NS_PREFIX)
                    && !ownerAlive(ns.substring(NS_PREFIX.length()).split("-")[0])) {
                Sh.runOrKill("ip", "netns", "del", ns);
            }
        }
    }

    private static boolean ownerAlive(String pid) {
        try {
            long owner = Long.parseLong(pid);
            return owner != ProcessHandle.current().pid()
                    ? ProcessHandle.of(owner).isPresent()
                    : true;
        } catch (NumberFormatException | NullPointerException e) {
            return false;
        }
    }
}
