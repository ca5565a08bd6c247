package io.metaroce.nic;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The daemon's layering (docs/architecture.md), checked on the compiled main classes of soft-nic,
 * control-plane and abi. From the bottom: {@code abi} (the C ABI in Java), {@code model} (the verbs
 * objects both sides share: PD, MR, CQ, SRQ, channels), {@code port} (packet I/O), {@code transport}
 * (QPs and their requester/responder), {@code engine} (the agent that drives them), {@code verbs}
 * (the verbs service the control plane calls). A rule broken on purpose fails the build.
 */
class LayeringTest {

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.metaroce");
    }

    @Test
    void noPackageCycles() {
        slices().matching("io.metaroce.nic.(*)..").should().beFreeOfCycles().check(classes);
    }

    @Test
    void theModelSitsAtTheBottom() {
        noClasses()
                .that()
                .resideInAPackage("io.metaroce.nic.model..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "io.metaroce.nic.transport..",
                        "io.metaroce.nic.engine..",
                        "io.metaroce.nic.verbs..",
                        "io.metaroce.nic.port..",
                        "io.metaroce.control..")
                .check(classes);
    }

    @Test
    void theTransportIsBelowTheEngineAndTheVerbsService() {
        noClasses()
                .that()
                .resideInAPackage("io.metaroce.nic.transport..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("io.metaroce.nic.engine..", "io.metaroce.nic.verbs..")
                .check(classes);
    }

    @Test
    void thePortKnowsNoTransport() {
        noClasses()
                .that()
                .resideInAPackage("io.metaroce.nic.port..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "io.metaroce.nic.transport..",
                        "io.metaroce.nic.engine..",
                        "io.metaroce.nic.verbs..",
                        "io.metaroce.nic.model..")
                .check(classes);
    }

    @Test
    void theControlPlaneKnowsNoSoftNic() {
        noClasses()
                .that()
                .resideInAnyPackage("io.metaroce.control..", "io.metaroce.abi..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage("io.metaroce.nic..")
                .check(classes);
    }
}
