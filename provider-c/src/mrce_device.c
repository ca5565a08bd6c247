// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_device.c - device list, open/close and the query verbs. Everything a
 * query returns comes from the daemon's HELLO response.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "mrce.h"

struct mrce_device mrce_dev;
static pthread_mutex_t mrce_dev_lock = PTHREAD_MUTEX_INITIALIZER;

/* A device list as the app sees it, with the real list kept in front. */
struct mrce_dev_list {
	struct ibv_device **real;
	struct ibv_device *devs[];
};

/* Connects, says HELLO and hangs up: is a daemon serving this netns? */
static int mrce_probe(struct mrce_hello_resp *hello)
{
	struct mrce_conn conn;
	int fds[2];
	int ret;

	ret = mrce_conn_open(&conn, MRCE_PROBE_TIMEOUT_MS);
	if (ret)
		return ret;
	ret = mrce_hello(&conn, hello, fds);
	if (!ret) {
		close(fds[0]);
		close(fds[1]);
	}
	mrce_conn_close(&conn);
	return ret;
}

static void mrce_fill_device(const struct mrce_hello_resp *hello)
{
	struct ibv_device *dev = &mrce_dev.ibv_dev;
	const char *name = hello->dev_name[0] ? hello->dev_name : "mrce0";

	mrce_dev.hello = *hello;
	dev->node_type = IBV_NODE_CA;
	dev->transport_type = IBV_TRANSPORT_IB;
	snprintf(dev->name, sizeof(dev->name), "%.15s", name);
	snprintf(dev->dev_name, sizeof(dev->dev_name), "uverbs_%.15s", name);
	snprintf(dev->dev_path, sizeof(dev->dev_path),
		 "/sys/class/infiniband_verbs/uverbs_%.15s", name);
	snprintf(dev->ibdev_path, sizeof(dev->ibdev_path),
		 "/sys/class/infiniband/%.15s", name);
}

struct ibv_device **mrce_wrap_device_list(struct ibv_device **real,
					  int *num_devices)
{
	struct mrce_hello_resp hello;
	struct mrce_dev_list *list;
	int n = 0, i;
	bool ours;

	while (real && real[n])
		n++;
	ours = mrce_probe(&hello) == 0;
	list = calloc(1, sizeof(*list) + (size_t)(n + 2) * sizeof(list->devs[0]));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list->real = real;
	for (i = 0; i < n; i++)
		list->devs[i] = real[i];
	if (ours) {
		pthread_mutex_lock(&mrce_dev_lock);
		mrce_fill_device(&hello);
		pthread_mutex_unlock(&mrce_dev_lock);
		list->devs[n++] = &mrce_dev.ibv_dev;
	}
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

static int mrce_query_device_ex(struct ibv_context *ctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr,
				size_t attr_size)
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
	full.max_dm_size = 0;
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

struct ibv_context *mrce_open_device(struct ibv_device *dev)
{
	struct mrce_context *ctx;
	int fds[2];
	int ret;

	(void)dev;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_open(&ctx->conn, MRCE_CMD_TIMEOUT_MS);
	if (ret)
		goto err_free;
	ret = mrce_hello(&ctx->conn, &ctx->hello, fds);
	if (ret)
		goto err_conn;
	/* Let the daemon process_vm_readv/writev us under Yama ptrace_scope 1. */
	prctl(PR_SET_PTRACER, (unsigned long)ctx->hello.daemon_pid, 0, 0, 0);

	ctx->doorbell_fd = fds[0];
	ctx->debug = getenv("METAROCE_DEBUG") &&
		     strcmp(getenv("METAROCE_DEBUG"), "0") != 0;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = mrce_vquery_port;
	ctx->vctx.query_device_ex = mrce_query_device_ex;
	ctx->vctx.context.device = &mrce_dev.ibv_dev;
	ctx->vctx.context.ops = mrce_ctx_ops;
	ctx->vctx.context.cmd_fd = ctx->conn.fd;
	ctx->vctx.context.async_fd = fds[1];
	ctx->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	return &ctx->vctx.context;

err_conn:
	mrce_conn_close(&ctx->conn);
err_free:
	free(ctx);
	errno = ret;
	return NULL;
}

int mrce_close_device(struct ibv_context *ibctx)
{
	struct mrce_context *ctx = to_mctx(ibctx);

	if (ctx->debug)
		fprintf(stderr, "metaroce: %s: doorbells=%llu\n",
			mrce_dev.ibv_dev.name,
			(unsigned long long)__atomic_load_n(&ctx->doorbells,
							    __ATOMIC_RELAXED));
	/* Closing the connection makes the daemon destroy what is left. */
	mrce_conn_close(&ctx->conn);
	close(ctx->doorbell_fd);
	close(ibctx->async_fd);
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
	attr->max_qp_init_rd_atom = (int)h->max_qp_rd_atom;
	attr->max_res_rd_atom = (int)(h->max_qp_rd_atom * h->max_qp);
	attr->atomic_cap = IBV_ATOMIC_NONE;
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
	attr.gid_tbl_len = 1;
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

int mrce_query_gid(struct ibv_context *ibctx, uint8_t port, int index,
		   union ibv_gid *gid)
{
	if (port != MRCE_PORT || index != 0)
		return EINVAL;
	memcpy(gid->raw, to_mctx(ibctx)->hello.gid, sizeof(gid->raw));
	return 0;
}

int mrce_query_gid_ex(struct ibv_context *ibctx, uint32_t port,
		      uint32_t index, struct ibv_gid_entry *out,
		      size_t entry_size)
{
	const struct mrce_hello_resp *h = &to_mctx(ibctx)->hello;
	struct ibv_gid_entry entry;

	if (port != MRCE_PORT || index != 0 || entry_size < sizeof(entry))
		return EINVAL;
	memset(&entry, 0, sizeof(entry));
	memcpy(entry.gid.raw, h->gid, sizeof(entry.gid.raw));
	entry.gid_index = 0;
	entry.port_num = MRCE_PORT;
	entry.gid_type = IBV_GID_TYPE_ROCE_V2;
	entry.ndev_ifindex = if_nametoindex(h->ifname);
	memcpy(out, &entry, sizeof(entry));
	return 0;
}

ssize_t mrce_query_gid_table(struct ibv_context *ibctx,
			     struct ibv_gid_entry *entries, size_t max,
			     size_t entry_size)
{
	int ret;

	if (max < 1)
		return -EINVAL;
	ret = mrce_query_gid_ex(ibctx, MRCE_PORT, 0, entries, entry_size);
	return ret ? -ret : 1;
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

/*
 * The ABI carries no async event records yet; the one event we can tell is
 * the daemon going away (the control socket hangs up): IBV_EVENT_DEVICE_FATAL.
 */
int mrce_get_async_event(struct ibv_context *ibctx, struct ibv_async_event *ev)
{
	struct mrce_context *ctx = to_mctx(ibctx);
	struct pollfd pfd = { .fd = ctx->conn.fd, .events = POLLRDHUP };
	int flags = fcntl(ibctx->async_fd, F_GETFL);
	int timeout = flags >= 0 && (flags & O_NONBLOCK) ? 0 : -1;
	int ret;

	if (ctx->fatal_reported) {
		errno = EIO;
		return -1;
	}
	while (!__atomic_load_n(&ctx->conn.dead, __ATOMIC_ACQUIRE)) {
		ret = poll(&pfd, 1, timeout);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -1;
		if (ret == 0) {
			errno = EAGAIN;
			return -1;
		}
		if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))
			__atomic_store_n(&ctx->conn.dead, true,
					 __ATOMIC_RELEASE);
	}
	ctx->fatal_reported = true;
	memset(ev, 0, sizeof(*ev));
	ev->element.port_num = MRCE_PORT;
	ev->event_type = IBV_EVENT_DEVICE_FATAL;
	return 0;
}
