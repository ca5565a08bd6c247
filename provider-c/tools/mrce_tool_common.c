// SPDX-License-Identifier: Apache-2.0
/* Shared by the two-sided test programs: see mrce_tool_common.h. */
#include "mrce_tool_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *tool_name = "mrce-tool";
static char timeout_msg[128];
static size_t timeout_len;

static void on_alarm(int sig)
{
	ssize_t n;

	(void)sig;
	n = write(STDOUT_FILENO, timeout_msg, timeout_len);
	(void)n;
	_exit(1);
}

void tool_init(const char *name, unsigned int timeout_s)
{
	tool_name = name;
	snprintf(timeout_msg, sizeof(timeout_msg), "%s: FAIL timeout\n", name);
	timeout_len = strlen(timeout_msg);
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm(timeout_s);
}

void tool_fail(const char *fmt, ...)
{
	va_list ap;

	printf("%s: FAIL ", tool_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

uint64_t tool_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint32_t tool_crc32_update(uint32_t crc, const uint8_t *p, size_t len)
{
	static uint32_t table[256];

	if (!table[1]) {
		for (uint32_t n = 0; n < 256; n++) {
			uint32_t c = n;

			for (int j = 0; j < 8; j++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[n] = c;
		}
	}
	crc = ~crc;
	for (size_t k = 0; k < len; k++)
		crc = table[(crc ^ p[k]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

void tool_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0)
			tool_fail("tcp write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

void tool_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n == 0)
			tool_fail("tcp: peer closed the connection");
		if (n < 0)
			tool_fail("tcp read: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

int tool_tcp_connect(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	char service[16];
	int fd = -1;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res))
		tool_fail("cannot resolve %s", host);
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, 0);
			if (fd < 0)
				continue;
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
				break;
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			usleep(100 * 1000); /* the server may not listen yet */
	}
	freeaddrinfo(res);
	if (fd < 0)
		tool_fail("cannot connect to %s:%d", host, port);
	return fd;
}

int tool_tcp_accept(int port)
{
	struct sockaddr_in6 addr = { .sin6_family = AF_INET6,
				     .sin6_port = htons((uint16_t)port),
				     .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0, lfd, fd;

	lfd = socket(AF_INET6, SOCK_STREAM, 0);
	if (lfd < 0)
		tool_fail("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 1))
		tool_fail("listen on port %d: %s", port, strerror(errno));
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		tool_fail("accept: %s", strerror(errno));
	close(lfd);
	return fd;
}

struct ibv_context *tool_open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;

	if (!list)
		tool_fail("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++) {
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			dev = list[i];
			break;
		}
	}
	if (!dev)
		tool_fail("device %s not found", name ? name : "(any)");
	ctx = ibv_open_device(dev);
	ibv_free_device_list(list);
	if (!ctx)
		tool_fail("ibv_open_device: %s", strerror(errno));
	return ctx;
}

void tool_check(const char *name, int ok, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	printf("CHECK %s: %s %s\n", name, ok ? "PASS" : "FAIL", detail);
	fflush(stdout);
	if (!ok)
		tool_fail("%s: %s", name, detail);
}

void tool_rc_to_rts(struct ibv_qp *qp, uint32_t dest, const uint8_t *gid,
		    int gidx)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		tool_fail("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		tool_fail("RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		tool_fail("RTS: %s", strerror(errno));
}

int tool_rc_write_wait(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		       const uint8_t *src, uint32_t len, uint64_t raddr,
		       uint32_t rkey, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int n;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		tool_fail("post_send: %s", strerror(errno));
	do
		n = ibv_poll_cq(cq, 1, &wc); /* the run's timeout bounds it */
	while (n == 0);
	if (n < 0)
		tool_fail("poll_cq");
	if (wc.wr_id != id)
		tool_fail("completion of wr %llu, expected %llu",
			  (unsigned long long)wc.wr_id, (unsigned long long)id);
	return wc.status;
}

struct ibv_qp *tool_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp;

	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		tool_fail("create_qp: %s", strerror(errno));
	return qp;
}
