package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The binding against the installed libibverbs, with no RDMA device needed: it loads, resolves
 * the verbs in libibverbs (no provider preloaded in this JVM), and fails clearly.
 */
class BindingTest {

    @Test
    void resolvesTheVerbsInLibibverbsWithoutAPreload() {
        assertThat(Verbs.available()).isTrue();
        String preload = System.getenv("LD_PRELOAD");
        if (preload == null || !preload.contains("libmetaroce")) {
            assertThat(Verbs.definingObject("ibv_open_device")).get().asString().contains("libibverbs.so");
        }
        assertThat(Verbs.definingObject("ibv_no_such_verb")).isEmpty();
    }

    @Test
    void listingWorksWithoutDevicesAndOpeningAMissingOneNamesIt() {
        assertThat(Device.list()).isNotNull();
        assertThatThrownBy(() -> Device.open("no-such-device0"))
                .isInstanceOf(VerbsException.class)
                .hasMessageContaining("ibv_open_device failed")
                .hasMessageContaining("no RDMA device named no-such-device0");
    }

    @Test
    void errnoTextComesFromTheSystem() {
        VerbsException e = new VerbsException("ibv_post_send", 22, "QueuePair 0x000001 (RC) in state INIT");
        assertThat(e.getMessage())
                .isEqualTo("ibv_post_send failed: Invalid argument (errno 22); QueuePair 0x000001 (RC) in state INIT");
        assertThat(e.verb()).isEqualTo("ibv_post_send");
        assertThat(e.errno()).isEqualTo(22);
        assertThat(WorkCompletion.statusString(WorkCompletion.REM_ACCESS_ERR)).isEqualTo("remote access error");
    }
}
