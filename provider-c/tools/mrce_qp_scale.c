// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_qp_scale - many RC QPs between two processes, for QpScaleIT and
 * bench/scale/run-qp-scale.
 *
 *   mrce_qp_scale [options]          (server: the WRITEs' target)
 *   mrce_qp_scale [options] SERVER   (client: sets the run's sizes)
 *
 *   -d DEV      device (mrce0)          -g GIDX   GID index (0)
 *   -p PORT     TCP side channel (18680) -t S     whole-run timeout (120)
 *   -n N        QPs on each side (1000)
 *   -a LIST     active QP counts of the throughput phases, e.g. 1,100,1000
 *               (none: set-up, one checked WRITE per QP, teardown only)
 *   -s BYTES    WRITE size of the throughput phases (16384)
 *   -D MS       length of each throughput phase in ms (2000)
 *   -o WRS      WRITEs outstanding in all during a phase, spread over its
 *               active QPs: min(16, WRS / K) each, at least 1 (256), so
 *               every phase offers about the same load
 *   -H PATH     client: after set-up print "mrce_qp_scale: holding", wait
 *               until PATH exists, then go on (the bench reads the daemons'
 *               RSS meanwhile)
 *
 * The client tells the server N, the phases and the size over TCP; both
 * create N RC QPs on one PD and one CQ, swap the QP numbers (and the server's
 * buffer address and rkey) and move every QP to RTS (RTR starts the daemons'
 * connection-manager handshake), 128 QPs at a time in step with each other.
 * Then the client RDMA WRITEs 64 bytes on every QP, QP i into slot i of the
 * server's buffer, a pattern made from i; the
 * server checks every slot's CRC-32 (a QP that did not connect, or landed
 * anywhere else, fails it). Each throughput phase K keeps WRITEs of -s bytes
 * outstanding on the first K QPs (-o) for -D ms, QP q always into region q (the
 * server clears the buffer first), and the server checks each of the K
 * regions' CRC-32 afterwards. Then both destroy their QPs, CQ, MR and PD.
 * Lines (both sides): "CHECK name: PASS|FAIL detail";
 * client: "RESULT setup qps=N create_ms= modify_ms= first_write_ms= total_ms=
 * qps_per_s=", "RESULT active=K depth= writes= bytes= ms= gbit_s=",
 * "RESULT teardown qps=N destroy_ms= qps_per_s="; at the end
 * "mrce_qp_scale: client OK" / "server OK", or "mrce_qp_scale: FAIL ..." and
 * exit 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mrce_tool_common.h"

#define MAX_PHASES 8
#define SLOT 64u
#define MAX_SEND_WR 16u
#define CQ_DEPTH 16384u
#define RTS_BATCH 128u

struct hdr {
	uint32_t n;
	uint32_t size;
	uint32_t phases;
	uint32_t active[MAX_PHASES];
};

struct ends {
	uint8_t gid[16];
	uint64_t buf;
	uint32_t rkey;
	uint32_t pad;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp **qp;
	uint32_t *peer_qpn;
	uint8_t *buf;
	size_t buf_len;
	union ibv_gid gid;
	int gidx;
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint8_t pattern(uint32_t q, size_t i)
{
	return (uint8_t)tool_mix(((uint64_t)q << 32) + i);
}

static uint32_t pattern_crc(uint32_t q, size_t len)
{
	uint8_t chunk[256];
	uint32_t crc = 0;

	for (size_t off = 0; off < len; off += sizeof(chunk)) {
		size_t m = len - off < sizeof(chunk) ? len - off : sizeof(chunk);

		for (size_t i = 0; i < m; i++)
			chunk[i] = pattern(q, off + i);
		crc = tool_crc32_update(crc, chunk, m);
	}
	return crc;
}

static void *big_buffer(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		tool_fail("mmap %zu bytes: %s", len, strerror(errno));
	return p;
}

static struct ibv_qp *scale_qp(struct side *s)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = MAX_SEND_WR,
						.max_recv_wr = 1,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct ibv_qp *qp;

	qa.send_cq = qa.recv_cq = s->cq;
	qp = ibv_create_qp(s->pd, &qa);
	if (!qp)
		tool_fail("create_qp: %s", strerror(errno));
	return qp;
}

/* PD, CQ, MR on buf, N QPs: the create time in ms. */
static double set_up(struct side *s, uint32_t n, int access)
{
	double t0;

	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!s->pd || !s->cq || ibv_query_gid(s->ctx, 1, s->gidx, &s->gid))
		tool_fail("pd/cq/gid: %s", strerror(errno));
	s->mr = ibv_reg_mr(s->pd, s->buf, s->buf_len,
			   IBV_ACCESS_LOCAL_WRITE | access);
	if (!s->mr)
		tool_fail("reg_mr: %s", strerror(errno));
	s->qp = calloc(n, sizeof(*s->qp));
	s->peer_qpn = calloc(n, sizeof(*s->peer_qpn));
	if (!s->qp || !s->peer_qpn)
		tool_fail("calloc");
	t0 = now_ms();
	for (uint32_t i = 0; i < n; i++)
		s->qp[i] = scale_qp(s);
	return now_ms() - t0;
}

static void send_qpns(struct side *s, int fd, uint32_t n)
{
	uint32_t *qpn = malloc(n * sizeof(*qpn));

	if (!qpn)
		tool_fail("malloc");
	for (uint32_t i = 0; i < n; i++)
		qpn[i] = s->qp[i]->qp_num;
	tool_write_all(fd, qpn, n * sizeof(*qpn));
	free(qpn);
}

/*
 * Moves every QP to RTS, RTS_BATCH at a time in step with the peer (a byte
 * each way after each batch): a QP's RTR starts the connection managers'
 * handshake, which fails when the peer QP is not at RTR within the daemon's
 * --cm-connect-timeout-ms (10 s), so neither side may run thousands of QPs
 * ahead of the other.
 */
static double to_rts(struct side *s, uint32_t n, const uint8_t *peer_gid,
		     int fd)
{
	double t0 = now_ms();
	char c;

	for (uint32_t i = 0; i < n; i++) {
		tool_rc_to_rts(s->qp[i], s->peer_qpn[i], peer_gid, s->gidx);
		if ((i + 1) % RTS_BATCH == 0 || i + 1 == n) {
			tool_write_all(fd, "b", 1);
			tool_read_all(fd, &c, 1);
		}
	}
	return now_ms() - t0;
}

/* Destroys everything: the QPs' destroy time in ms. */
static double tear_down(struct side *s, uint32_t n)
{
	double t0 = now_ms(), t;

	for (uint32_t i = 0; i < n; i++)
		if (ibv_destroy_qp(s->qp[i]))
			tool_fail("destroy_qp %u: %s", i, strerror(errno));
	t = now_ms() - t0;
	if (ibv_dereg_mr(s->mr) || ibv_destroy_cq(s->cq) ||
	    ibv_dealloc_pd(s->pd))
		tool_fail("dereg_mr/destroy_cq/dealloc_pd: %s", strerror(errno));
	free(s->qp);
	free(s->peer_qpn);
	munmap(s->buf, s->buf_len);
	return t;
}

/* Regions [0, k) of len bytes hold pattern q each: the wrong ones. */
static uint32_t check_regions(const uint8_t *buf, uint32_t k, size_t len)
{
	uint32_t bad = 0;

	for (uint32_t q = 0; q < k; q++)
		bad += tool_crc32(buf + (size_t)q * len, len) != pattern_crc(q, len);
	return bad;
}

static int server(struct side *s, int port)
{
	struct ends me = { 0 }, peer;
	struct hdr h;
	size_t region;
	uint32_t bad;
	int fd;
	char c;

	fd = tool_tcp_accept(port);
	tool_read_all(fd, &h, sizeof(h));
	if (h.n == 0 || h.phases > MAX_PHASES || h.size == 0)
		tool_fail("bad header");
	region = h.size;
	s->buf_len = (size_t)h.n * SLOT;
	for (uint32_t p = 0; p < h.phases; p++)
		if ((size_t)h.active[p] * region > s->buf_len)
			s->buf_len = (size_t)h.active[p] * region;
	s->buf = big_buffer(s->buf_len);
	set_up(s, h.n, IBV_ACCESS_REMOTE_WRITE);
	memcpy(me.gid, s->gid.raw, 16);
	me.buf = (uintptr_t)s->buf;
	me.rkey = s->mr->rkey;
	tool_write_all(fd, &me, sizeof(me));
	send_qpns(s, fd, h.n);
	tool_read_all(fd, &peer, sizeof(peer));
	tool_read_all(fd, s->peer_qpn, h.n * sizeof(*s->peer_qpn));
	to_rts(s, h.n, peer.gid, fd);
	tool_write_all(fd, "r", 1); /* every QP is past RTR */
	tool_read_all(fd, &c, 1);   /* the client's first WRITEs completed */
	bad = 0;
	for (uint32_t i = 0; i < h.n; i++)
		bad += tool_crc32(s->buf + (size_t)i * SLOT, SLOT) !=
		       pattern_crc(i, SLOT);
	tool_check("first_write_every_qp", bad == 0,
		   "%u of %u QPs' slots wrong", bad, h.n);
	tool_write_all(fd, "k", 1);
	for (uint32_t p = 0; p < h.phases; p++) {
		memset(s->buf, 0, s->buf_len);
		tool_write_all(fd, "c", 1); /* cleared */
		tool_read_all(fd, &c, 1);   /* the phase's WRITEs completed */
		bad = check_regions(s->buf, h.active[p], region);
		tool_check("data_active_qps", bad == 0,
			   "%u active: %u of %u regions of %zu bytes wrong",
			   h.active[p], bad, h.active[p], region);
		tool_write_all(fd, "k", 1);
	}
	tool_read_all(fd, &c, 1); /* the client tears down */
	tear_down(s, h.n);
	tool_write_all(fd, "d", 1);
	close(fd);
	printf("mrce_qp_scale: server OK\n");
	return 0;
}

static void post_write(struct side *s, uint32_t q, const uint8_t *src,
		       uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len,
			       .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = q, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(s->qp[q], &wr, &bad))
		tool_fail("post_send on QP %u: %s", q, strerror(errno));
}

/* Polls up to max completions (at least one): how many; FAIL on an error. */
static int reap(struct side *s, struct ibv_wc *wc, int max)
{
	int n;

	do
		n = ibv_poll_cq(s->cq, max, wc); /* the run's timeout bounds it */
	while (n == 0);
	if (n < 0)
		tool_fail("poll_cq");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			tool_fail("WRITE on QP %llu: %s",
				  (unsigned long long)wc[i].wr_id,
				  ibv_wc_status_str(wc[i].status));
	}
	return n;
}

static int client(struct side *s, const char *host, int port, struct hdr *h,
		  unsigned int phase_ms, uint32_t outstanding, const char *hold)
{
	static struct ibv_wc wc[256];
	double create_ms, modify_ms, first_ms, t0, t_start;
	struct ends me = { 0 }, peer;
	uint32_t kmax = 0;
	size_t region = h->size;
	int fd, left;
	char c;

	for (uint32_t p = 0; p < h->phases; p++)
		if (h->active[p] > kmax)
			kmax = h->active[p];
	/* the first WRITEs' slots, then each active QP's region */
	s->buf_len = (size_t)h->n * SLOT + (size_t)kmax * region;
	s->buf = big_buffer(s->buf_len);
	for (uint32_t i = 0; i < h->n; i++)
		for (uint32_t j = 0; j < SLOT; j++)
			s->buf[(size_t)i * SLOT + j] = pattern(i, j);
	for (uint32_t q = 0; q < kmax; q++)
		for (size_t j = 0; j < region; j++)
			s->buf[(size_t)h->n * SLOT + (size_t)q * region + j] =
				pattern(q, j);
	fd = tool_tcp_connect(host, port);
	t_start = now_ms();
	tool_write_all(fd, h, sizeof(*h));
	create_ms = set_up(s, h->n, 0);
	tool_read_all(fd, &peer, sizeof(peer));
	tool_read_all(fd, s->peer_qpn, h->n * sizeof(*s->peer_qpn));
	memcpy(me.gid, s->gid.raw, 16);
	tool_write_all(fd, &me, sizeof(me));
	send_qpns(s, fd, h->n);
	modify_ms = to_rts(s, h->n, peer.gid, fd);
	tool_read_all(fd, &c, 1); /* the server's QPs are past RTR */
	/* One 64-byte WRITE per QP, at most CQ_DEPTH in flight. */
	t0 = now_ms();
	left = 0;
	for (uint32_t i = 0; i < h->n; i++) {
		if (left == (int)CQ_DEPTH)
			left -= reap(s, wc, 256);
		post_write(s, i, s->buf + (size_t)i * SLOT, SLOT,
			   peer.buf + (size_t)i * SLOT, peer.rkey);
		left++;
	}
	while (left > 0)
		left -= reap(s, wc, 256);
	first_ms = now_ms() - t0;
	printf("RESULT setup qps=%u create_ms=%.1f modify_ms=%.1f first_write_ms=%.1f total_ms=%.1f qps_per_s=%.1f\n",
	       h->n, create_ms, modify_ms, first_ms, now_ms() - t_start,
	       h->n / ((now_ms() - t_start) / 1e3));
	tool_write_all(fd, "w", 1);
	tool_read_all(fd, &c, 1);
	tool_check("first_write_every_qp", c == 'k', "server checked %u slots",
		   h->n);
	if (hold) {
		printf("mrce_qp_scale: holding\n");
		fflush(stdout);
		while (access(hold, F_OK)) /* the bench reads RSS meanwhile */
			usleep(10 * 1000);
	}
	for (uint32_t p = 0; p < h->phases; p++) {
		uint32_t k = h->active[p];
		uint32_t depth = outstanding / k < MAX_SEND_WR ? outstanding / k :
								MAX_SEND_WR;
		uint64_t writes = 0;
		double ms;

		if (depth == 0)
			depth = 1;
		tool_read_all(fd, &c, 1); /* the server cleared its buffer */
		t0 = now_ms();
		left = 0;
		for (uint32_t q = 0; q < k; q++) {
			for (uint32_t j = 0; j < depth; j++)
				post_write(s, q,
					   s->buf + (size_t)h->n * SLOT + (size_t)q * region,
					   h->size, peer.buf + (size_t)q * region,
					   peer.rkey);
			left += (int)depth;
		}
		while (now_ms() - t0 < phase_ms) {
			int n = ibv_poll_cq(s->cq, 256, wc);

			if (n < 0)
				tool_fail("poll_cq");
			for (int i = 0; i < n; i++) {
				uint32_t q = (uint32_t)wc[i].wr_id;

				if (wc[i].status != IBV_WC_SUCCESS)
					tool_fail("WRITE on QP %u: %s", q,
						  ibv_wc_status_str(wc[i].status));
				writes++;
				post_write(s, q,
					   s->buf + (size_t)h->n * SLOT + (size_t)q * region,
					   h->size, peer.buf + (size_t)q * region,
					   peer.rkey);
			}
		}
		while (left > 0) {
			int n = reap(s, wc, 256);

			writes += (uint64_t)n;
			left -= n;
		}
		ms = now_ms() - t0;
		printf("RESULT active=%u depth=%u writes=%llu bytes=%llu ms=%.1f gbit_s=%.3f\n",
		       k, depth, (unsigned long long)writes,
		       (unsigned long long)(writes * h->size), ms,
		       writes * h->size * 8.0 / (ms * 1e6));
		tool_write_all(fd, "p", 1);
		tool_read_all(fd, &c, 1);
		tool_check("data_active_qps", c == 'k',
			   "%u active, server checked their regions", k);
	}
	t0 = now_ms();
	modify_ms = tear_down(s, h->n);
	printf("RESULT teardown qps=%u destroy_ms=%.1f total_ms=%.1f qps_per_s=%.1f\n",
	       h->n, modify_ms, now_ms() - t0, h->n / (modify_ms / 1e3));
	tool_write_all(fd, "t", 1);
	tool_read_all(fd, &c, 1);
	close(fd);
	printf("mrce_qp_scale: client OK\n");
	return 0;
}

static uint32_t parse_active(const char *list, uint32_t *out)
{
	uint32_t n = 0;
	char *dup = strdup(list), *save = NULL;

	for (char *t = strtok_r(dup, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (n == MAX_PHASES)
			tool_fail("-a: at most %d phases", MAX_PHASES);
		out[n] = (uint32_t)strtoul(t, NULL, 10);
		if (out[n] == 0)
			tool_fail("-a: active counts are positive numbers");
		n++;
	}
	free(dup);
	return n;
}

int main(int argc, char **argv)
{
	struct side s = { 0 };
	struct hdr h = { .n = 1000, .size = 16384 };
	const char *dev = "mrce0", *active = NULL, *hold = NULL;
	int port = 18680, timeout = 120, c;
	unsigned int phase_ms = 2000;
	uint32_t outstanding = 256;

	while ((c = getopt(argc, argv, "d:g:p:t:n:a:s:D:o:H:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': s.gidx = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		case 'n': h.n = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'a': active = optarg; break;
		case 's': h.size = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'D': phase_ms = (unsigned int)atoi(optarg); break;
		case 'o': outstanding = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'H': hold = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GIDX] [-p PORT] [-t S] [-n QPS] [-a K,K..] [-s BYTES] [-D MS] [-o WRS] [-H PATH] [SERVER]\n",
				argv[0]);
			return 2;
		}
	}
	tool_init("mrce_qp_scale", (unsigned int)timeout);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (active)
		h.phases = parse_active(active, h.active);
	if (h.n == 0 || h.size == 0 || h.size > (1u << 24) || outstanding == 0 ||
	    outstanding > CQ_DEPTH)
		tool_fail("-n, -s and -o take positive numbers (-s at most 16 MiB, -o at most %u)",
			  CQ_DEPTH);
	for (uint32_t p = 0; p < h.phases; p++)
		if (h.active[p] > h.n)
			tool_fail("-a %u: more than the %u QPs", h.active[p], h.n);
	s.ctx = tool_open_device(dev);
	if (optind < argc)
		return client(&s, argv[optind], port, &h, phase_ms, outstanding,
			      hold);
	return server(&s, port);
}
