package io.metaroce.verbs;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What every verbs object shares: ownership and closing.
 *
 * <p><b>Ownership.</b> An object depends on the objects it was created from or with (a memory
 * region on its protection domain, a queue pair on its PD, CQs and SRQ, a CQ on its context and
 * completion channel, ...). An object with live dependents cannot be closed: {@link #close()}
 * throws {@link IllegalStateException} naming them, and the native object stays untouched (C
 * would return EBUSY). Close in reverse order of creation, e.g. with nested try-with-resources.
 *
 * <p><b>Closing</b> destroys the native object. Closing again is a no-op. Using a closed object
 * throws {@link IllegalStateException} ("... is closed"). If the native destroy verb fails, a
 * {@link VerbsException} is thrown and the object stays open. Closing must not race with the
 * object's use on another thread.
 */
public abstract class VerbsObject implements AutoCloseable {

    /** Guards the dependency sets of every object (control path only). */
    private static final Object LOCK = new Object();

    private final List<VerbsObject> dependencies;
    private final Set<VerbsObject> dependents = new LinkedHashSet<>();
    private volatile boolean closed;

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

    /** Called by subclasses once the native object exists: links this object to its dependencies. */
    final void attach() {
        synchronized (LOCK) {
            for (VerbsObject d : dependencies) {
                d.ensureOpen();
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

    /** Throws IllegalStateException when this object is closed. */
    final void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(describe() + " is closed");
        }
    }

    /** The objects that depend on this one and are still open. */
    public final List<VerbsObject> liveDependents() {
        synchronized (LOCK) {
            return List.copyOf(dependents);
        }
    }

    /**
     * Destroys the native object. A no-op when already closed; throws IllegalStateException
     * (naming them) while dependents are open, and VerbsException when the destroy verb fails.
     */
    @Override
    public final void close() {
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
            destroy();
            closed = true;
            for (VerbsObject d : dependencies) {
                d.dependents.remove(this);
            }
        }
    }
}
