package io.metaroce.verbs.netty;

import io.netty.channel.IoEvent;
import io.netty.channel.IoHandle;
import io.netty.channel.IoRegistration;

/**
 * What an {@link RdmaChannel} or {@link RdmaServerChannel} registers with its
 * {@link RdmaIoHandler} event loop. Completions reach the channel as event-loop tasks (from the
 * endpoint group's poller thread), so {@link #handle} receives nothing. Confined to its event loop.
 */
final class RdmaIoHandle implements IoHandle {
    private final Runnable onClose;

    RdmaIoHandle(Runnable onClose) {
        this.onClose = onClose;
    }

    @Override
    public void handle(IoRegistration registration, IoEvent ioEvent) {
        // no I/O events: work arrives as tasks
    }

    @Override
    public void close() {
        onClose.run();
    }
}
