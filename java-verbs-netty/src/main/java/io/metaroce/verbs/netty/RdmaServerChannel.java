package io.metaroce.verbs.netty;

import io.metaroce.verbs.endpoint.Endpoint;
import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointListener;
import io.metaroce.verbs.endpoint.EndpointOptions;
import io.netty.channel.AbstractServerChannel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.EventLoop;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketException;

/**
 * A Netty server channel that listens on a service of the MetaRoCE daemons' connection service
 * and turns each accepted {@link Endpoint} into a child {@link RdmaChannel}: a
 * {@code ServerBootstrap} with {@code channelFactory(() -> new RdmaServerChannel(group, options))},
 * bound to {@code new InetSocketAddress(service)} (the port is the service id). A virtual thread
 * accepts (the connection set-up blocks on the daemon), the event loop fires each child.
 *
 * <p><b>Thread safety:</b> as any Netty channel: state changes on its event loop.
 */
public class RdmaServerChannel extends AbstractServerChannel {

    /** What the channel accepts from: an {@link EndpointListener} in production, a fake in the tests. */
    interface Acceptor {
        /** The next connected endpoint; throws {@link SocketException} once closed (also during the wait). */
        Endpoint accept() throws IOException;

        /** Stops listening and wakes an accept in progress. */
        void close() throws IOException;
    }

    /** Starts listening on a service. */
    interface Binder {
        Acceptor bind(int service) throws IOException;
    }

    private final Binder binder;
    private final ChannelConfig config = new DefaultChannelConfig(this);
    private final RdmaIoHandle handle = new RdmaIoHandle(() -> {
        if (isOpen()) {
            unsafe().close(voidPromise());
        }
    });
    private volatile Acceptor listener;
    private volatile boolean open = true;
    private volatile InetSocketAddress local;

    /** Children get endpoints built with {@code options}. */
    public RdmaServerChannel(EndpointGroup group, EndpointOptions options) {
        EndpointOptions checked = RdmaChannel.checked(options);
        this.binder = service -> {
            EndpointListener l = group.bind(service, checked);
            return new Acceptor() {
                @Override
                public Endpoint accept() throws IOException {
                    return l.accept();
                }

                @Override
                public void close() throws IOException {
                    l.close();
                }
            };
        };
    }

    /** Accepts from what {@code binder} binds (the tests' fakes). */
    RdmaServerChannel(Binder binder) {
        this.binder = binder;
    }

    @Override
    public ChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && listener != null;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return RdmaIoHandle.isCompatible(loop);
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        handle.register(eventLoop(), promise);
    }

    @Override
    protected void doDeregister() {
        handle.deregister();
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected void doBind(SocketAddress localAddress) throws Exception {
        if (!(localAddress instanceof InetSocketAddress a) || a.getPort() == 0) {
            throw new IllegalArgumentException(
                    "bind to new InetSocketAddress(service), service nonzero: " + localAddress);
        }
        listener = binder.bind(a.getPort());
        local = a;
        Thread.ofVirtual().name("rdma-accept-" + a.getPort()).start(this::acceptLoop);
    }

    private void acceptLoop() {
        Acceptor l = listener;
        while (open) {
            Endpoint e;
            try {
                e = l.accept();
            } catch (SocketException closed) {
                return;
            } catch (IOException | RuntimeException ex) {
                if (!open) {
                    return;
                }
                eventLoop().execute(() -> pipeline().fireExceptionCaught(ex));
                continue;
            }
            eventLoop().execute(() -> {
                if (!open) {
                    e.close();
                    return;
                }
                RdmaChannel child;
                try {
                    child = new RdmaChannel(this, RdmaLink.of(e));
                } catch (IllegalArgumentException bad) { // the peer's receive depth leaves no credits
                    e.close();
                    pipeline().fireExceptionCaught(bad);
                    return;
                }
                pipeline().fireChannelRead(child);
                pipeline().fireChannelReadComplete();
            });
        }
    }

    @Override
    protected void doBeginRead() {
        // accepting runs from bind until close
    }

    @Override
    protected void doClose() throws Exception {
        open = false;
        Acceptor l = listener;
        if (l != null) {
            l.close();
        }
    }
}
