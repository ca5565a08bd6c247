package io.metaroce.it.jverbs.apps;

/** What the apps the jverbs tests run print: one flushed line each, a test reads them as they come. */
final class AppOutput {
    private AppOutput() {}

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Prints {@code FAIL why} and ends the process with status 1. */
    static void fail(String why) {
        say("FAIL " + why);
        System.exit(1);
    }
}
