package io.metaroce.nic.warmup;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;

/**
 * What this JVM does with a JDK 25 AOT cache (JEP 483, 514): bin/mrce-nicd passes
 * {@code -XX:AOTCache=FILE} when bin/mrce-build made one for the build it runs, and
 * bin/mrce-nicd-aot's training run passes {@code -XX:AOTCacheOutput=FILE}. A JVM that cannot use
 * its cache (another JDK, jars changed since, other heap settings) says why on stdout and runs
 * without it, without class data sharing at all; it then reports no "sharing" in
 * {@code java.vm.info}, which is how the daemon tells, and logs, which case it is in.
 */
public final class AotCache {
    private AotCache() {}

    /** The cache's state, in the JVM's words: a cache file and whether it is mapped. */
    public record State(String cache, String output, boolean sharing) {
        /** One line for the log, or null when no AOT option was given. */
        public String describe() {
            if (!output.isEmpty()) {
                return "AOT training run: at exit the JVM writes the AOT cache " + output;
            }
            if (cache.isEmpty()) {
                return null;
            }
            return sharing
                    ? "AOT cache " + cache + " in use (classes loaded and linked ahead)"
                    : "AOT cache " + cache + " NOT in use: the JVM refused it (its reason above; bin/mrce-build"
                            + " remakes it, MRCE_NICD_AOT=0 leaves it out); running without";
        }

        /** True when a cache was given and mapped. */
        public boolean inUse() {
            return !cache.isEmpty() && sharing;
        }
    }

    /** This JVM's state. */
    public static State current() {
        HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        String vmInfo = System.getProperty("java.vm.info", "");
        return new State(option(hs, "AOTCache"), option(hs, "AOTCacheOutput"), vmInfo.contains("sharing"));
    }

    private static String option(HotSpotDiagnosticMXBean hs, String name) {
        if (hs == null) {
            return "";
        }
        try {
            return hs.getVMOption(name).getValue();
        } catch (IllegalArgumentException e) {
            return ""; // a JVM without the option
        }
    }
}
