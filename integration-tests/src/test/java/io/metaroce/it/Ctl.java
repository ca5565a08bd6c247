package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Duration;

/** {@code bin/mrce-ctl} against the daemon of one host of a {@link NetnsFabric}, run in its namespace. */
final class Ctl {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Ctl() {}

    /** The command's output; fails the test unless it exits 0. */
    static String run(NetnsFabric f, NetnsFabric.Host h, String... args) {
        String[] cmd = new String[args.length + 1];
        cmd[0] = Env.bin("mrce-ctl").toString();
        System.arraycopy(args, 0, cmd, 1, args.length);
        Proc.Result r = f.exec(h, Duration.ofSeconds(30), cmd);
        assertThat(r.ok())
                .as("mrce-ctl %s in %s: %s", String.join(" ", args), h.name(), r.output())
                .isTrue();
        return r.output();
    }

    /** {@code mrce-ctl WHAT --json}, parsed. */
    static JsonNode json(NetnsFabric f, NetnsFabric.Host h, String what) {
        String out = run(f, h, what, "--json");
        try {
            return JSON.readTree(out);
        } catch (IOException e) {
            throw new AssertionError("mrce-ctl " + what + " --json is not JSON: " + out, e);
        }
    }

    /** One transport counter of the daemon ({@code mrce-ctl counters}), e.g. {@code pathLosses}. */
    static long counter(NetnsFabric f, NetnsFabric.Host h, String name) {
        JsonNode counters = json(f, h, "counters");
        JsonNode v = counters.findValue(name);
        assertThat(v).as("counter %s in %s", name, counters).isNotNull();
        return v.asLong();
    }
}
