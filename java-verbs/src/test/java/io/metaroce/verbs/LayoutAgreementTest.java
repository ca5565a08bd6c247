package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every size, offset and enum value in {@link Abi} against the installed
 * {@code <infiniband/verbs.h>}: compiles {@code src/test/c/verbs_offsets.c} with gcc, runs it and
 * compares line by line, both ways (no C value unchecked, no Java constant untested).
 */
class LayoutAgreementTest {

    private static Map<String, Long> fromC;

    @BeforeAll
    static void compileAndRun() throws IOException, InterruptedException {
        Path src = Path.of("src/test/c/verbs_offsets.c").toAbsolutePath();
        Path bin = Path.of("target/verbs_offsets").toAbsolutePath();
        Files.createDirectories(bin.getParent());
        run(
                List.of("gcc", "-Wall", "-Werror", "-o", bin.toString(), src.toString()),
                "gcc and libibverbs-dev (verbs.h) are needed to check the layouts: apt-get install gcc libibverbs-dev");
        String out = run(List.of(bin.toString()), "verbs_offsets failed");
        fromC = new LinkedHashMap<>();
        for (String line : out.lines().toList()) {
            String[] f = line.split(" ");
            fromC.put(f[0], Long.parseLong(f[1]));
        }
    }

    private static String run(List<String> cmd, String hint) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new AssertionError(hint + ": `" + String.join(" ", cmd) + "`:\n" + out);
        }
        return out;
    }

    /** "ibv_send_wr.wr.rdma.rkey" -> SEND_WR_WR_RDMA_RKEY; "ibv_wc.sizeof" -> WC_SIZE; "const.X" -> X. */
    static String javaName(String cName) {
        if (cName.startsWith("const.")) {
            return cName.substring("const.".length());
        }
        int dot = cName.indexOf('.');
        String struct = cName.substring("ibv_".length(), dot).toUpperCase();
        String field = cName.substring(dot + 1);
        if (field.equals("sizeof")) {
            return struct + "_SIZE";
        }
        return struct + "_" + field.replace('.', '_').toUpperCase();
    }

    private static Map<String, Long> fromJava() throws IllegalAccessException {
        Map<String, Long> m = new HashMap<>();
        for (Field f : Abi.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && (f.getType() == long.class || f.getType() == int.class)) {
                m.put(f.getName(), ((Number) f.get(null)).longValue());
            }
        }
        return m;
    }

    @Test
    void everyCValueMatchesItsJavaConstant() throws IllegalAccessException {
        Map<String, Long> java = fromJava();
        assertThat(fromC).hasSizeGreaterThan(150);
        for (Map.Entry<String, Long> e : fromC.entrySet()) {
            String name = javaName(e.getKey());
            assertThat(java)
                    .as("Abi has no constant %s for %s", name, e.getKey())
                    .containsKey(name);
            assertThat(java.get(name))
                    .as("Abi.%s vs verbs.h %s", name, e.getKey())
                    .isEqualTo(e.getValue());
        }
    }

    @Test
    void everyJavaConstantIsChecked() throws IllegalAccessException {
        TreeSet<String> unchecked = new TreeSet<>(fromJava().keySet());
        for (String c : fromC.keySet()) {
            unchecked.remove(javaName(c));
        }
        assertThat(unchecked)
                .as("Abi constants that verbs_offsets.c does not print")
                .isEmpty();
    }

    @Test
    void namesMapAsDocumented() {
        assertThat(javaName("ibv_send_wr.wr.rdma.rkey")).isEqualTo("SEND_WR_WR_RDMA_RKEY");
        assertThat(javaName("ibv_wc.sizeof")).isEqualTo("WC_SIZE");
        assertThat(javaName("const.IBV_WR_SEND")).isEqualTo("IBV_WR_SEND");
    }
}
