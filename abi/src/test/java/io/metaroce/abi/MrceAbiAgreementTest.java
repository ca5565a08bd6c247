package io.metaroce.abi;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Runs provider-c's mrce_abi_offsets (built from the C header) and checks every line against the
 * Java descriptors: each field offset, each struct size, each constant; and that every named
 * Java field (padding aside) appears on the C side.
 */
class MrceAbiAgreementTest {

    private static List<String> cOffsets() throws IOException, InterruptedException {
        Path exe = Path.of(System.getProperty("metaroce.native.dir", "../provider-c/build"), "mrce_abi_offsets");
        assertThat(exe).as("build provider-c first (make -C provider-c)").isExecutable();
        Process p = new ProcessBuilder(exe.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).isZero();
        return out.lines().filter(l -> !l.isBlank()).toList();
    }

    @Test
    void everyOffsetSizeAndConstantAgrees() throws Exception {
        Map<String, StructLayout> structs = new HashMap<>();
        for (StructLayout l : AbiDescriptors.ALL) {
            structs.put(l.name().orElseThrow(), l);
        }
        Set<String> seen = new HashSet<>();
        int checked = 0;
        for (String line : cOffsets()) {
            String[] kv = line.split(" ");
            String key = kv[0];
            long value = Long.parseLong(kv[1]);
            int dot = key.indexOf('.');
            String owner = key.substring(0, dot);
            String field = key.substring(dot + 1);
            if (owner.equals("const")) {
                long java = ((Number) AbiConstants.class.getField(field).get(null)).longValue();
                assertThat(java).as(key).isEqualTo(value);
                checked++;
                continue;
            }
            StructLayout layout = structs.get(owner);
            assertThat(layout).as("Java descriptor for struct " + owner).isNotNull();
            if (field.equals("__size")) {
                assertThat(layout.byteSize()).as(key).isEqualTo(value);
            } else {
                assertThat(layout.byteOffset(MemoryLayout.PathElement.groupElement(field)))
                        .as(key)
                        .isEqualTo(value);
                seen.add(key);
            }
            checked++;
        }
        assertThat(checked).isGreaterThan(150);
        for (StructLayout l : AbiDescriptors.ALL) {
            for (MemoryLayout m : l.memberLayouts()) {
                String name = m.name().orElse("");
                if (name.isEmpty() || name.startsWith("pad") || name.equals("reserved")) {
                    continue;
                }
                assertThat(seen)
                        .as("C side prints " + l.name().get() + "." + name)
                        .contains(l.name().get() + "." + name);
            }
        }
    }
}
