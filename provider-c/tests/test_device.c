// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of what middleware probes on the device, without a daemon:
 * the verbs_device layout of rdma-core 44 behind mrce0's struct ibv_device,
 * the GID table (built from a made-up address list, and live from the
 * addresses of `lo` through the query verbs), and the device file that
 * stat()/access() answer for (mrce_devfile.c) from a socket made here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mrce.h"
#include "check.h"

bool mrce_devfile_match(const char *path);
int mrce_sysfs_gid_attr(const char *path, unsigned int *index);


static void mapped(union ibv_gid *g, const char *ip)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	inet_pton(AF_INET, ip, &g->raw[12]);
}

/* rdma-core 44's struct verbs_device on LP64, offsets as its driver.h has them. */
static void test_verbs_device_layout(void)
{
	CHECK(sizeof(struct ibv_device) == 664);
	CHECK(offsetof(struct mrce_verbs_device, device) == 0);
	CHECK(offsetof(struct mrce_verbs_device, ops) == 664);
	CHECK(offsetof(struct mrce_verbs_device, refcount) == 672);
	CHECK(offsetof(struct mrce_verbs_device, entry) == 680);
	CHECK(offsetof(struct mrce_verbs_device, sysfs) == 696);
	CHECK(offsetof(struct mrce_verbs_device, core_support) == 704);
	CHECK(sizeof(struct mrce_verbs_device) == 712);
	CHECK(offsetof(struct mrce_verbs_device_ops, alloc_context) == 40);
	CHECK(sizeof(struct mrce_verbs_device_ops) == 72);
	/* What a probe finds past struct ibv_device of mrce0. */
	CHECK((void *)&mrce_dev == (void *)&mrce_dev.vdev.device);
	CHECK(mrce_dev.vdev.ops && strcmp(mrce_dev.vdev.ops->name, "metaroce") == 0);
	CHECK(mrce_dev.vdev.ops->match_min_abi_version == MRCE_ABI_VERSION);
	CHECK(mrce_dev.vdev.refcount == 1);
	CHECK(mrce_dev.vdev.entry.next == &mrce_dev.vdev.entry);
	CHECK(mrce_dev.vdev.entry.prev == &mrce_dev.vdev.entry);
	CHECK(mrce_dev.vdev.sysfs == NULL);
	CHECK(mrce_dev.vdev.ops->alloc_context == NULL);
}

/* Every device slot looks like a libibverbs device, and only slots are ours. */
static void test_device_slots(void)
{
	struct ibv_device other;
	int i;

	for (i = 0; i < MRCE_MAX_DEVS; i++) {
		struct mrce_device *md = &mrce_devs[i];

		CHECK(to_mdev(&md->vdev.device) == md);
		CHECK(is_mrce_dev(&md->vdev.device));
		CHECK(md->vdev.ops == mrce_dev.vdev.ops);
		CHECK(md->vdev.refcount == 1);
		CHECK(md->vdev.entry.next == &md->vdev.entry);
		CHECK(md->vdev.entry.prev == &md->vdev.entry);
		/* A pointer into a slot that is not its start is not a device. */
		CHECK(!is_mrce_dev((struct ibv_device *)((char *)md + 8)));
	}
	CHECK(!is_mrce_dev(&other));
	CHECK(!is_mrce_dev(NULL));
	CHECK(!is_mrce_dev((struct ibv_device *)&mrce_devs[MRCE_MAX_DEVS]));
}

/* The device files of a second listed device answer for it, by its own name. */
static void test_second_device_files(void)
{
	struct mrce_device *md = &mrce_devs[1];
	unsigned int idx = 99;

	snprintf(md->vdev.device.name, sizeof(md->vdev.device.name), "mrce1");
	snprintf(md->vdev.device.dev_name, sizeof(md->vdev.device.dev_name),
		 "uverbs_mrce1");
	CHECK(!mrce_devfile_match("/dev/infiniband/uverbs_mrce1")); /* not listed yet */
	md->listed = true;
	CHECK(mrce_devfile_match("/dev/infiniband/uverbs_mrce1"));
	CHECK(!mrce_devfile_match("/dev/infiniband/uverbs_mrce10"));
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce1/ports/1/gid_attrs/ndevs/2", &idx) == 2 && idx == 2);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce10/ports/1/gid_attrs/ndevs/2", &idx) == 0);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce/ports/1/gid_attrs/ndevs/2", &idx) == 0);
	md->listed = false;
	memset(md->vdev.device.name, 0, sizeof(md->vdev.device.name));
	memset(md->vdev.device.dev_name, 0, sizeof(md->vdev.device.dev_name));
}

static struct ifaddrs *ifa_new(struct ifaddrs *next, const char *name,
			       int family, const char *ip)
{
	struct ifaddrs *ifa = calloc(1, sizeof(*ifa));

	ifa->ifa_next = next;
	ifa->ifa_name = (char *)name;
	if (family == AF_INET) {
		struct sockaddr_in *sin = calloc(1, sizeof(*sin));

		sin->sin_family = AF_INET;
		inet_pton(AF_INET, ip, &sin->sin_addr);
		ifa->ifa_addr = (struct sockaddr *)sin;
	} else if (family == AF_INET6) {
		struct sockaddr_in6 *sin6 = calloc(1, sizeof(*sin6));

		sin6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, ip, &sin6->sin6_addr);
		ifa->ifa_addr = (struct sockaddr *)sin6;
	} else if (family == AF_PACKET) {
		struct sockaddr *sa = calloc(1, sizeof(struct sockaddr_storage));

		sa->sa_family = AF_PACKET;
		ifa->ifa_addr = sa;
	}
	return ifa;
}

static void ifa_free(struct ifaddrs *ifa)
{
	while (ifa) {
		struct ifaddrs *next = ifa->ifa_next;

		free(ifa->ifa_addr);
		free(ifa);
		ifa = next;
	}
}

/* Index 0 the daemon's address, then IPv4-mapped, then IPv6; no duplicates. */
static void test_gid_table_build(void)
{
	struct ifaddrs *l = NULL;
	union ibv_gid tbl[MRCE_GID_TBL_LEN], want;
	unsigned int n;

	/* getifaddrs' order is reversed here: the list is built from the end. */
	l = ifa_new(l, "eth1", AF_INET, "10.0.0.1");
	l = ifa_new(l, "eth0", AF_INET6, "2001:db8::5");
	l = ifa_new(l, "eth0", AF_INET, "198.18.0.9");
	l = ifa_new(l, "eth0", AF_INET6, "fe80::1");
	l = ifa_new(l, "eth0", AF_INET, "198.18.0.1");   /* = gid 0 */
	l = ifa_new(l, "eth0", AF_PACKET, NULL);
	l = ifa_new(l, "eth0", -1, NULL);                /* no address */
	mapped(&want, "198.18.0.1");

	n = mrce_gid_table_build(want.raw, l, "eth0", tbl, MRCE_GID_TBL_LEN);
	CHECK(n == 4);
	CHECK(memcmp(tbl[0].raw, want.raw, 16) == 0);
	mapped(&want, "198.18.0.9");
	CHECK(memcmp(tbl[1].raw, want.raw, 16) == 0);
	inet_pton(AF_INET6, "fe80::1", want.raw);
	CHECK(memcmp(tbl[2].raw, want.raw, 16) == 0);
	inet_pton(AF_INET6, "2001:db8::5", want.raw);
	CHECK(memcmp(tbl[3].raw, want.raw, 16) == 0);

	/* Fewer slots: the first ones, index 0 always. */
	mapped(&want, "198.18.0.1");
	CHECK(mrce_gid_table_build(want.raw, l, "eth0", tbl, 2) == 2);
	mapped(&want, "198.18.0.9");
	CHECK(memcmp(tbl[1].raw, want.raw, 16) == 0);
	mapped(&want, "198.18.0.1");
	CHECK(mrce_gid_table_build(want.raw, l, "eth0", tbl, 0) == 0);

	/* gid 0 that the interface does not have (--addr elsewhere): kept first. */
	mapped(&want, "198.18.7.7");
	n = mrce_gid_table_build(want.raw, l, "eth0", tbl, MRCE_GID_TBL_LEN);
	CHECK(n == 5);
	CHECK(memcmp(tbl[0].raw, want.raw, 16) == 0);
	/* An interface without addresses, or no list at all: gid 0 only. */
	CHECK(mrce_gid_table_build(want.raw, l, "eth9", tbl, 4) == 1);
	CHECK(mrce_gid_table_build(want.raw, NULL, "eth0", tbl, 4) == 1);
	ifa_free(l);
}

/* The query verbs on a context that serves `lo`, read live with getifaddrs. */
static void test_gid_queries(void)
{
	struct mrce_context *ctx = calloc(1, sizeof(*ctx));
	struct ibv_context *ib = &ctx->vctx.context;
	struct ibv_gid_entry ents[MRCE_GID_TBL_LEN], e;
	struct ibv_port_attr pa;
	union ibv_gid g, want, expect[MRCE_GID_TBL_LEN];
	struct ifaddrs *ifa = NULL;
	unsigned int n, i;
	int type = -1;
	ssize_t got;

	ib->device = &mrce_dev.vdev.device;
	strcpy(ctx->hello.ifname, "lo");
	mapped(&want, "198.18.0.2");
	memcpy(ctx->hello.gid, want.raw, 16);
	if (getifaddrs(&ifa))
		ifa = NULL;
	n = mrce_gid_table_build(want.raw, ifa, "lo", expect, MRCE_GID_TBL_LEN);
	if (ifa)
		freeifaddrs(ifa);
	CHECK(n >= 1);

	CHECK(mrce_query_port(ib, MRCE_PORT, &pa, sizeof(pa)) == 0);
	CHECK(pa.gid_tbl_len == MRCE_GID_TBL_LEN);

	CHECK(mrce_query_gid(ib, MRCE_PORT, 0, &g) == 0);
	CHECK(memcmp(g.raw, want.raw, 16) == 0);
	for (i = 1; i < n; i++) {
		CHECK(mrce_query_gid(ib, MRCE_PORT, (int)i, &g) == 0);
		CHECK(memcmp(g.raw, expect[i].raw, 16) == 0);
	}
	/* An empty slot reads as the zero GID; past the table is EINVAL. */
	memset(&g, 0xaa, sizeof(g));
	CHECK(mrce_query_gid(ib, MRCE_PORT, MRCE_GID_TBL_LEN - 1, &g) == 0);
	memset(&want, 0, sizeof(want));
	CHECK(n == MRCE_GID_TBL_LEN || memcmp(g.raw, want.raw, 16) == 0);
	CHECK(mrce_query_gid(ib, MRCE_PORT, MRCE_GID_TBL_LEN, &g) == EINVAL);
	CHECK(mrce_query_gid(ib, MRCE_PORT, -1, &g) == EINVAL);
	CHECK(mrce_query_gid(ib, 2, 0, &g) == EINVAL);

	/* Every entry RoCE v2 on port 1 with the netdev's ifindex. */
	for (i = 0; i < n; i++) {
		CHECK(mrce_query_gid_ex(ib, MRCE_PORT, i, &e, sizeof(e)) == 0);
		CHECK(memcmp(e.gid.raw, expect[i].raw, 16) == 0);
		CHECK(e.gid_index == i && e.port_num == MRCE_PORT);
		CHECK(e.gid_type == IBV_GID_TYPE_ROCE_V2);
		CHECK(e.ndev_ifindex == 1); /* lo */
		CHECK(mrce_query_gid_type(ib, MRCE_PORT, i, &type) == 0);
		CHECK(type == MRCE_GID_TYPE_SYSFS_ROCE_V2);
	}
	if (n < MRCE_GID_TBL_LEN) {
		CHECK(mrce_query_gid_ex(ib, MRCE_PORT, n, &e, sizeof(e)) ==
		      ENODATA);
		CHECK(mrce_query_gid_type(ib, MRCE_PORT, n, &type) == 0);
		CHECK(type == 0);
	}
	CHECK(mrce_query_gid_ex(ib, MRCE_PORT, MRCE_GID_TBL_LEN, &e,
				sizeof(e)) == EINVAL);
	CHECK(mrce_query_gid_ex(ib, MRCE_PORT, 0, &e, sizeof(e) - 1) == EINVAL);
	CHECK(mrce_query_gid_type(ib, MRCE_PORT, MRCE_GID_TBL_LEN, &type) ==
	      EINVAL);

	/* The whole table, packed; too few slots is -EINVAL. */
	got = mrce_query_gid_table(ib, ents, MRCE_GID_TBL_LEN, sizeof(ents[0]));
	CHECK(got == (ssize_t)n);
	for (i = 0; i < n && got > 0; i++) {
		CHECK(memcmp(ents[i].gid.raw, expect[i].raw, 16) == 0);
		CHECK(ents[i].gid_index == i);
		CHECK(ents[i].gid_type == IBV_GID_TYPE_ROCE_V2);
	}
	CHECK(mrce_query_gid_table(ib, ents, n - 1, sizeof(ents[0])) ==
	      -EINVAL);
	free(ctx);
	printf("gid table of lo: %u entries\n", n);
}

/* stat()/access() on mrce0's device file answer for the daemon socket. */
static void test_devfile(void)
{
	char dir[] = "/tmp/mrce-test-devfile-XXXXXX";
	char sock[64];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st, sst;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sock, sizeof(sock), "%s/nicd.sock", dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
	CHECK(bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	CHECK(chmod(sock, 0660) == 0);
	setenv("METAROCE_SOCK", sock, 1);
	snprintf(mrce_dev.vdev.device.dev_name,
		 sizeof(mrce_dev.vdev.device.dev_name), "uverbs_mrce0");

	/* Not listed yet: nothing is answered for the path. */
	mrce_dev.listed = false;
	CHECK(!mrce_devfile_match("/dev/infiniband/uverbs_mrce0"));
	errno = 0;
	CHECK(stat("/dev/infiniband/uverbs_mrce0", &st) == -1 &&
	      errno == ENOENT);

	mrce_dev.listed = true;
	CHECK(mrce_devfile_match("/dev/infiniband/uverbs_mrce0"));
	CHECK(!mrce_devfile_match("/dev/infiniband/uverbs_mrce00"));
	CHECK(!mrce_devfile_match("/dev/infiniband/uverbs_mrce"));
	CHECK(!mrce_devfile_match("/dev/uverbs_mrce0"));
	CHECK(!mrce_devfile_match("/dev/infiniband/uverbs0"));
	CHECK(!mrce_devfile_match(NULL));

	CHECK(stat(sock, &sst) == 0 && S_ISSOCK(sst.st_mode));
	CHECK(stat("/dev/infiniband/uverbs_mrce0", &st) == 0);
	CHECK(S_ISCHR(st.st_mode));
	CHECK((st.st_mode & 07777) == 0660);
	CHECK(st.st_rdev == 0 && st.st_size == 0);
	CHECK(st.st_uid == sst.st_uid && st.st_ino == sst.st_ino);
	CHECK(access("/dev/infiniband/uverbs_mrce0", R_OK | W_OK) == 0);

	/* Other paths pass through untouched. */
	CHECK(stat("/", &st) == 0 && S_ISDIR(st.st_mode));
	CHECK(access("/", R_OK) == 0);
	errno = 0;
	CHECK(access("/dev/infiniband/uverbs_nothing", R_OK) == -1 &&
	      errno == ENOENT);

	/* The socket gone: the device file is gone too. */
	close(fd);
	unlink(sock);
	errno = 0;
	CHECK(stat("/dev/infiniband/uverbs_mrce0", &st) == -1 &&
	      errno == ENOENT);
	CHECK(access("/dev/infiniband/uverbs_mrce0", F_OK) == -1);
	rmdir(dir);
	unsetenv("METAROCE_SOCK");
	mrce_dev.listed = false;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	return (int)n;
}

/* open() of the GID attribute files: the kernel's text for a RoCE v2 entry. */
static void test_sysfs_gid_attrs(void)
{
	const char *types = "/sys/class/infiniband/mrce0/ports/1/gid_attrs/types/";
	char path[128], buf[64];
	unsigned int idx = 99;
	int fd;

	snprintf(mrce_dev.vdev.device.name, sizeof(mrce_dev.vdev.device.name),
		 "mrce0");
	strcpy(mrce_dev.hello.ifname, "lo");
	mapped((union ibv_gid *)mrce_dev.hello.gid, "198.18.0.2");
	mrce_dev.listed = true;

	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce0/ports/1/gid_attrs/types/3", &idx) == 1 && idx == 3);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce0/ports/1/gid_attrs/ndevs/15", &idx) == 2 && idx == 15);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce0/ports/1/gid_attrs/ndevs/16", &idx) == 0);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce0/ports/1/gid_attrs/types/", &idx) == 0);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce0/ports/1/gid_attrs/types/1x", &idx) == 0);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce0/ports/2/gid_attrs/types/0", &idx) == 0);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce00/ports/1/gid_attrs/types/0", &idx) == 0);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/0", &idx) == 0);
	CHECK(mrce_sysfs_gid_attr("/sys/class/infiniband/mrce0/ports/1/gids/0", &idx) == 0);

	snprintf(path, sizeof(path), "%s0", types);
	CHECK(read_file(path, buf, sizeof(buf)) == 8 && strcmp(buf, "RoCE v2\n") == 0);
	CHECK(read_file("/sys/class/infiniband/mrce0/ports/1/gid_attrs/ndevs/0", buf, sizeof(buf)) == 3 &&
	      strcmp(buf, "lo\n") == 0);
	/* The last slot is empty unless lo has 15 addresses. */
	snprintf(path, sizeof(path), "%s15", types);
	CHECK(read_file(path, buf, sizeof(buf)) == -EINVAL);
	/* Read-only, as sysfs. */
	snprintf(path, sizeof(path), "%s0", types);
	errno = 0;
	fd = open(path, O_RDWR);
	CHECK(fd == -1 && errno == EACCES);
	/* Not listed: the path is the file system's again. */
	mrce_dev.listed = false;
	CHECK(read_file(path, buf, sizeof(buf)) == -ENOENT);
	/* Other files, with and without O_CREAT's mode. */
	CHECK(read_file("/proc/self/stat", buf, sizeof(buf)) > 0);
	snprintf(path, sizeof(path), "/tmp/mrce-test-open-%d", (int)getpid());
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0640);
	CHECK(fd >= 0);
	if (fd >= 0) {
		struct stat st;

		CHECK(fstat(fd, &st) == 0 && (st.st_mode & 0777) == (0640 & ~umask(022)));
		close(fd);
		unlink(path);
	}
}

/* One RTM_* message about interface IFINDEX at BUF; returns its length. */
static size_t nl_msg(void *buf, uint16_t type, int ifindex)
{
	struct nlmsghdr *nh = buf;
	struct ifaddrmsg *ifa = NLMSG_DATA(nh);

	memset(buf, 0, NLMSG_SPACE(sizeof(*ifa)));
	nh->nlmsg_len = NLMSG_LENGTH(sizeof(*ifa));
	nh->nlmsg_type = type;
	ifa->ifa_family = AF_INET;
	ifa->ifa_index = (unsigned int)ifindex;
	return NLMSG_SPACE(sizeof(*ifa));
}

static void test_nl_parse(void)
{
	char buf[256] __attribute__((aligned(4)));
	size_t n;

	n = nl_msg(buf, RTM_NEWADDR, 7);
	CHECK(mrce_nl_addr_change(buf, n, 7));
	CHECK(!mrce_nl_addr_change(buf, n, 8));
	n = nl_msg(buf, RTM_DELADDR, 7);
	CHECK(mrce_nl_addr_change(buf, n, 7));
	n = nl_msg(buf, RTM_NEWLINK, 7);
	CHECK(!mrce_nl_addr_change(buf, n, 7));
	/* Two messages: the second one is ours. */
	n = nl_msg(buf, RTM_NEWADDR, 3);
	n += nl_msg(buf + n, RTM_DELADDR, 7);
	CHECK(mrce_nl_addr_change(buf, n, 7));
	/* Truncated: nothing is read past the buffer. */
	n = nl_msg(buf, RTM_NEWADDR, 7);
	CHECK(!mrce_nl_addr_change(buf, NLMSG_LENGTH(sizeof(struct ifaddrmsg)) - 1, 7));
	((struct nlmsghdr *)buf)->nlmsg_len = NLMSG_LENGTH(1);
	CHECK(!mrce_nl_addr_change(buf, n, 7));
}

/*
 * ibv_get_async_event's GID_CHANGE: the netlink socket replaced by a datagram
 * socketpair carrying made-up messages about `lo` (ifindex 1) and others.
 */
static void test_gid_change_event(void)
{
	struct mrce_context *ctx = calloc(1, sizeof(*ctx));
	struct ibv_context *ib = &ctx->vctx.context;
	struct ibv_async_event ev;
	int conn[2], nl[2];
	char buf[64] __attribute__((aligned(4)));
	size_t n;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, conn) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, nl) == 0);
	ib->device = &mrce_dev.vdev.device;
	strcpy(ctx->hello.ifname, "lo");
	ctx->conn.fd = conn[0];
	pthread_mutex_init(&ctx->conn.lock, NULL);
	pthread_mutex_init(&ctx->obj_lock, NULL);
	ctx->async_efd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK);
	ib->async_fd = ctx->async_efd; /* non-blocking: EAGAIN when nothing */
	ctx->nl_fd = nl[0];
	ctx->nl_on = true;

	errno = 0;
	CHECK(mrce_get_async_event(ib, &ev) == -1 && errno == EAGAIN);
	n = nl_msg(buf, RTM_NEWADDR, (int)if_nametoindex("lo"));
	CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
	CHECK(mrce_get_async_event(ib, &ev) == 0);
	CHECK(ev.event_type == IBV_EVENT_GID_CHANGE && ev.element.port_num == MRCE_PORT);
	errno = 0;
	CHECK(mrce_get_async_event(ib, &ev) == -1 && errno == EAGAIN);
	/* Two changes read together are one event; another interface's none. */
	n = nl_msg(buf, RTM_DELADDR, (int)if_nametoindex("lo"));
	CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
	CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
	CHECK(mrce_get_async_event(ib, &ev) == 0 && ev.event_type == IBV_EVENT_GID_CHANGE);
	errno = 0;
	CHECK(mrce_get_async_event(ib, &ev) == -1 && errno == EAGAIN);
	n = nl_msg(buf, RTM_NEWADDR, 4242);
	CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
	errno = 0;
	CHECK(mrce_get_async_event(ib, &ev) == -1 && errno == EAGAIN);

	/* The socket filter keeps other interfaces' messages from waking anyone. */
	{
		struct pollfd p = { .fd = nl[0], .events = POLLIN };
		int lo = (int)if_nametoindex("lo");

		CHECK(mrce_nl_filter(nl[0], lo) == 0);
		n = nl_msg(buf, RTM_NEWADDR, 4242);
		CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
		n = nl_msg(buf, RTM_NEWLINK, lo);
		CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
		CHECK(poll(&p, 1, 0) == 0);
		n = nl_msg(buf, RTM_DELADDR, lo);
		CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
		CHECK(poll(&p, 1, 0) == 1);
		CHECK(mrce_get_async_event(ib, &ev) == 0 && ev.event_type == IBV_EVENT_GID_CHANGE);
		n = nl_msg(buf, RTM_NEWADDR, lo);
		CHECK(send(nl[1], buf, n, 0) == (ssize_t)n);
		CHECK(mrce_get_async_event(ib, &ev) == 0 && ev.event_type == IBV_EVENT_GID_CHANGE);
		errno = 0;
		CHECK(mrce_get_async_event(ib, &ev) == -1 && errno == EAGAIN);
	}
	close(conn[0]);
	close(conn[1]);
	close(nl[0]);
	close(nl[1]);
	close(ctx->async_efd);
	free(ctx);
}

/* The real set-up: async_fd an epoll fd over the eventfd and a netlink socket. */
static void test_async_fds_init(void)
{
	struct mrce_context *ctx = calloc(1, sizeof(*ctx));
	struct pollfd p;
	uint64_t one = 1;
	int efd = eventfd(0, EFD_SEMAPHORE);

	mrce_async_fds_init(ctx, efd);
	CHECK(ctx->async_efd == efd);
	CHECK(fcntl(efd, F_GETFL) & O_NONBLOCK);
	if (!ctx->nl_on) {
		printf("test_device: no netlink socket here: GID_CHANGE untested live\n");
		CHECK(ctx->vctx.context.async_fd == efd);
		close(efd);
		free(ctx);
		return;
	}
	CHECK(ctx->vctx.context.async_fd != efd);
	p = (struct pollfd){ .fd = ctx->vctx.context.async_fd, .events = POLLIN };
	CHECK(poll(&p, 1, 0) == 0);
	/* The daemon's eventfd written: the app's async_fd is readable. */
	CHECK(write(efd, &one, sizeof(one)) == sizeof(one));
	CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLIN));
	close(ctx->nl_fd);
	close(ctx->vctx.context.async_fd);
	close(efd);
	free(ctx);
}

/* ibv_create_cq(_ex) with a comp_vector the device lacks: EINVAL, no request sent. */
static void test_create_cq_comp_vector(void)
{
	struct mrce_context *ctx = calloc(1, sizeof(*ctx));
	struct ibv_context *ib = &ctx->vctx.context;
	struct ibv_cq_init_attr_ex attr = { .cqe = 4, .comp_vector = 1 };

	ib->device = &mrce_dev.vdev.device;
	ib->num_comp_vectors = 1;
	ctx->conn.fd = -1; /* a request would fail with EBADF, not EINVAL */
	pthread_mutex_init(&ctx->conn.lock, NULL);
	errno = 0;
	CHECK(mrce_create_cq(ib, 4, NULL, NULL, 1) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(mrce_create_cq(ib, 4, NULL, NULL, -1) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(mrce_create_cq_ex(ib, &attr) == NULL && errno == EINVAL);
	attr.comp_vector = UINT32_MAX;
	errno = 0;
	CHECK(mrce_create_cq_ex(ib, &attr) == NULL && errno == EINVAL);
	free(ctx);
}

/*
 * A signal interrupting ibv_get_cq_event/ibv_get_async_event ends the wait
 * with EINTR unless every caught signal's handler has SA_RESTART (libibverbs'
 * read() of the channel: qperf's timed tests end on a SIGALRM without it).
 */
static void on_alarm(int sig)
{
	(void)sig;
}

static void test_wait_restarts(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, NULL, &old) == 0);
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	CHECK(mrce_wait_restarts());
	sa.sa_flags = 0;
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	CHECK(!mrce_wait_restarts());
	CHECK(sigaction(SIGALRM, &old, NULL) == 0);
	CHECK(mrce_wait_restarts());
}

/* On-demand paging: the caps ibv_query_device_ex reports, ibv_advise_mr. */
static void test_odp(void)
{
	struct ibv_odp_caps c;
	struct ibv_pd pd = { 0 };
	struct ibv_sge sge = { .addr = 4096, .length = 4096, .lkey = 1 };

	mrce_odp_caps(&c, IBV_ATOMIC_HCA);
	CHECK(c.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
	CHECK(c.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_WRITE);
	CHECK(c.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_ATOMIC);
	CHECK(c.per_transport_caps.uc_odp_caps == 0);
	CHECK(c.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_RECV);
	mrce_odp_caps(&c, IBV_ATOMIC_NONE);
	CHECK(!(c.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_ATOMIC));
	CHECK(mrce_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) == 0);
	CHECK(mrce_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			     IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0);
	CHECK(mrce_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0,
			     &sge, 1) == 0);
	CHECK(mrce_advise_mr(&pd, (enum ibv_advise_mr_advice)9, 0, &sge, 1) ==
	      EINVAL);
	CHECK(mrce_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &sge, 1) ==
	      EINVAL);
	CHECK(mrce_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0) ==
	      EINVAL);
	CHECK(mrce_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 1) ==
	      EINVAL);
	CHECK(mrce_advise_mr(NULL, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) ==
	      EINVAL);
}

int main(void)
{
	test_verbs_device_layout();
	test_device_slots();
	test_gid_table_build();
	test_gid_queries();
	test_devfile();
	test_sysfs_gid_attrs();
	test_second_device_files();
	test_nl_parse();
	test_gid_change_event();
	test_async_fds_init();
	test_create_cq_comp_vector();
	test_wait_restarts();
	test_odp();
	if (failures) {
		fprintf(stderr, "test_device: %d checks failed\n", failures);
		return 1;
	}
	printf("test_device: OK\n");
	return 0;
}
