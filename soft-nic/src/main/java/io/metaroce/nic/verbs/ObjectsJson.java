package io.metaroce.nic.verbs;

import io.metaroce.control.cm.ServiceTable;
import java.util.ArrayList;
import java.util.Collection;

/** The admin view of the live objects: what {@link VerbsService#objectsJson()} answers. */
final class ObjectsJson {
    private ObjectsJson() {}

    /**
     * The live objects per provider connection and in all, as JSON (for mrce-ctl objects and the
     * leak checks of the tests): {@code {"sessions":n,"totals":{...},"perSession":[...],"cmService":{...}}}.
     */
    static String of(Collection<SessionObjects> sessions, ServiceTable services) {
        StringBuilder per = new StringBuilder(256);
        long pds = 0;
        long mrs = 0;
        long channels = 0;
        long cqs = 0;
        long qps = 0;
        int n = 0;
        for (SessionObjects s : new ArrayList<>(sessions)) {
            int p;
            int m;
            int ch;
            int c;
            int q;
            synchronized (s) {
                p = s.pds.size();
                m = s.mrs.size();
                ch = s.channels.size();
                c = s.cqs.size();
                q = s.qps.size();
            }
            pds += p;
            mrs += m;
            channels += ch;
            cqs += c;
            qps += q;
            if (n++ > 0) {
                per.append(',');
            }
            per.append("{\"id\":")
                    .append(s.session.id())
                    .append(",\"pid\":")
                    .append(s.pid)
                    .append(",\"pds\":")
                    .append(p)
                    .append(",\"mrs\":")
                    .append(m)
                    .append(",\"compChannels\":")
                    .append(ch)
                    .append(",\"cqs\":")
                    .append(c)
                    .append(",\"qps\":")
                    .append(q)
                    .append('}');
        }
        return "{\"sessions\":" + n + ",\"totals\":{\"pds\":" + pds + ",\"mrs\":" + mrs
                + ",\"compChannels\":" + channels + ",\"cqs\":" + cqs + ",\"qps\":" + qps
                + "},\"perSession\":[" + per + "]" + cmServiceJson(services) + "}";
    }

    /** {@code ,"cmService":{...}} (the connection service's listens, binds and requests), or nothing without it. */
    private static String cmServiceJson(ServiceTable t) {
        return t == null ? "" : ",\"cmService\":" + t.json();
    }
}
