// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_device.c - device list, open/close and the query verbs. Everything a
 * query returns comes from the daemon's HELLO response.
 *
 * Long because all that reads HELLO's answer (list, open, queries) is here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mrce.h"

static const struct mrce_verbs_device_ops mrce_dev_ops = {
	.name = "metaroce",
	.match_min_abi_version = MRCE_ABI_VERSION,
	.match_max_abi_version = MRCE_ABI_VERSION,
};

/* One reference (never freed), an empty list node pointing at itself. */
#define MRCE_DEV_INIT(i)                                                      \
	[i] = { .vdev = { .ops = &mrce_dev_ops,                               \
			  .refcount = 1,                                      \
			  .entry = { &mrce_devs[i].vdev.entry,                \
				     &mrce_devs[i].vdev.entry } } }
struct mrce_device mrce_devs[MRCE_MAX_DEVS] = {
	MRCE_DEV_INIT(0),  MRCE_DEV_INIT(1),  MRCE_DEV_INIT(2),
	MRCE_DEV_INIT(3),  MRCE_DEV_INIT(4),  MRCE_DEV_INIT(5),
	MRCE_DEV_INIT(6),  MRCE_DEV_INIT(7),  MRCE_DEV_INIT(8),
	MRCE_DEV_INIT(9),  MRCE_DEV_INIT(10), MRCE_DEV_INIT(11),
	MRCE_DEV_INIT(12), MRCE_DEV_INIT(13), MRCE_DEV_INIT(14),
	MRCE_DEV_INIT(15),
};
_Static_assert(MRCE_MAX_DEVS == 16, "one MRCE_DEV_INIT per slot");
static pthread_mutex_t mrce_dev_lock = PTHREAD_MUTEX_INITIALIZER;

/* A device list as the app sees it, with the real list kept in front. */
struct mrce_dev_list {
	struct ibv_device **real;
	struct ibv_device *devs[];
};

/* Connects to PATH, says HELLO and hangs up: is a daemon serving there? */
static int mrce_probe(const char *path, struct mrce_hello_resp *hello)
{
	struct mrce_conn conn;
	int fds[2];
	int ret;

	ret = mrce_conn_open_at(&conn, path, MRCE_PROBE_TIMEOUT_MS);
	if (ret)
		return ret;
	ret = mrce_hello(&conn, hello, fds, 0);
	if (!ret) {
		close(fds[0]);
		close(fds[1]);
	}
	mrce_conn_close(&conn);
	return ret;
}

/*
 * The slot of device NAME: the one that had this name before, else a free
 * one; NULL when all MRCE_MAX_DEVS are taken. Under mrce_dev_lock.
 */
static struct mrce_device *mrce_slot(const char *name)
{
	int i;

	for (i = 0; i < MRCE_MAX_DEVS; i++) {
		if (mrce_devs[i].used &&
		    strcmp(mrce_devs[i].vdev.device.name, name) == 0)
			return &mrce_devs[i];
	}
	for (i = 0; i < MRCE_MAX_DEVS; i++) {
		if (!mrce_devs[i].used)
			return &mrce_devs[i];
	}
	return NULL;
}

static void mrce_fill_device(struct mrce_device *md, const char *sock,
			     const struct mrce_hello_resp *hello)
{
	struct ibv_device *dev = &md->vdev.device;
	const char *name = hello->dev_name[0] ? hello->dev_name : "mrce0";

	md->hello = *hello;
	strncpy(md->sock, sock, sizeof(md->sock) - 1);
	md->sock[sizeof(md->sock) - 1] = '\0';
	md->used = true;
	dev->node_type = IBV_NODE_CA;
	dev->transport_type = IBV_TRANSPORT_IB;
	snprintf(dev->name, sizeof(dev->name), "%.15s", name);
	snprintf(dev->dev_name, sizeof(dev->dev_name), "uverbs_%.15s", name);
	snprintf(dev->dev_path, sizeof(dev->dev_path),
		 "/sys/class/infiniband_verbs/uverbs_%.15s", name);
	snprintf(dev->ibdev_path, sizeof(dev->ibdev_path),
		 "/sys/class/infiniband/%.15s", name);
	__atomic_store_n(&md->listed, true, __ATOMIC_RELEASE);
}

struct ibv_device **mrce_wrap_device_list(struct ibv_device **real,
					  int *num_devices)
{
	char paths[MRCE_MAX_DEVS][MRCE_SOCK_PATH_MAX];
	struct mrce_device *shown[MRCE_MAX_DEVS];
	struct mrce_hello_resp hello;
	struct mrce_dev_list *list;
	int n = 0, i, j, ret, np, nshown = 0;

	while (real && real[n])
		n++;
	np = mrce_sock_paths(paths, MRCE_MAX_DEVS);
	for (i = 0; i < np; i++) {
		struct mrce_device *md;
		const char *name;
		bool dup = false;

		ret = mrce_probe(paths[i], &hello);
		if (ret == EAGAIN || ret == ETIMEDOUT)
			fprintf(stderr, "libmetaroce: the daemon at %s did not answer within %d ms; its device is not listed\n",
				paths[i], MRCE_PROBE_TIMEOUT_MS);
		if (ret)
			continue;
		hello.dev_name[sizeof(hello.dev_name) - 1] = '\0';
		name = hello.dev_name[0] ? hello.dev_name : "mrce0";
		for (j = 0; j < nshown && !dup; j++)
			dup = strcmp(shown[j]->vdev.device.name, name) == 0;
		if (dup) {
			fprintf(stderr, "libmetaroce: %s also calls itself %s; listed once\n",
				paths[i], name);
			continue;
		}
		pthread_mutex_lock(&mrce_dev_lock);
		md = mrce_slot(name);
		if (md)
			mrce_fill_device(md, paths[i], &hello);
		pthread_mutex_unlock(&mrce_dev_lock);
		if (!md) {
			fprintf(stderr, "libmetaroce: more than %d devices; %s is not listed\n",
				MRCE_MAX_DEVS, name);
			continue;
		}
		shown[nshown++] = md;
	}
	list = calloc(1, sizeof(*list) +
			 (size_t)(n + nshown + 1) * sizeof(list->devs[0]));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list->real = real;
	for (i = 0; i < n; i++)
		list->devs[i] = real[i];
	for (i = 0; i < nshown; i++)
		list->devs[n++] = &shown[i]->vdev.device;
	if (num_devices)
		*num_devices = n;
	return list->devs;
}

struct ibv_device **mrce_unwrap_device_list(struct ibv_device **devs)
{
	struct mrce_dev_list *list = container_of(devs, struct mrce_dev_list,
						  devs[0]);
	struct ibv_device **real = list->real;

	free(list);
	return real;
}

/*
 * On-demand paging as the daemon offers it: it never pins memory (it copies
 * with process_vm_readv/writev), so every MR may be IBV_ACCESS_ON_DEMAND,
 * explicit or implicit (addr NULL, length SIZE_MAX), and every operation of
 * RC and UD reaches ODP memory; atomics only where the device has them. UC
 * and XRC are not served: no caps.
 */
void mrce_odp_caps(struct ibv_odp_caps *caps, enum ibv_atomic_cap atomic)
{
	uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		      IBV_ODP_SUPPORT_SRQ_RECV;

	if (atomic != IBV_ATOMIC_NONE)
		rc |= IBV_ODP_SUPPORT_ATOMIC;
	memset(caps, 0, sizeof(*caps));
	caps->general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	caps->per_transport_caps.rc_odp_caps = rc;
	caps->per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND |
					       IBV_ODP_SUPPORT_RECV |
					       IBV_ODP_SUPPORT_SRQ_RECV;
}

/*
 * ibv_query_device_ex (through verbs_context): orig_attr as
 * ibv_query_device, the extended capabilities are all "none" except the
 * port count and the ODP caps; copies at most attr_size bytes (older callers pass less).
 */
int mrce_query_device_ex(struct ibv_context *ctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;
	int ret;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	ret = mrce_query_device(ctx, &full.orig_attr);
	if (ret)
		return ret;
	full.device_cap_flags_ex = (uint64_t)full.orig_attr.device_cap_flags;
	full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
	mrce_odp_caps(&full.odp_caps, full.orig_attr.atomic_cap);
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	return 0;
}

static int mrce_vquery_port(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *attr, size_t attr_len)
{
	return mrce_query_port(ctx, port, attr, attr_len);
}

static struct ibv_mw *mrce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	(void)pd;
	(void)type;
	errno = EOPNOTSUPP;
	return NULL;
}

static int mrce_dealloc_mw(struct ibv_mw *mw)
{
	(void)mw;
	return EOPNOTSUPP;
}

static int mrce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
			struct ibv_mw_bind *bind)
{
	(void)qp;
	(void)mw;
	(void)bind;
	return EOPNOTSUPP;
}

static const struct ibv_context_ops mrce_ctx_ops = {
	.alloc_mw = mrce_alloc_mw,
	.bind_mw = mrce_bind_mw,
	.dealloc_mw = mrce_dealloc_mw,
	.poll_cq = mrce_poll_cq,
	.req_notify_cq = mrce_req_notify_cq,
	.post_srq_recv = mrce_post_srq_recv,
	.post_send = mrce_post_send,
	.post_recv = mrce_post_recv,
};

/*
 * The context's cmd_fd: with import_fd < 0 a new context, whose cmd_fd is the
 * memfd the daemon makes for it (CONTEXT_FD); else the context that
 * import_fd, a copy of another process's cmd_fd, names (IMPORT_CONTEXT), and
 * import_fd becomes this context's cmd_fd. Either way the context has its own
 * connection: two processes never share a control stream.
 */
static int mrce_context_cmd_fd(struct mrce_context *ctx, int import_fd,
			       int *cmd_fd)
{
	struct mrce_import_context_req req = { .fd = import_fd };

	if (import_fd < 0)
		return mrce_conn_call(&ctx->conn, MRCE_OP_CONTEXT_FD, NULL, 0,
				      NULL, 0, cmd_fd, 1);
	*cmd_fd = import_fd;
	return mrce_conn_call(&ctx->conn, MRCE_OP_IMPORT_CONTEXT, &req,
			      sizeof(req), NULL, 0, NULL, 0);
}

static struct ibv_context *mrce_open_context(struct ibv_device *dev,
					     int import_fd)
{
	struct mrce_device *md = to_mdev(dev);
	char sock[MRCE_SOCK_PATH_MAX];
	struct mrce_context *ctx;
	int fds[3];
	int cmd_fd = -1;
	int ret;

	if (!md) {
		errno = ENODEV;
		return NULL;
	}
	pthread_mutex_lock(&mrce_dev_lock);
	memcpy(sock, md->sock, sizeof(sock));
	pthread_mutex_unlock(&mrce_dev_lock);
	if (!sock[0] && mrce_sock_path(sock, sizeof(sock)) != 0) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_open_at(&ctx->conn, sock, MRCE_CMD_TIMEOUT_MS);
	if (ret)
		goto err_free;
	ret = mrce_hello(&ctx->conn, &ctx->hello, fds, MRCE_HELLO_DOORBELL_PAGE);
	if (ret)
		goto err_conn;
	ctx->db_page = mmap(NULL, MRCE_DB_PAGE_SIZE, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fds[2], 0);
	close(fds[2]);
	if (ctx->db_page == MAP_FAILED) {
		ret = errno;
		goto err_fds;
	}
	ret = mrce_context_cmd_fd(ctx, import_fd, &cmd_fd);
	if (ret)
		goto err_page;
	/* mrce_conn_open made the verified daemon our ptracer (Yama scope 1). */

	pthread_mutex_init(&ctx->obj_lock, NULL);
	ctx->doorbell_fd = fds[0];
	ctx->debug = getenv("METAROCE_DEBUG") &&
		     strcmp(getenv("METAROCE_DEBUG"), "0") != 0;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = mrce_vquery_port;
	ctx->vctx.query_device_ex = mrce_query_device_ex;
	ctx->vctx.advise_mr = mrce_advise_mr;
	ctx->vctx.create_qp_ex = mrce_create_qp_ex;
	ctx->vctx.create_cq_ex = mrce_create_cq_ex;
	ctx->vctx.create_srq_ex = mrce_create_srq_ex;
	ctx->vctx.context.device = dev;
	ctx->vctx.context.ops = mrce_ctx_ops;
	ctx->vctx.context.cmd_fd = cmd_fd;
	mrce_async_fds_init(ctx, fds[1]);
	ctx->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	return &ctx->vctx.context;

err_page:
	munmap(ctx->db_page, MRCE_DB_PAGE_SIZE);
err_fds:
	close(fds[0]);
	close(fds[1]);
err_conn:
	mrce_conn_close(&ctx->conn);
err_free:
	free(ctx);
	errno = ret;
	return NULL;
}

struct ibv_context *mrce_open_device(struct ibv_device *dev)
{
	return mrce_open_context(dev, -1);
}

/*
 * The mrce device whose context memfd cmd_fd is, or NULL (errno ENODEV when
 * it names a device this process does not see; 0 when cmd_fd is no context
 * memfd at all, so it goes to the real libibverbs). The token only tells
 * which daemon to ask: that daemon alone decides whether the fd is one of
 * its contexts.
 */
struct ibv_device *mrce_context_fd_device(int cmd_fd)
{
	struct mrce_context_token tok;
	struct ibv_device **list, *found = NULL;
	int i, n = 0;

	errno = 0;
	if (pread(cmd_fd, &tok, sizeof(tok), 0) != (ssize_t)sizeof(tok) ||
	    tok.magic != MRCE_CONTEXT_MAGIC) {
		errno = 0;
		return NULL;
	}
	tok.dev_name[sizeof(tok.dev_name) - 1] = 0;
	/* Listing assigns the device slots this process has not seen yet. */
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !found; i++)
		if (is_mrce_dev(list[i]) &&
		    strcmp(list[i]->name, tok.dev_name) == 0)
			found = list[i];
	if (list)
		ibv_free_device_list(list);
	if (!found)
		errno = ENODEV;
	return found;
}

struct ibv_context *mrce_import_device(struct ibv_device *dev, int cmd_fd)
{
	return mrce_open_context(dev, cmd_fd);
}

int mrce_close_device(struct ibv_context *ibctx)
{
	struct mrce_context *ctx = to_mctx(ibctx);

	if (ctx->debug)
		fprintf(stderr, "metaroce: %s: doorbells=%llu\n",
			ibctx->device->name,
			(unsigned long long)__atomic_load_n(&ctx->doorbells,
							    __ATOMIC_RELAXED));
	/* Closing the connection makes the daemon destroy what is left. */
	mrce_conn_close(&ctx->conn);
	close(ibctx->cmd_fd); /* the context memfd, made or imported */
	close(ctx->doorbell_fd);
	munmap(ctx->db_page, MRCE_DB_PAGE_SIZE);
	if (ctx->nl_on) {
		close(ctx->nl_fd);
		close(ibctx->async_fd); /* the epoll fd */
	}
	close(ctx->async_efd);
	pthread_mutex_destroy(&ctx->obj_lock);
	pthread_mutex_destroy(&ibctx->mutex);
	free(ctx);
	return 0;
}

int mrce_query_device(struct ibv_context *ibctx, struct ibv_device_attr *attr)
{
	const struct mrce_hello_resp *h = &to_mctx(ibctx)->hello;

	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%u.0.0", h->abi_version);
	attr->node_guid = h->node_guid;
	attr->sys_image_guid = h->node_guid;
	attr->max_mr_size = h->max_mr_size;
	attr->page_size_cap = 0xfffff000ull;
	attr->vendor_id = h->vendor_id;
	attr->vendor_part_id = h->vendor_part_id;
	attr->hw_ver = h->hw_ver;
	attr->max_qp = (int)h->max_qp;
	attr->max_qp_wr = (int)h->max_qp_wr;
	attr->device_cap_flags = IBV_DEVICE_SYS_IMAGE_GUID |
				 IBV_DEVICE_RC_RNR_NAK_GEN;
	attr->max_sge = (int)h->max_sge;
	attr->max_sge_rd = (int)h->max_sge;
	attr->max_cq = (int)h->max_cq;
	attr->max_cqe = (int)h->max_cqe;
	attr->max_mr = (int)h->max_mr;
	attr->max_pd = (int)h->max_pd;
	attr->max_qp_rd_atom = (int)h->max_qp_rd_atom;
	attr->max_qp_init_rd_atom = (int)h->max_qp_init_rd_atom;
	attr->max_res_rd_atom = (int)(h->max_qp_rd_atom * h->max_qp);
	attr->atomic_cap = (enum ibv_atomic_cap)h->atomic_cap;
	attr->max_srq = (int)h->max_srq;
	attr->max_srq_wr = (int)h->max_srq_wr;
	attr->max_srq_sge = (int)h->max_srq_sge;
	attr->max_ah = (int)h->max_ah;
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	attr->phys_port_cnt = 1;
	return 0;
}

/* The IB width/speed pair closest to the netdev's speed. */
static void mrce_speed(uint32_t mbps, uint8_t *width, uint8_t *speed)
{
	static const struct {
		uint32_t mbps;
		uint8_t width, speed;
	} table[] = {
		{ 2500, 1, 1 },    { 10000, 1, 4 },   { 25000, 1, 32 },
		{ 40000, 2, 4 },   { 50000, 1, 64 },  { 100000, 2, 32 },
		{ 200000, 2, 64 }, { 400000, 2, 128 },
	};
	size_t i;

	*width = 2;  /* 4X */
	*speed = 32; /* EDR: 100 Gb/s when the netdev does not say */
	if (!mbps)
		return;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		*width = table[i].width;
		*speed = table[i].speed;
		if (mbps <= table[i].mbps)
			return;
	}
}

int mrce_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *out, size_t attr_len)
{
	const struct mrce_hello_resp *h = &to_mctx(ibctx)->hello;
	struct ibv_port_attr attr;

	if (port != MRCE_PORT)
		return EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.state = h->link_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr.max_mtu = (enum ibv_mtu)h->max_mtu;
	attr.active_mtu = (enum ibv_mtu)h->active_mtu;
	attr.gid_tbl_len = MRCE_GID_TBL_LEN;
	attr.port_cap_flags = 0;
	attr.max_msg_sz = 0x80000000u;
	attr.pkey_tbl_len = 1;
	attr.max_vl_num = 1;
	mrce_speed(h->speed_mbps, &attr.active_width, &attr.active_speed);
	attr.phys_state = h->link_up ? 5 /* LinkUp */ : 3 /* Disabled */;
	attr.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(out, &attr, attr_len < sizeof(attr) ? attr_len : sizeof(attr));
	return 0;
}

/*
 * The GID table of a RoCE NIC: the kernel fills it from the addresses of the
 * netdev, each IPv4 address as ::ffff:a.b.c.d and each IPv6 address as it
 * is. Ours: index 0 is the daemon's address from HELLO (the one its
 * transport uses, so `-g 0` / `-x 0` keep working), then every other address
 * of the served interface in the order getifaddrs lists them, IPv4-mapped
 * first. Read at each query, so the table follows addresses added and
 * removed at run time. Returns the number of entries filled (at most max).
 */
unsigned int mrce_gid_table_build(const uint8_t gid0[16],
				  const struct ifaddrs *ifa_list,
				  const char *ifname, union ibv_gid *tbl,
				  unsigned int max)
{
	const struct ifaddrs *ifa;
	unsigned int n = 0, i;
	int pass;

	if (!max)
		return 0;
	memcpy(tbl[n++].raw, gid0, 16);
	for (pass = 0; pass < 2; pass++) {
		for (ifa = ifa_list; ifa && n < max; ifa = ifa->ifa_next) {
			union ibv_gid g;
			bool dup = false;

			if (!ifa->ifa_addr || !ifa->ifa_name ||
			    strcmp(ifa->ifa_name, ifname) != 0)
				continue;
			memset(&g, 0, sizeof(g));
			if (pass == 0 && ifa->ifa_addr->sa_family == AF_INET) {
				const struct sockaddr_in *sin =
					(const struct sockaddr_in *)ifa->ifa_addr;

				g.raw[10] = 0xff;
				g.raw[11] = 0xff;
				memcpy(&g.raw[12], &sin->sin_addr, 4);
			} else if (pass == 1 &&
				   ifa->ifa_addr->sa_family == AF_INET6) {
				const struct sockaddr_in6 *sin6 =
					(const struct sockaddr_in6 *)ifa->ifa_addr;

				memcpy(g.raw, &sin6->sin6_addr, 16);
			} else {
				continue;
			}
			for (i = 0; i < n && !dup; i++)
				dup = memcmp(tbl[i].raw, g.raw, 16) == 0;
			if (!dup)
				tbl[n++] = g;
		}
	}
	return n;
}

/* The live table of this context's device; 1 entry when getifaddrs fails. */
static unsigned int mrce_gid_table(struct ibv_context *ibctx,
				   union ibv_gid tbl[MRCE_GID_TBL_LEN])
{
	const struct mrce_hello_resp *h = &to_mctx(ibctx)->hello;
	struct ifaddrs *ifa = NULL;
	unsigned int n;

	if (getifaddrs(&ifa) != 0)
		ifa = NULL;
	n = mrce_gid_table_build(h->gid, ifa, h->ifname, tbl,
				 MRCE_GID_TBL_LEN);
	if (ifa)
		freeifaddrs(ifa);
	return n;
}

/* Empty entries read as the zero GID, as libibverbs gives them. */
int mrce_query_gid(struct ibv_context *ibctx, uint8_t port, int index,
		   union ibv_gid *gid)
{
	union ibv_gid tbl[MRCE_GID_TBL_LEN];
	unsigned int n;

	if (port != MRCE_PORT || index < 0 || index >= MRCE_GID_TBL_LEN)
		return EINVAL;
	if (index == 0) {
		memcpy(gid->raw, to_mctx(ibctx)->hello.gid, sizeof(gid->raw));
		return 0;
	}
	n = mrce_gid_table(ibctx, tbl);
	if ((unsigned int)index < n)
		*gid = tbl[index];
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

static void mrce_gid_entry(struct ibv_context *ibctx, const union ibv_gid *g,
			   uint32_t index, struct ibv_gid_entry *entry)
{
	memset(entry, 0, sizeof(*entry));
	entry->gid = *g;
	entry->gid_index = index;
	entry->port_num = MRCE_PORT;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = if_nametoindex(to_mctx(ibctx)->hello.ifname);
}

/* An empty entry is ENODATA, as rdma-core's. */
int mrce_query_gid_ex(struct ibv_context *ibctx, uint32_t port,
		      uint32_t index, struct ibv_gid_entry *out,
		      size_t entry_size)
{
	union ibv_gid tbl[MRCE_GID_TBL_LEN];
	struct ibv_gid_entry entry;
	unsigned int n;

	if (port != MRCE_PORT || index >= MRCE_GID_TBL_LEN ||
	    entry_size < sizeof(entry))
		return EINVAL;
	n = mrce_gid_table(ibctx, tbl);
	if (index >= n)
		return ENODATA;
	mrce_gid_entry(ibctx, &tbl[index], index, &entry);
	memcpy(out, &entry, sizeof(entry));
	return 0;
}

/* The valid entries, packed; fewer slots than entries is EINVAL. */
ssize_t mrce_query_gid_table(struct ibv_context *ibctx,
			     struct ibv_gid_entry *entries, size_t max,
			     size_t entry_size)
{
	union ibv_gid tbl[MRCE_GID_TBL_LEN];
	unsigned int n, i;

	if (entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	n = mrce_gid_table(ibctx, tbl);
	if (max < n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct ibv_gid_entry e;

		mrce_gid_entry(ibctx, &tbl[i], i, &e);
		memcpy((char *)entries + i * entry_size, &e, sizeof(e));
	}
	return n;
}

/*
 * libibverbs' ibv_query_gid_type: every entry is RoCE v2; an empty one reads
 * as IB/RoCE v1 (0), as libibverbs answers for an empty slot.
 */
int mrce_query_gid_type(struct ibv_context *ibctx, uint8_t port,
			unsigned int index, int *type)
{
	union ibv_gid tbl[MRCE_GID_TBL_LEN];

	if (port != MRCE_PORT || index >= MRCE_GID_TBL_LEN)
		return EINVAL;
	*type = index < mrce_gid_table(ibctx, tbl) ?
			MRCE_GID_TYPE_SYSFS_ROCE_V2 : 0;
	return 0;
}

int mrce_query_pkey(struct ibv_context *ibctx, uint8_t port, int index,
		    __be16 *pkey)
{
	(void)ibctx;
	if (port != MRCE_PORT || index != 0)
		return EINVAL;
	*pkey = htobe16(0xffff);
	return 0;
}

/* ------------------------------------------------------------------------
 * Async events (mrce_abi.h): the daemon writes 1 to the async eventfd of
 * HELLO (context->async_fd, EFD_SEMAPHORE) per event queued; we read it once
 * per event, fetch the event with GET_ASYNC_EVENT and turn the element
 * handle into the app's pointer. Each event given out for a QP/CQ/SRQ is
 * counted so that destroying the object waits for ibv_ack_async_event.
 * The daemon going away is IBV_EVENT_DEVICE_FATAL, once.
 * ------------------------------------------------------------------------ */

static bool mrce_event_is_qp(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

static bool mrce_event_is_srq(enum ibv_event_type t)
{
	return t == IBV_EVENT_SRQ_ERR || t == IBV_EVENT_SRQ_LIMIT_REACHED;
}

/*
 * Fills `out` from the daemon's event; false when its object is gone (it
 * was destroyed after the daemon queued the event): the event is dropped.
 */
bool mrce_translate_async_event(struct mrce_context *ctx,
				const struct mrce_async_event *in,
				struct ibv_async_event *out)
{
	enum ibv_event_type t = (enum ibv_event_type)in->event_type;
	bool found = false;

	memset(out, 0, sizeof(*out));
	out->event_type = t;
	pthread_mutex_lock(&ctx->obj_lock);
	if (mrce_event_is_qp(t)) {
		struct mrce_qp *qp;

		for (qp = ctx->qps; qp; qp = qp->next_in_ctx) {
			if (qp->ibv_qp.handle == in->element)
				break;
		}
		if (qp) {
			pthread_mutex_lock(&qp->ibv_qp.mutex);
			qp->async_given++;
			pthread_mutex_unlock(&qp->ibv_qp.mutex);
			out->element.qp = &qp->ibv_qp;
			found = true;
		}
	} else if (mrce_event_is_srq(t)) {
		struct mrce_srq *srq;

		for (srq = ctx->srqs; srq; srq = srq->next_in_ctx) {
			if (srq->ibv_srq.handle == in->element)
				break;
		}
		if (srq) {
			pthread_mutex_lock(&srq->ibv_srq.mutex);
			srq->async_given++;
			pthread_mutex_unlock(&srq->ibv_srq.mutex);
			out->element.srq = &srq->ibv_srq;
			found = true;
		}
	} else if (t == IBV_EVENT_CQ_ERR) {
		struct mrce_cq *cq;

		for (cq = ctx->cqs; cq; cq = cq->next_in_ctx) {
			if (cq->ibv_cq.handle == in->element)
				break;
		}
		if (cq) {
			pthread_mutex_lock(&cq->ibv_cq.mutex);
			cq->async_given++;
			pthread_mutex_unlock(&cq->ibv_cq.mutex);
			out->element.cq = &cq->ibv_cq;
			found = true;
		}
	} else if (t == IBV_EVENT_WQ_FATAL) {
		found = false; /* no WQs here */
	} else {
		/* Port and device events: the element is the port number. */
		out->element.port_num = (int)in->element;
		found = true;
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return found;
}

/*
 * The interface's addresses are the GID table, so an address added to it or
 * removed from it is a GID change. A netlink socket in the app's network
 * namespace (the daemon's) hears RTM_NEWADDR/RTM_DELADDR; async_fd becomes
 * an epoll fd over it and the daemon's eventfd. Without netlink (a sandbox
 * refusing the socket) async_fd is the eventfd and no GID_CHANGE comes.
 */
void mrce_async_fds_init(struct mrce_context *ctx, int efd)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	int flags, nl, ep, ifindex;

	ctx->async_efd = efd;
	ctx->vctx.context.async_fd = efd;
	ctx->nl_on = false;
	/* Non-blocking: another thread may take the count between poll and read. */
	flags = fcntl(efd, F_GETFL);
	if (flags >= 0)
		fcntl(efd, F_SETFL, flags | O_NONBLOCK);
	nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    NETLINK_ROUTE);
	if (nl < 0)
		return;
	if (bind(nl, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto err_nl;
	ifindex = (int)if_nametoindex(ctx->hello.ifname);
	if (ifindex)
		mrce_nl_filter(nl, ifindex); /* best effort: drain checks too */
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		goto err_nl;
	ev.data.fd = efd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) != 0)
		goto err_ep;
	ev.data.fd = nl;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, nl, &ev) != 0)
		goto err_ep;
	ctx->nl_fd = nl;
	ctx->nl_on = true;
	ctx->vctx.context.async_fd = ep;
	return;

err_ep:
	close(ep);
err_nl:
	close(nl);
}

/*
 * A socket filter that keeps only RTM_NEWADDR/RTM_DELADDR about IFINDEX, so
 * address changes of other interfaces never make async_fd readable. (Classic
 * BPF loads are big-endian: the host-order fields compare with htons/htonl.)
 * The kernel sends one message per address notification; mrce_nl_drain
 * still checks every message it reads.
 */
int mrce_nl_filter(int fd, int ifindex)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS,
			 offsetof(struct nlmsghdr, nlmsg_type)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(RTM_NEWADDR), 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(RTM_DELADDR), 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 NLMSG_LENGTH(0) + offsetof(struct ifaddrmsg, ifa_index)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl((uint32_t)ifindex), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			  sizeof(prog));
}

/* True when BUF (netlink messages) adds or removes an address of IFINDEX. */
bool mrce_nl_addr_change(const void *buf, size_t len, int ifindex)
{
	const struct nlmsghdr *nh;
	unsigned int left = (unsigned int)len;

	for (nh = buf; NLMSG_OK(nh, left); nh = NLMSG_NEXT(nh, left)) {
		const struct ifaddrmsg *ifa;

		if (nh->nlmsg_type != RTM_NEWADDR &&
		    nh->nlmsg_type != RTM_DELADDR)
			continue;
		if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
			continue;
		ifa = NLMSG_DATA(nh);
		if ((int)ifa->ifa_index == ifindex)
			return true;
	}
	return false;
}

/* Reads every queued netlink message; true if one changed our interface. */
static bool mrce_nl_drain(struct mrce_context *ctx)
{
	int ifindex = (int)if_nametoindex(ctx->hello.ifname);
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	bool changed = false;
	ssize_t n;

	while ((n = recv(ctx->nl_fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		if (ifindex && mrce_nl_addr_change(buf, (size_t)n, ifindex))
			changed = true;
	}
	/* ENOBUFS: messages were lost; the table may have changed. */
	if (n < 0 && errno == ENOBUFS)
		changed = true;
	return changed;
}

static int mrce_deliver_fatal(struct mrce_context *ctx,
			      struct ibv_async_event *ev)
{
	ctx->fatal_reported = true;
	memset(ev, 0, sizeof(*ev));
	ev->element.port_num = MRCE_PORT;
	ev->event_type = IBV_EVENT_DEVICE_FATAL;
	return 0;
}

int mrce_get_async_event(struct ibv_context *ibctx, struct ibv_async_event *ev)
{
	struct mrce_context *ctx = to_mctx(ibctx);
	struct pollfd pfd[3] = {
		{ .fd = ctx->async_efd, .events = POLLIN },
		{ .fd = ctx->conn.fd, .events = POLLRDHUP },
		{ .fd = ctx->nl_on ? ctx->nl_fd : -1, .events = POLLIN },
	};
	int flags = fcntl(ibctx->async_fd, F_GETFL);
	bool nonblock = flags >= 0 && (flags & O_NONBLOCK);
	struct mrce_async_event ae;
	uint64_t one;
	int ret;

	if (ctx->fatal_reported) {
		errno = EIO;
		return -1;
	}
	for (;;) {
		if (__atomic_load_n(&ctx->conn.dead, __ATOMIC_ACQUIRE))
			return mrce_deliver_fatal(ctx, ev);
		ret = poll(pfd, 3, nonblock ? 0 : -1);
		if (ret < 0 && errno == EINTR && mrce_wait_restarts())
			continue;
		if (ret < 0)
			return -1;
		if ((pfd[2].revents & POLLIN) && mrce_nl_drain(ctx)) {
			memset(ev, 0, sizeof(*ev));
			ev->event_type = IBV_EVENT_GID_CHANGE;
			ev->element.port_num = MRCE_PORT;
			return 0;
		}
		if (pfd[0].revents & POLLIN) {
			if (read(ctx->async_efd, &one, sizeof(one)) !=
			    sizeof(one)) {
				if (errno == EAGAIN && !nonblock)
					continue; /* another thread took it */
				return -1;
			}
			ret = mrce_conn_call(&ctx->conn,
					     MRCE_OP_GET_ASYNC_EVENT, NULL, 0,
					     &ae, sizeof(ae), NULL, 0);
			if (ret == EIO && ctx->conn.dead)
				continue;
			if (ret == EAGAIN) {
				/* Purged with its object: nothing to give. */
				if (nonblock) {
					errno = EAGAIN;
					return -1;
				}
				continue;
			}
			if (ret) {
				errno = ret;
				return -1;
			}
			if (mrce_translate_async_event(ctx, &ae, ev))
				return 0;
			continue;
		}
		if (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			__atomic_store_n(&ctx->conn.dead, true,
					 __ATOMIC_RELEASE);
			continue;
		}
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
	}
}

/* The counterpart of mrce_translate_async_event's counting. */
void mrce_ack_async_event(struct ibv_async_event *ev)
{
	pthread_mutex_t *m = NULL;
	pthread_cond_t *c = NULL;
	uint32_t *n = NULL;

	if (mrce_event_is_qp(ev->event_type) && ev->element.qp) {
		m = &ev->element.qp->mutex;
		c = &ev->element.qp->cond;
		n = &ev->element.qp->events_completed;
	} else if (mrce_event_is_srq(ev->event_type) && ev->element.srq) {
		m = &ev->element.srq->mutex;
		c = &ev->element.srq->cond;
		n = &ev->element.srq->events_completed;
	} else if (ev->event_type == IBV_EVENT_CQ_ERR && ev->element.cq) {
		m = &ev->element.cq->mutex;
		c = &ev->element.cq->cond;
		n = &ev->element.cq->async_events_completed;
	}
	if (!m)
		return;
	pthread_mutex_lock(m);
	(*n)++;
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(m);
}
