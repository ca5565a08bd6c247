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
 *
 * The same holds for two sysfs files per GID that middleware reads instead
 * of ibv_query_gid_ex (UCX reads the type to choose a GID and the netdev for
 * its RoCE setup): open() of /sys/class/infiniband/<mrce0>/ports/1/
 * gid_attrs/types/<i> and .../ndevs/<i>, read-only, returns a memfd holding
 * what the kernel's file of a RoCE NIC holds for that entry ("RoCE v2\n",
 * "<ifname>\n"), from the same live GID table the verbs return; an empty
 * slot is EINVAL, as the kernel's read of it. No other sysfs file is served.
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrce.h"

#define EXPORT __attribute__((visibility("default")))
#define MRCE_DEV_DIR "/dev/infiniband/"
#define MRCE_SYSFS_DIR "/sys/class/infiniband/"

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
 * Which GID attribute file `path` names: 1 for types/<i>, 2 for ndevs/<i>
 * (index in *index), 0 for any other path.
 */
int mrce_sysfs_gid_attr(const char *path, unsigned int *index)
{
	const char *name = mrce_dev.vdev.device.name;
	size_t dir_len = sizeof(MRCE_SYSFS_DIR) - 1, name_len;
	const char *p;
	char *end;
	unsigned long i;
	int kind;

	if (!path || !__atomic_load_n(&mrce_dev.listed, __ATOMIC_ACQUIRE) ||
	    !name[0] || strncmp(path, MRCE_SYSFS_DIR, dir_len) != 0)
		return 0;
	p = path + dir_len;
	name_len = strlen(name);
	if (strncmp(p, name, name_len) != 0)
		return 0;
	p += name_len;
	if (strncmp(p, "/ports/1/gid_attrs/", 19) != 0)
		return 0;
	p += 19;
	if (strncmp(p, "types/", 6) == 0)
		kind = 1;
	else if (strncmp(p, "ndevs/", 6) == 0)
		kind = 2;
	else
		return 0;
	p += 6;
	if (*p < '0' || *p > '9')
		return 0;
	errno = 0;
	i = strtoul(p, &end, 10);
	if (errno || *end || i >= MRCE_GID_TBL_LEN)
		return 0;
	*index = (unsigned int)i;
	return kind;
}

/* A read-only memfd with the content of a GID attribute file, or -1. */
static int mrce_sysfs_open(int kind, unsigned int index, int flags)
{
	const struct mrce_hello_resp *h = &mrce_dev.hello;
	union ibv_gid tbl[MRCE_GID_TBL_LEN];
	struct ifaddrs *ifa = NULL;
	char text[32];
	unsigned int n;
	int fd, len;

	if ((flags & O_ACCMODE) != O_RDONLY) {
		errno = EACCES; /* sysfs GID attributes are 0444 */
		return -1;
	}
	if (getifaddrs(&ifa) != 0)
		ifa = NULL;
	n = mrce_gid_table_build(h->gid, ifa, h->ifname, tbl,
				 MRCE_GID_TBL_LEN);
	if (ifa)
		freeifaddrs(ifa);
	if (index >= n) {
		errno = EINVAL; /* an empty slot */
		return -1;
	}
	len = kind == 1 ? snprintf(text, sizeof(text), "RoCE v2\n") :
			  snprintf(text, sizeof(text), "%.15s\n", h->ifname);
	fd = memfd_create("metaroce-sysfs",
			  (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)len) != len ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
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

static mode_t mrce_open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?
		       (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	unsigned int index;
	va_list ap;
	mode_t mode;
	int kind = mrce_sysfs_gid_attr(path, &index);

	if (kind)
		return mrce_sysfs_open(kind, index, flags);
	va_start(ap, flags);
	mode = mrce_open_mode(flags, ap);
	va_end(ap);
	return openat(AT_FDCWD, path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	unsigned int index;
	va_list ap;
	mode_t mode;
	int kind = mrce_sysfs_gid_attr(path, &index);

	if (kind)
		return mrce_sysfs_open(kind, index, flags);
	va_start(ap, flags);
	mode = mrce_open_mode(flags, ap);
	va_end(ap);
	return openat64(AT_FDCWD, path, flags, mode);
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
