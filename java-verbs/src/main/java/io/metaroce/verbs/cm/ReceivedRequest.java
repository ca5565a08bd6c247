package io.metaroce.verbs.cm;

import io.metaroce.verbs.cm.ConnectionService.ConnectionRequest;
import java.net.InetSocketAddress;

/**
 * What every connection request carries, whichever service received it: the requester's
 * endpoint, its private data and its address. The services add how to answer.
 */
abstract class ReceivedRequest implements ConnectionRequest {
    private final QpEndpoint remote;
    private final byte[] privateData;
    private final InetSocketAddress peer;

    ReceivedRequest(QpEndpoint remote, byte[] privateData, InetSocketAddress peer) {
        this.remote = remote;
        this.privateData = privateData;
        this.peer = peer;
    }

    @Override
    public final QpEndpoint remote() {
        return remote;
    }

    @Override
    public final byte[] privateData() {
        return privateData.clone();
    }

    @Override
    public final InetSocketAddress peer() {
        return peer;
    }

    /** The private data as received (not a copy), for the answer that echoes it. */
    final byte[] receivedPrivateData() {
        return privateData;
    }
}
