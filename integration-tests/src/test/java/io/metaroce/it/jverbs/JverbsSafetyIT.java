package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Proc;
import io.metaroce.it.jverbs.apps.SafetyApp;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * java-verbs' safe memory, close-during-use and async completions on mrce0 (one host of the fabric, loopback QPs
 * through its daemon): {@link SafetyApp}'s checks, every one named.
 */
@Timeout(600)
@JverbsFabricTest.Mtu(9000)
class JverbsSafetyIT extends JverbsFabricTest {

    @Test
    void closeDuringUseThrowsMemoryIsOwnedOrCheckedAndCompletionsAreAsync() {
        try (Proc p = fabric.start(fabric.a(), "safety", JverbsFabric.javaApp(SafetyApp.class))) {
            int exit = p.waitFor(Duration.ofSeconds(300));
            String out = p.output();
            for (String name : new String[] {
                "closingACqWhileAPollerLoopsEndsThePollerWithAnException",
                "closingAQpWhileAThreadPostsEndsThePosterWithAnException",
                "closingTheArenaFirstDeregistersATiedRegion",
                "aPostOverAnUntiedRegionWhoseArenaClosedThrows",
                "aRegisteredBufferOwnsItsMemory",
                "immediatesArriveInHostOrderAndSnapshotsSurviveTheNextPoll",
                "pollWithATimeoutReturnsNothingWhenNothingCompletes",
                "aChannelAwaitTimesOutThenReturnsTheCqOfACompletion",
                "closingAChannelWakesAVirtualThreadWaitingOnIt",
                "futuresCompleteFromAPollerPerCq",
                "rcParametersComeFromConnectOptions",
                "closingAConnectionDisconnectsAndClosesWhatItOwns",
                "aDaemonListenerTimesOutAndItsCloseWakesItsAccept",
                "guardedPostsAndPollsAllocateNothing",
                "anSrqBelowItsLimitRaisesAnAsyncEventToAVirtualThread",
                "closingAContextWakesAVirtualThreadAwaitingAsyncEvents",
                "aPoolOfRegisteredBuffersCarriesDataAndAllocatesNothing"
            }) {
                assertThat(out).as(out).contains("PASS " + name);
            }
            assertThat(out).as(out).contains("17 passed, 0 failed");
            assertThat(exit).as(out).isZero();
        }
    }
}
