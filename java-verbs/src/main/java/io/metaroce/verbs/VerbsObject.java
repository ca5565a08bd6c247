package io.metaroce.verbs;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What every verbs object shares: ownership, closing, and the guard that makes closing safe
 * against concurrent use.
 *
 * <p><b>Ownership.</b> An object depends on the objects it was created from or with (a memory
 * region on its protection domain, a queue pair on its PD, CQs and SRQ, a CQ on its context and
 * completion channel, ...). An object with live dependents cannot be closed: {@link #close()}
 * throws {@link IllegalStateException} naming them, and the native object stays untouched (C
 * would return EBUSY). Close in reverse order of creation, e.g. with nested try-with-resources.
 *
 * <p><b>Closing</b> destroys the native object. Closing again is a no-op. Using a closed object
 * throws {@link IllegalStateException} ("... is closed"). If the native destroy verb fails, a
 * {@link VerbsException} is thrown and the object stays open.
 *
 * <p><b>Thread safety.</b> Every native call on an object runs inside an acquire/release guard
 * (a lock-free in-flight count with a closing bit, one compare-and-set each way, nothing
 * allocated): {@link #close()} first refuses new calls, then waits for the calls in flight to
 * return, and only then destroys the native object. A close that races with a post, a poll or a
 * control verb on another thread therefore makes that call either complete normally or throw
 * {@link IllegalStateException}; it never reaches freed native memory. Calls in flight are short
 * (the data-path verbs never block; blocking waits such as {@link CompletionChannel#await} are
 * woken by the close). A thread must not close an object from inside a call on that same object.
 * Whether several threads may use one object <i>at the same time</i> is the provider's rule
 * (libibverbs: posting and polling are thread-safe per QP/CQ); the builders
 * ({@link SendWorkRequest}, {@link RecvWorkRequest}, {@link WorkCompletions}) are not.
 */
public abstract class VerbsObject implements AutoCloseable {

    /** Guards the dependency sets of every object (control path only). */
    private static final Object LOCK = new Object();

    private final List<VerbsObject> dependencies;
    private final Set<VerbsObject> dependents = new LinkedHashSet<>();
    private volatile boolean closed;
    /** In-flight native calls in the low 31 bits; {@link #CLOSING} once close() refuses new ones. */
    private volatile int guard;
    /** Guarded by LOCK: a close is between refusing calls and destroying. */
    private boolean closing;

    private static final int CLOSING = Integer.MIN_VALUE;
    private static final VarHandle GUARD;

    static {
        try {
            GUARD = MethodHandles.lookup().findVarHandle(VerbsObject.class, "guard", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Registers this object as a dependent of each non-null dependency (which must be open). */
    VerbsObject(VerbsObject... dependsOn) {
        List<VerbsObject> deps = new ArrayList<>();
        for (VerbsObject d : dependsOn) {
            if (d != null) {
                deps.add(d);
            }
        }
        this.dependencies = List.copyOf(deps);
    }

    /**
     * Called by subclasses once the native object exists: links this object to its dependencies.
     * When one of them is closed or closing meanwhile, the new native object is destroyed again
     * and the IllegalStateException naming the dependency is thrown.
     */
    final void attach() {
        synchronized (LOCK) {
            try {
                for (VerbsObject d : dependencies) {
                    d.ensureOpen();
                }
            } catch (IllegalStateException e) {
                try {
                    destroy();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            for (VerbsObject d : dependencies) {
                d.dependents.add(this);
            }
        }
    }

    /** A short description for messages, e.g. {@code "QueuePair 0x000012 (RC)"}. */
    public abstract String describe();

    /** Destroys the native object; throws VerbsException on failure. */
    abstract void destroy();

    /** True once {@link #close()} succeeded. */
    public final boolean isClosed() {
        return closed;
    }

    /** Throws IllegalStateException when this object is closed (or being closed). */
    final void ensureOpen() {
        if (guard < 0) {
            throw closedException();
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException(describe() + " is closed");
    }

    /**
     * Enters a native call on this object: throws IllegalStateException when it is closed or
     * being closed, else counts the call in flight until {@link #release()}. Lock-free and
     * allocation-free; pair it with release() in a finally block.
     */
    final void acquire() {
        for (; ; ) {
            int g = guard;
            if (g < 0) {
                throw closedException();
            }
            if (GUARD.compareAndSet(this, g, g + 1)) {
                return;
            }
        }
    }

    /** Leaves a native call entered with {@link #acquire()}. */
    final void release() {
        GUARD.getAndAdd(this, -1);
    }

    /** Native calls on this object in flight now (for tests). */
    final int inFlight() {
        return guard & ~CLOSING;
    }

    /** True from the moment close() refuses new calls (for tests). */
    final boolean isClosing() {
        return guard < 0;
    }

    /**
     * Called by close() after new calls are refused and before it waits for those in flight:
     * objects whose calls can block (a completion channel's await) wake them here.
     */
    void wakeBlockedCalls() {}

    /** The objects that depend on this one and are still open. */
    public final List<VerbsObject> liveDependents() {
        synchronized (LOCK) {
            return List.copyOf(dependents);
        }
    }

    /**
     * Destroys the native object. A no-op when already closed; throws IllegalStateException
     * (naming them) while dependents are open, and VerbsException when the destroy verb fails.
     * Refuses new calls at once, then waits for the native calls in flight on other threads to
     * return before destroying (see the class comment).
     */
    @Override
    public final void close() {
        for (; ; ) {
            synchronized (LOCK) {
                if (closed) {
                    return;
                }
                if (!dependents.isEmpty()) {
                    StringBuilder names = new StringBuilder();
                    for (VerbsObject d : dependents) {
                        names.append(names.isEmpty() ? "" : ", ").append(d.describe());
                    }
                    throw new IllegalStateException("cannot close " + describe() + ": " + dependents.size()
                            + " object(s) created from it are still open (" + names + "); close them first");
                }
                if (!closing) {
                    closing = true;
                    GUARD.getAndBitwiseOr(this, CLOSING);
                    break;
                }
            }
            Thread.yield(); // another thread is closing it: wait for its outcome (closed: no-op)
        }
        // Outside LOCK: a call in flight may itself need LOCK (creating a child object).
        boolean destroyed = false;
        try {
            wakeBlockedCalls();
            for (int spins = 0; inFlight() != 0; spins++) {
                if (spins < 128) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
            destroy();
            destroyed = true;
        } finally {
            synchronized (LOCK) {
                closing = false;
                if (destroyed) {
                    closed = true;
                    for (VerbsObject d : dependencies) {
                        d.dependents.remove(this);
                    }
                } else {
                    GUARD.getAndBitwiseAnd(this, ~CLOSING);
                }
            }
        }
    }
}
