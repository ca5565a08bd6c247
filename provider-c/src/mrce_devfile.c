// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_devfile.c - the device file of mrce0, for middleware that checks it.
 *
 * A kernel RDMA device has a command channel, the character device
 * /dev/infiniband/<dev_name> (uverbsN), and some middleware decides whether
 * a listed device is usable by checking that file before it opens the device:
 * UCX's uct_ib (stat(): a character device; access(R_OK | W_OK)) skips the
 * device otherwise. mrce0's command channel is the daemon's Unix socket, and
 * no file can stand at that path without a kernel device behind it.
 *
 * So for exactly the path "/dev/infiniband/" + mrce0's dev_name, and only
 * once a device list has shown mrce0, stat() and access() answer for that
 * socket: its owner, permissions and times, with the file type "character
 * device" (st_rdev 0: no kernel device number), and access() is the
 * socket's own access(). Every other path goes to the C library untouched.
 * Nothing else of the device is claimed: opening the path still fails
 * (ENOENT), which nobody who uses ibv_open_device needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrce.h"

#define EXPORT __attribute__((visibility("default")))
#define MRCE_DEV_DIR "/dev/infiniband/"

bool mrce_devfile_match(const char *path)
{
	const char *name = mrce_dev.vdev.device.dev_name;
	size_t dir_len = sizeof(MRCE_DEV_DIR) - 1;

	if (!path || !__atomic_load_n(&mrce_dev.listed, __ATOMIC_ACQUIRE) ||
	    !name[0])
		return false;
	return strncmp(path, MRCE_DEV_DIR, dir_len) == 0 &&
	       strcmp(path + dir_len, name) == 0;
}

/* The daemon socket's stat, typed as a character device. */
int mrce_devfile_stat(struct stat *st)
{
	char sock[108];
	int ret;

	ret = mrce_sock_path(sock, sizeof(sock));
	if (ret) {
		errno = ret;
		return -1;
	}
	if (fstatat(AT_FDCWD, sock, st, 0) != 0)
		return -1;
	st->st_mode = S_IFCHR | (st->st_mode & 07777);
	st->st_rdev = 0;
	st->st_size = 0;
	return 0;
}

int mrce_devfile_access(int mode)
{
	char sock[108];
	int ret;

	ret = mrce_sock_path(sock, sizeof(sock));
	if (ret) {
		errno = ret;
		return -1;
	}
	return faccessat(AT_FDCWD, sock, mode, 0);
}

/*
 * The interposed C library functions. They carry glibc's symbol versions
 * (libmetaroce.map), so versioned references bind here; the fall-through
 * uses fstatat/faccessat, which are what stat/access are.
 */
EXPORT int stat(const char *path, struct stat *st)
{
	if (mrce_devfile_match(path))
		return mrce_devfile_stat(st);
	return fstatat(AT_FDCWD, path, st, 0);
}

_Static_assert(sizeof(struct stat) == sizeof(struct stat64),
	       "stat64 is stat on this ABI");

EXPORT int stat64(const char *path, struct stat64 *st)
{
	if (mrce_devfile_match(path))
		return mrce_devfile_stat((struct stat *)st);
	return fstatat64(AT_FDCWD, path, st, 0);
}

EXPORT int access(const char *path, int mode)
{
	if (mrce_devfile_match(path))
		return mrce_devfile_access(mode);
	return faccessat(AT_FDCWD, path, mode, 0);
}

#if defined(__x86_64__)
/* Binaries built against glibc before 2.33 call these (x86_64: one layout). */
EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return stat(path, st);
}

EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	(void)ver;
	return stat64(path, st);
}
#endif
