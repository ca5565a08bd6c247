package io.metaroce.nic.warmup;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * What the daemon logs about its AOT cache, for each state the JVM can be in (bin/mrce-nicd and
 * AotCacheIT check the real JVMs: a cache in use, refused, stale, missing).
 */
class AotCacheTest {

    @Test
    void noAotOptionSaysNothing() {
        AotCache.State none = new AotCache.State("", "", true);
        assertThat(none.describe()).isNull();
        assertThat(none.inUse()).isFalse();
        assertThat(new AotCache.State("", "", false).describe()).isNull();
    }

    @Test
    void aMappedCacheIsInUse() {
        AotCache.State s = new AotCache.State("/opt/metaroce/soft-nic/target/aot/mrce-nicd.aot", "", true);
        assertThat(s.inUse()).isTrue();
        assertThat(s.describe())
                .startsWith("AOT cache /opt/metaroce/soft-nic/target/aot/mrce-nicd.aot in use (")
                .doesNotContain("NOT");
    }

    @Test
    void aRefusedCacheSaysSoAndHowToFixIt() {
        AotCache.State s = new AotCache.State("/x/mrce-nicd.aot", "", false);
        assertThat(s.inUse()).isFalse();
        assertThat(s.describe())
                .startsWith("AOT cache /x/mrce-nicd.aot NOT in use: the JVM refused it")
                .contains("bin/mrce-build")
                .contains("MRCE_NICD_AOT=0")
                .endsWith("running without");
    }

    @Test
    void aTrainingRunNamesItsOutput() {
        AotCache.State s = new AotCache.State("", "/x/.mrce-nicd.aot.tmp", true);
        assertThat(s.inUse()).isFalse();
        assertThat(s.describe())
                .isEqualTo("AOT training run: at exit the JVM writes the AOT cache /x/.mrce-nicd.aot.tmp");
    }

    @Test
    void thisJvmHasNoCache() {
        // the test JVM runs without -XX:AOTCache and -XX:AOTCacheOutput
        AotCache.State s = AotCache.current();
        assertThat(s.cache()).isEmpty();
        assertThat(s.output()).isEmpty();
        assertThat(s.describe()).isNull();
    }
}
