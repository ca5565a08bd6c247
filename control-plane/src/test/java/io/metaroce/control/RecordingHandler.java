package io.metaroce.control;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A daemon stand-in that records what it was given. */
class RecordingHandler implements LocalControlHandler {

    record Request(LocalSession session, int op, int seq, byte[] payload) {}

    final List<Request> requests = new CopyOnWriteArrayList<>();
    final List<LocalSession> closed = new CopyOnWriteArrayList<>();

    @Override
    public void onRequest(LocalSession session, int op, int seq, ByteBuffer payload) {
        byte[] bytes = new byte[payload.remaining()];
        payload.duplicate().get(bytes);
        requests.add(new Request(session, op, seq, bytes));
    }

    @Override
    public void onSessionClosed(LocalSession session) {
        closed.add(session);
    }
}
