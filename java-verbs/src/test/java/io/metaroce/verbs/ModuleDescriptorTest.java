package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The compiled module-info: the module's name, what it exports and requires. */
class ModuleDescriptorTest {

    @Test
    void theModuleExportsTheThreeApiPackagesAndRequiresJfr() throws Exception {
        Path classes = Path.of(
                Verbs.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor d =
                ModuleFinder.of(classes).find("io.metaroce.verbs").orElseThrow().descriptor();
        assertThat(d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
                .containsExactlyInAnyOrder("io.metaroce.verbs", "io.metaroce.verbs.cm", "io.metaroce.verbs.endpoint");
        assertThat(d.requires().stream().map(ModuleDescriptor.Requires::name).collect(Collectors.toSet()))
                .contains("jdk.jfr", "java.base");
        assertThat(d.packages()).doesNotContain("io.metaroce.verbs.examples");
    }
}
