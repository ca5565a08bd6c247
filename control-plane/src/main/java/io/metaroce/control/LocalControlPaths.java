package io.metaroce.control;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Where the daemon of a network namespace listens, computed the same way by the provider (with
 * {@code stat(2)}): {@code /tmp/metaroce/nicd-<inode of /proc/self/ns/net>.sock}. Each namespace
 * has its own inode, so a process finds the daemon of its own namespace with no configuration.
 * ({@code $METAROCE_SOCK} overrides this in the provider only; the daemon takes {@code --sock}.)
 *
 * <p>A host with several interfaces has one device per interface (mrce-nicd {@code --device
 * NAME=IF}): device {@code mrce0} keeps the path above, every other device {@code NAME} listens at
 * {@code nicd-<inode>-NAME.sock} beside it, and the provider lists every such socket of its
 * namespace (docs/multi-nic.md).
 */
public final class LocalControlPaths {

    private LocalControlPaths() {}

    public static Path defaultSocketPath() throws IOException {
        return socketPathFor(netNamespaceInode());
    }

    /** The control socket of device {@code device} in this namespace (see the class comment). */
    public static Path socketPathFor(String device) throws IOException {
        return socketPathFor(netNamespaceInode(), device);
    }

    static Path socketPathFor(long netNamespaceInode, String device) {
        if ("mrce0".equals(device)) {
            return socketPathFor(netNamespaceInode);
        }
        return Path.of(
                ControlProtocol.SOCK_DIR, "nicd-" + Long.toUnsignedString(netNamespaceInode) + "-" + device + ".sock");
    }

    /**
     * The control sockets of this namespace's devices that exist now: {@code mrce0}'s first, then
     * {@code nicd-<inode>-NAME.sock} in name order (the admin sockets beside them left out).
     */
    public static List<Path> deviceSocketPaths() throws IOException {
        return deviceSocketPaths(Path.of(ControlProtocol.SOCK_DIR), netNamespaceInode());
    }

    static List<Path> deviceSocketPaths(Path dir, long netNamespaceInode) throws IOException {
        String ino = Long.toUnsignedString(netNamespaceInode);
        List<Path> out = new ArrayList<>();
        Path first = dir.resolve("nicd-" + ino + ".sock");
        if (Files.exists(first)) {
            out.add(first);
        }
        if (!Files.isDirectory(dir)) {
            return out;
        }
        String prefix = "nicd-" + ino + "-";
        try (Stream<Path> files = Files.list(dir)) {
            files.filter(f -> {
                        String n = f.getFileName().toString();
                        return n.startsWith(prefix)
                                && n.endsWith(".sock")
                                && !n.endsWith(".admin.sock")
                                && n.length() > prefix.length() + 5;
                    })
                    .sorted()
                    .forEach(out::add);
        }
        return out;
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
