package io.metaroce.verbs.netty;

import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandle;
import io.netty.channel.IoRegistration;

/**
 * What an {@link RdmaChannel} or {@link RdmaServerChannel} registers with its
 * {@link RdmaIoHandler} event loop, and the registration both channels share. Completions reach
 * the channel as event-loop tasks (from the endpoint group's poller thread), so {@link #handle}
 * receives nothing. Confined to its event loop.
 */
final class RdmaIoHandle implements IoHandle {
    private final Runnable onClose;
    private IoRegistration registration;

    RdmaIoHandle(Runnable onClose) {
        this.onClose = onClose;
    }

    /** Whether {@code loop} runs an {@link RdmaIoHandler}. */
    static boolean isCompatible(EventLoop loop) {
        return loop instanceof IoEventLoop l && l.isCompatible(RdmaIoHandle.class);
    }

    /** Registers with {@code loop} (a channel's {@code doRegister}); completes {@code promise}. */
    void register(EventLoop loop, ChannelPromise promise) {
        ((IoEventLoop) loop).register(this).addListener(f -> {
            if (f.isSuccess()) {
                registration = (IoRegistration) f.getNow();
                promise.setSuccess();
            } else {
                promise.setFailure(f.cause());
            }
        });
    }

    /** Cancels the registration (a channel's {@code doDeregister}). */
    void deregister() {
        if (registration != null) {
            registration.cancel();
        }
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
