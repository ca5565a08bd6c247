package io.metaroce.it.container;

import io.metaroce.it.Proc;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A program running in a node's container, started from the host with {@code nsenter} into all of
 * the container's namespaces (so it sees the container's filesystem, network and processes,
 * and the daemon there can reach it by its pid). Output goes to a log file on the host.
 *
 * <p>nsenter forks the program into the container's pid namespace and waits; it does not pass
 * signals on, so {@link #terminate}, {@link #kill} and {@link #close} act on the program (and its
 * children) by their host pids. Nothing here can outlive the test: removing the container kills
 * whatever is left in it. Waiting, output and stopping are {@link Proc}'s.
 */
final class NodeProc extends Proc {

    private NodeProc(String name, List<String> shownCommand, Process nsenter, Path log) {
        super(name, shownCommand, nsenter, log);
    }

    static NodeProc start(String name, Path log, List<String> fullCommand, List<String> shownCommand) {
        return new NodeProc(name, shownCommand, launch(log, Map.of(), fullCommand), log);
    }

    /** The program itself (nsenter's child), once it has been forked. */
    Optional<ProcessHandle> program() {
        return process().toHandle().children().findFirst();
    }

    /** SIGTERM to the program (as a crash or an operator would send it). */
    @Override
    protected void terminate() {
        program().ifPresent(ProcessHandle::destroy);
    }

    /** SIGKILL to the program and everything it started, then reap. */
    @Override
    public void kill() {
        List<ProcessHandle> tree = process()
                .toHandle()
                .descendants()
                .sorted(Comparator.comparingLong(ProcessHandle::pid).reversed())
                .toList();
        for (ProcessHandle p : tree) {
            p.destroyForcibly();
        }
        process().destroyForcibly();
        reap();
    }
}
