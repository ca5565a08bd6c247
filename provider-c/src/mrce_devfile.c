// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_devfile.c - the device file of mrce0 (and of every other listed
 * mrceN, each answering for its own daemon's socket), for middleware that
 * checks it.
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

/* The listed device whose /dev/infiniband/<dev_name> PATH is, or NULL. */
static struct mrce_device *mrce_devfile_dev(const char *path)
{
	size_t dir_len = sizeof(MRCE_DEV_DIR) - 1;
	int i;

	if (!path || strncmp(path, MRCE_DEV_DIR, dir_len) != 0)
		return NULL;
	for (i = 0; i < MRCE_MAX_DEVS; i++) {
		struct mrce_device *md = &mrce_devs[i];
		const char *name = md->vdev.device.dev_name;

		if (__atomic_load_n(&md->listed, __ATOMIC_ACQUIRE) &&
		    name[0] && strcmp(path + dir_len, name) == 0)
			return md;
	}
	return NULL;
}

bool mrce_devfile_match(const char *path)
{
	return mrce_devfile_dev(path) != NULL;
}

/* The control socket of MD (mrce_sock_path when it has none recorded). */
static int mrce_devfile_sock(const struct mrce_device *md, char *sock,
			     size_t len)
{
	if (md && md->sock[0]) {
		snprintf(sock, len, "%s", md->sock);
		return 0;
	}
	return mrce_sock_path(sock, len);
}

/* The daemon socket's stat, typed as a character device. */
static int mrce_devfile_stat_of(const struct mrce_device *md, struct stat *st)
{
	char sock[MRCE_SOCK_PATH_MAX];
	int ret;

	ret = mrce_devfile_sock(md, sock, sizeof(sock));
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

int mrce_devfile_stat(struct stat *st)
{
	return mrce_devfile_stat_of(&mrce_dev, st);
}

static int mrce_devfile_access_of(const struct mrce_device *md, int mode)
{
	char sock[MRCE_SOCK_PATH_MAX];
	int ret;

	ret = mrce_devfile_sock(md, sock, sizeof(sock));
	if (ret) {
		errno = ret;
		return -1;
	}
	return faccessat(AT_FDCWD, sock, mode, 0);
}

int mrce_devfile_access(int mode)
{
	return mrce_devfile_access_of(&mrce_dev, mode);
}

/*
 * Which GID attribute file `path` names: 1 for types/<i>, 2 for ndevs/<i>
 * (index in *index, the listed device in *dev), 0 for any other path.
 */
static int mrce_sysfs_gid_attr_dev(const char *path, unsigned int *index,
				   struct mrce_device **dev)
{
	size_t dir_len = sizeof(MRCE_SYSFS_DIR) - 1, name_len = 0;
	struct mrce_device *md = NULL;
	const char *p;
	char *end;
	unsigned long i;
	int kind, d;

	if (!path || strncmp(path, MRCE_SYSFS_DIR, dir_len) != 0)
		return 0;
	p = path + dir_len;
	for (d = 0; d < MRCE_MAX_DEVS && !md; d++) {
		const char *name = mrce_devs[d].vdev.device.name;

		name_len = strlen(name);
		if (__atomic_load_n(&mrce_devs[d].listed, __ATOMIC_ACQUIRE) &&
		    name_len && strncmp(p, name, name_len) == 0 &&
		    p[name_len] == '/')
			md = &mrce_devs[d];
	}
	if (!md)
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
	*dev = md;
	return kind;
}

int mrce_sysfs_gid_attr(const char *path, unsigned int *index)
{
	struct mrce_device *md;

	return mrce_sysfs_gid_attr_dev(path, index, &md);
}

/* A read-only memfd with the content of a GID attribute file, or -1. */
static int mrce_sysfs_open(const struct mrce_device *md, int kind,
			   unsigned int index, int flags)
{
	const struct mrce_hello_resp *h = &md->hello;
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
	struct mrce_device *md = mrce_devfile_dev(path);

	if (md)
		return mrce_devfile_stat_of(md, st);
	return fstatat(AT_FDCWD, path, st, 0);
}

_Static_assert(sizeof(struct stat) == sizeof(struct stat64),
	       "stat64 is stat on this ABI");

EXPORT int stat64(const char *path, struct stat64 *st)
{
	struct mrce_device *md = mrce_devfile_dev(path);

	if (md)
		return mrce_devfile_stat_of(md, (struct stat *)st);
	return fstatat64(AT_FDCWD, path, st, 0);
}

EXPORT int access(const char *path, int mode)
{
	struct mrce_device *md = mrce_devfile_dev(path);

	if (md)
		return mrce_devfile_access_of(md, mode);
	return faccessat(AT_FDCWD, path, mode, 0);
}

static mode_t mrce_open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?
		       (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	struct mrce_device *md = NULL;
	unsigned int index;
	va_list ap;
	mode_t mode;
	int kind = mrce_sysfs_gid_attr_dev(path, &index, &md);

	if (kind)
		return mrce_sysfs_open(md, kind, index, flags);
	va_start(ap, flags);
	mode = mrce_open_mode(flags, ap);
	va_end(ap);
	return openat(AT_FDCWD, path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	struct mrce_device *md = NULL;
	unsigned int index;
	va_list ap;
	mode_t mode;
	int kind = mrce_sysfs_gid_attr_dev(path, &index, &md);

	if (kind)
		return mrce_sysfs_open(md, kind, index, flags);
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
