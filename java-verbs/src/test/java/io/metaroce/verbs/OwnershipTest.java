package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The closing rules of {@link VerbsObject}, on objects with no native side. */
class OwnershipTest {

    static final class Fake extends VerbsObject {
        private final String name;
        int destroyed;
        boolean failDestroy;

        Fake(String name, VerbsObject... deps) {
            super(deps);
            this.name = name;
            attach();
        }

        @Override
        public String describe() {
            return name;
        }

        @Override
        void destroy() {
            if (failDestroy) {
                throw new VerbsException("ibv_fake_destroy", 16);
            }
            destroyed++;
        }
    }

    @Test
    void parentWithLiveChildrenRefusesToCloseAndNamesThem() {
        Fake pd = new Fake("ProtectionDomain 1");
        Fake mr = new Fake("MemoryRegion lkey 0x5", pd);
        assertThatThrownBy(pd::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("cannot close ProtectionDomain 1: 1 object(s) created from it are still open "
                        + "(MemoryRegion lkey 0x5); close them first");
        assertThat(pd.isClosed()).isFalse();
        assertThat(pd.destroyed).isZero();
        mr.close();
        pd.close();
        assertThat(pd.destroyed).isEqualTo(1);
    }

    @Test
    void doubleCloseIsANoOpAndUseAfterCloseIsClear() {
        Fake qp = new Fake("QueuePair 0x000012 (RC)");
        qp.close();
        qp.close();
        assertThat(qp.destroyed).isEqualTo(1);
        assertThatThrownBy(qp::ensureOpen)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("QueuePair 0x000012 (RC) is closed");
    }

    @Test
    void cannotCreateFromAClosedParent() {
        Fake pd = new Fake("pd");
        pd.close();
        assertThatThrownBy(() -> new Fake("mr", pd))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("pd is closed");
    }

    @Test
    void failedDestroyKeepsTheObjectOpen() {
        Fake cq = new Fake("cq");
        cq.failDestroy = true;
        assertThatThrownBy(cq::close)
                .isInstanceOf(VerbsException.class)
                .hasMessageContaining("ibv_fake_destroy failed")
                .hasMessageContaining("errno 16");
        assertThat(cq.isClosed()).isFalse();
        cq.failDestroy = false;
        cq.close();
        assertThat(cq.isClosed()).isTrue();
    }

    @Test
    void anObjectWithSeveralDependenciesHoldsEach() {
        Fake pd = new Fake("pd");
        Fake cq = new Fake("cq");
        Fake qp = new Fake("qp", pd, cq);
        assertThat(pd.liveDependents()).containsExactly(qp);
        assertThat(cq.liveDependents()).containsExactly(qp);
        qp.close();
        assertThat(pd.liveDependents()).isEmpty();
        cq.close();
        pd.close();
    }
}
