package io.metaroce.verbs.endpoint;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** The endpoints' JFR events (enabled by default, a handful per connection). */
final class EndpointEvents {
    private EndpointEvents() {}

    /** {@code io.metaroce.verbs.Connect}: an endpoint connected (timed: the set-up, from the request to RTS). */
    @Name("io.metaroce.verbs.Connect")
    @Label("Endpoint Connect")
    @Category({"MetaRoCE", "Verbs"})
    @Description("An RC endpoint was connected (active or passive side)")
    @StackTrace(false)
    static final class Connect extends jdk.jfr.Event {
        @Label("Peer")
        String peer;

        @Label("Service")
        long service;

        @Label("Passive")
        boolean passive;

        @Label("Local QPN")
        int localQpn;

        @Label("Remote QPN")
        int remoteQpn;

        @Label("Error")
        String error;
    }

    /** {@code io.metaroce.verbs.Disconnect}: an endpoint's connection ended. */
    @Name("io.metaroce.verbs.Disconnect")
    @Label("Endpoint Disconnect")
    @Category({"MetaRoCE", "Verbs"})
    @Description("An RC endpoint's connection ended: closed here, or the peer went away")
    @StackTrace(false)
    static final class Disconnect extends jdk.jfr.Event {
        @Label("Peer")
        String peer;

        @Label("Local QPN")
        int localQpn;

        @Label("Local close")
        boolean local;

        @Label("Reason")
        String reason;
    }
}
