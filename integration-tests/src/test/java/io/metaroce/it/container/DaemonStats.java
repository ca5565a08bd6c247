package io.metaroce.it.container;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One snapshot of a daemon's {@code --stats} file (soft-nic's StatsWriter): the transport's
 * counters, every path of every QP (active and recently closed), and the paths of the QP closed
 * last (the run that just ended). Only what the tests read.
 */
record DaemonStats(long timeNs, Map<String, Long> counters, List<PathStat> paths, List<PathStat> lastClosedQpPaths) {

    private static final Pattern TIME = Pattern.compile("\"timeNs\":(\\d+)");
    private static final Pattern COUNTERS = Pattern.compile("\"counters\":\\{([^{}]*)\\}");
    /** A path object: {"id":..,"entropy":..,"state":"..",...}, no nested objects. */
    private static final Pattern PATH = Pattern.compile("\\{\"id\":[^{}]*\\}");

    private static final Pattern FIELD = Pattern.compile("\"(\\w+)\":(\"\\w*\"|-?\\d+)");

    /** One path of one QP: its UDP source port (entropy), state and what it carried. */
    record PathStat(Map<String, String> fields) {
        long get(String name) {
            String v = fields.get(name);
            if (v == null) {
                throw new IllegalArgumentException("no " + name + " in path " + fields);
            }
            return Long.parseLong(v);
        }

        int entropy() {
            return (int) get("entropy");
        }

        String state() {
            return fields.get("state").replace("\"", "");
        }

        long packetsSent() {
            return get("packetsSent");
        }

        long losses() {
            return get("losses");
        }

        @Override
        public String toString() {
            return "path " + fields.get("id") + " port " + fields.get("entropy") + " " + state() + " sent "
                    + fields.get("packetsSent") + " lost " + fields.get("losses") + " rtx "
                    + fields.get("retransmitsSent") + " timeouts " + fields.get("timeouts");
        }
    }

    static DaemonStats parse(String json) {
        Matcher t = TIME.matcher(json);
        Matcher c = COUNTERS.matcher(json);
        if (!t.find() || !c.find()) {
            throw new IllegalArgumentException("not a stats snapshot: " + json);
        }
        Map<String, Long> counters = new HashMap<>();
        Matcher f = FIELD.matcher(c.group(1));
        while (f.find()) {
            counters.put(f.group(1), Long.parseLong(f.group(2)));
        }
        int closed = json.indexOf("\"closedQps\":[");
        int lastClosed = closed < 0 ? -1 : json.lastIndexOf("{\"qpn\":");
        return new DaemonStats(
                Long.parseLong(t.group(1)),
                Map.copyOf(counters),
                paths(json),
                lastClosed > closed && closed >= 0 ? paths(json.substring(lastClosed)) : List.of());
    }

    private static List<PathStat> paths(String json) {
        List<PathStat> paths = new ArrayList<>();
        Matcher p = PATH.matcher(json);
        while (p.find()) {
            Map<String, String> fields = new HashMap<>();
            Matcher pf = FIELD.matcher(p.group());
            while (pf.find()) {
                fields.put(pf.group(1), pf.group(2));
            }
            paths.add(new PathStat(fields));
        }
        return List.copyOf(paths);
    }

    long counter(String name) {
        Long v = counters.get(name);
        if (v == null) {
            throw new IllegalArgumentException("no counter " + name + " in " + counters);
        }
        return v;
    }

    /** How much counter {@code name} grew since {@code before}. */
    long delta(DaemonStats before, String name) {
        return counter(name) - before.counter(name);
    }
}
