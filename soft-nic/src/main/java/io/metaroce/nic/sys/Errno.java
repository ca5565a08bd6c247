package io.metaroce.nic.sys;

/** The errno values the daemon returns or tests for (Linux x86-64). */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int EEXIST = 17;
    public static final int EINVAL = 22;
    public static final int ENOSPC = 28;
    public static final int ERANGE = 34;
    public static final int ENOSYS = 38;
    public static final int EPROTO = 71;
    public static final int EOPNOTSUPP = 95;

    private Errno() {}

    public static String name(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case ESRCH -> "ESRCH";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case EBADF -> "EBADF";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EFAULT -> "EFAULT";
            case EBUSY -> "EBUSY";
            case EEXIST -> "EEXIST";
            case EINVAL -> "EINVAL";
            case ENOSPC -> "ENOSPC";
            case ERANGE -> "ERANGE";
            case ENOSYS -> "ENOSYS";
            case EPROTO -> "EPROTO";
            case EOPNOTSUPP -> "EOPNOTSUPP";
            default -> "errno " + errno;
        };
    }
}
