package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * An RDMA device as listed by {@code ibv_get_device_list}: a name (e.g. {@code mrce0},
 * {@code mlx5_0}) and a node GUID. A {@code Device} is a plain value; {@link #open()} looks the
 * device up again by name and opens a {@link Context} on it.
 *
 * <p>Immutable, thread-safe (the static methods may be called from any thread).
 */
public record Device(String name, long nodeGuid) {

    static final Native.Verb GET_DEVICE_LIST =
            Native.verb("ibv_get_device_list", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Native.Verb FREE_DEVICE_LIST = Native.verb("ibv_free_device_list", FunctionDescriptor.ofVoid(ADDRESS));
    static final Native.Verb GET_DEVICE_NAME =
            Native.verb("ibv_get_device_name", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Native.Verb GET_DEVICE_GUID =
            Native.verb("ibv_get_device_guid", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    static final Native.Verb OPEN_DEVICE = Native.verb("ibv_open_device", FunctionDescriptor.of(ADDRESS, ADDRESS));

    /**
     * The devices libibverbs (and a preloaded provider such as MetaRoCE) sees, in its order; empty
     * when there are none.
     */
    public static List<Device> list() {
        List<Device> out = new ArrayList<>();
        withList((p, n) -> {
            for (int i = 0; i < n; i++) {
                MemorySegment dev = p.getAtIndex(ADDRESS, i);
                String name = Native.string((MemorySegment) GET_DEVICE_NAME.invoke(dev));
                long guid = Long.reverseBytes((long) GET_DEVICE_GUID.invoke(dev));
                out.add(new Device(name, guid));
            }
            return null;
        });
        return List.copyOf(out);
    }

    /** Opens a context on this device ({@code ibv_open_device}). */
    public Context open() {
        return open(name);
    }

    /**
     * Opens a context on the device called {@code name}, or on the first device when
     * {@code name} is null (as ibv_rc_pingpong does without -d).
     *
     * @throws VerbsException when there is no such device (ENODEV) or the open fails
     */
    public static Context open(String name) {
        return withList((p, n) -> {
            for (int i = 0; i < n; i++) {
                MemorySegment dev = p.getAtIndex(ADDRESS, i);
                String devName = Native.string((MemorySegment) GET_DEVICE_NAME.invoke(dev));
                if (name == null || name.equals(devName)) {
                    MemorySegment ctx = OPEN_DEVICE.create(dev);
                    return new Context(ctx, devName);
                }
            }
            throw new VerbsException(
                    "ibv_open_device",
                    19 /* ENODEV */,
                    name == null
                            ? "no RDMA device found"
                            : "no RDMA device named " + name
                                    + " (is the provider loaded, e.g. LD_PRELOAD=libmetaroce.so, and its daemon running?)");
        });
    }

    private interface ListUser<T> {
        T use(MemorySegment list, int count);
    }

    private static <T> T withList(ListUser<T> user) {
        Native.ensureLoaded();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment num = a.allocate(JAVA_INT);
            MemorySegment list;
            try {
                list = GET_DEVICE_LIST.create(num);
            } catch (VerbsException e) {
                // libibverbs returns NULL when there is no device at all (ENOSYS without sysfs)
                return user.use(MemorySegment.NULL, 0);
            }
            try {
                int n = num.get(JAVA_INT, 0);
                return user.use(list.reinterpret((n + 1) * ADDRESS.byteSize()), n);
            } finally {
                FREE_DEVICE_LIST.invoke(list);
            }
        }
    }

    /** The GUID as ibv_devices prints it, e.g. {@code 0002:c903:0031:7c10}. */
    public String guidString() {
        String h = String.format("%016x", nodeGuid);
        return h.substring(0, 4) + ":" + h.substring(4, 8) + ":" + h.substring(8, 12) + ":" + h.substring(12);
    }
}
