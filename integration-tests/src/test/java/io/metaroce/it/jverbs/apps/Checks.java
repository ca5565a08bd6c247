package io.metaroce.it.jverbs.apps;

/** PASS/FAIL lines for the test apps, and the summary "N passed, M failed". */
final class Checks {

    interface Body {
        void run() throws Exception;
    }

    private int passed;
    private int failed;

    void check(String name, Body body) {
        try {
            body.run();
            passed++;
            System.out.println("PASS " + name);
        } catch (Throwable t) {
            failed++;
            System.out.println("FAIL " + name + ": " + t);
            t.printStackTrace(System.out);
        }
        System.out.flush();
    }

    static void require(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    /** Runs {@code body}, which must throw {@code type}; returns the exception. */
    static <T extends Throwable> T expect(Class<T> type, Body body) throws Exception {
        try {
            body.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                System.out.println("    -> " + t.getClass().getSimpleName() + ": " + t.getMessage());
                return type.cast(t);
            }
            throw new AssertionError("expected " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("expected " + type.getSimpleName() + ", nothing was thrown");
    }

    int finish() {
        System.out.println(passed + " passed, " + failed + " failed");
        return failed == 0 ? 0 : 1;
    }
}
