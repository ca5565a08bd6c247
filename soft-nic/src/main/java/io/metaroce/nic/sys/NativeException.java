package io.metaroce.nic.sys;

import io.metaroce.abi.Errno;
import java.io.IOException;

/** A libc call failed; carries the call (with its arguments) and errno. */
public final class NativeException extends IOException {
    private final int errno;

    public NativeException(String call, int errno) {
        super(call + " failed: errno " + errno + " (" + Errno.name(errno) + ")");
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
