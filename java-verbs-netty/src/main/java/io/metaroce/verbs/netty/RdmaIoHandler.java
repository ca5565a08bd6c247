package io.metaroce.verbs.netty;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * The Netty 4.2 {@link IoHandler} of the RDMA transport: event loops made with
 * {@code new MultiThreadIoEventLoopGroup(n, RdmaIoHandler.newFactory())} run
 * {@link RdmaChannel}s and {@link RdmaServerChannel}s. An endpoint group's poller thread
 * completes the endpoints' futures and hands each completion to the channel's event loop as a
 * task; between tasks this handler parks the loop's thread until it is woken (a task arrives)
 * or a scheduled task is due. Closing the loop closes the channels still registered.
 *
 * <p><b>Thread safety:</b> driven by its event loop's thread; {@link #wakeup()} from any thread.
 */
public final class RdmaIoHandler implements IoHandler {

    private final Set<RdmaIoHandle> handles = new HashSet<>();
    private volatile Thread thread;

    private RdmaIoHandler() {}

    /** The factory for {@code MultiThreadIoEventLoopGroup}. */
    public static IoHandlerFactory newFactory() {
        return executor -> new RdmaIoHandler();
    }

    @Override
    public int run(IoHandlerContext context) {
        if (thread == null) {
            thread = Thread.currentThread();
        }
        if (context.canBlock()) {
            long delay = context.delayNanos(System.nanoTime());
            LockSupport.parkNanos(this, delay);
        }
        return 0;
    }

    @Override
    public void wakeup() {
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            LockSupport.unpark(t);
        }
    }

    @Override
    public void prepareToDestroy() {
        for (RdmaIoHandle h : handles.toArray(new RdmaIoHandle[0])) {
            h.close();
        }
        handles.clear();
    }

    @Override
    public IoRegistration register(IoHandle handle) {
        if (!(handle instanceof RdmaIoHandle h)) {
            throw new IllegalArgumentException("not an RDMA channel's handle: " + handle);
        }
        if (!handles.add(h)) {
            throw new IllegalStateException("already registered: " + handle);
        }
        return new Registration(h);
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return RdmaIoHandle.class.isAssignableFrom(handleType);
    }

    private final class Registration extends AtomicBoolean implements IoRegistration {
        private final RdmaIoHandle handle;

        Registration(RdmaIoHandle handle) {
            this.handle = handle;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> T attachment() {
            return (T) handle;
        }

        @Override
        public long submit(IoOps ops) {
            return 0; // nothing to submit: completions come as tasks
        }

        @Override
        public boolean isValid() {
            return !get();
        }

        @Override
        public boolean cancel() {
            if (getAndSet(true)) {
                return false;
            }
            handles.remove(handle); // cancel runs on the event loop (channel deregistration)
            return true;
        }
    }
}
