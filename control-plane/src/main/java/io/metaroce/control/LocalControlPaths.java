package io.metaroce.control;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the daemon of a network namespace listens, computed the same way by the provider (with
 * {@code stat(2)}): {@code /tmp/metaroce/nicd-<inode of /proc/self/ns/net>.sock}. Each namespace
 * has its own inode, so a process finds the daemon of its own namespace with no configuration.
 * ({@code $METAROCE_SOCK} overrides this in the provider only; the daemon takes {@code --sock}.)
 */
public final class LocalControlPaths {

    private LocalControlPaths() {}

    public static Path defaultSocketPath() throws IOException {
        return socketPathFor(netNamespaceInode());
    }

    static Path socketPathFor(long netNamespaceInode) {
        return Path.of(ControlProtocol.SOCK_DIR, "nicd-" + Long.toUnsignedString(netNamespaceInode) + ".sock");
    }

    /** The operator socket beside the control socket: {@code nicd-<ino>.admin.sock}. */
    public static Path adminSocketPathFor(Path controlSocket) {
        String name = controlSocket.getFileName().toString();
        String base = name.endsWith(".sock") ? name.substring(0, name.length() - 5) : name;
        return controlSocket.resolveSibling(base + ".admin.sock");
    }

    /** The inode of this process's network namespace (what {@code stat /proc/self/ns/net} reports). */
    public static long netNamespaceInode() throws IOException {
        return (Long) Files.getAttribute(Path.of("/proc/self/ns/net"), "unix:ino");
    }
}
