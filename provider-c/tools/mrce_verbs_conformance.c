// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_verbs_conformance - the verbs semantics an RDMA application relies on,
 * checked between two hosts with data patterns, checksums of what landed
 * where, and canaries around every target. Plain libibverbs API: run it
 * under LD_PRELOAD=libmetaroce.so like any app.
 *
 *   server: mrce_verbs_conformance [-d dev] [-g gidx] [-p port] [-t secs]
 *   client: mrce_verbs_conformance [-d dev] [-g gidx] [-p port] [-t secs]
 *                                  [-n fetch_add_ops] [-w wait_secs] host
 *   -S (server): make no SRQ, for a daemon without SRQ support (the SRQ case
 *      then fails with the reason).
 *
 * Both sides make the same set of QPs (one per case group) and swap QPNs,
 * GIDs, addresses and rkeys over TCP. The client drives every case; the
 * server is a responder that answers commands on the TCP channel: fill its
 * buffer with canaries or a pattern, post receives, report the receive
 * completions, CRCs and canary damage of a range, a 64-bit word, its
 * QP states and the async events it got. The client prints one line per
 * case, "CASE <name>: PASS|FAIL <detail>", then "PASS n/n" (exit 0) or
 * "FAIL k/n failed" (exit 1).
 *
 * Long because its cases and server commands share one protocol and QP set.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mrce_tool_common.h"

#define IB_PORT 1
#define BUF_SIZE (1u << 20)
#define NW_SIZE 4096
#define RECV_BASE (512u * 1024)
#define RECV_STRIDE 8192
#define RES_BASE (768u * 1024) /* client: FETCH_ADD results */
#define MAX_FADD 4096
#define CANARY 0xa5
#define GUARD 64
#define QKEY 0x11111111u
#define SQ_DEPTH 32
#define RQ_DEPTH 32
#define UD_MSG_MAX 1024
#define GRH_LEN 40

/* One QP per case, so that a failing case leaves the others alone. */
enum qp_index {
	Q_SEND, Q_WRITE, Q_WIMM, Q_READ, Q_CAS, Q_FADD, Q_FENCE, Q_EX, Q_SRQ1,
	Q_SRQ2, Q_UD, Q_E_RKEY, Q_E_BOUNDS, Q_E_ACCESS, Q_E_RNR, NQP
};

static const char *const qp_names[NQP] = {
	"send", "write", "write_imm", "read", "cmp_swp", "fetch_add", "fence",
	"qp_ex", "srq1", "srq2", "ud", "err_rkey", "err_bounds", "err_access",
	"err_rnr",
};

struct opts {
	const char *dev;
	const char *host;
	int gidx;
	int port;
	unsigned int timeout;
	unsigned int wait;
	uint32_t fadd_ops;
	bool no_srq; /* -S: make no SRQ (for a daemon without SRQ support) */
};

/* What the peers swap over TCP. A QPN of 0: that QP could not be made. */
struct info {
	uint8_t gid[16];
	uint64_t buf;
	uint64_t nw;
	uint32_t rkey;
	uint32_t nw_rkey;
	uint32_t qpn[NQP];
	uint32_t psn;
	uint32_t pad;
};

enum cmd_op {
	C_RESET = 1, /* canaries over the whole buffer and NW region */
	C_FILL,      /* a: seed, b: off, c: len: pattern */
	C_CRC,       /* b: off, c: len -> v */
	C_DAMAGE,    /* b: off, c: len -> v = bytes that are not canaries */
	C_GET64,     /* b: off -> v */
	C_SET64,     /* b: off, c: value */
	C_POST_RECV, /* a: qp (NQP = the SRQ), b: count, c: sge layout len */
	C_WAIT_RECV, /* b: count -> n records */
	C_SRQ_ARM,   /* b: limit */
	C_SRQ_QUERY, /* -> v = srq_limit, a = max_wr */
	C_QP_STATE,  /* a: qp -> v = state */
	C_ASYNC,     /* a: kind (1 qp, 2 srq), b: index -> v = event type */
	C_UD_REPLY,  /* b: len: answer the last UD receive via create_ah_from_wc */
	C_NW_CRC,    /* b: off, c: len: CRC in the no-remote-write region */
	C_DONE,
};

struct cmd {
	uint32_t op;
	uint32_t a;
	uint64_t b;
	uint64_t c;
};

struct reply {
	int32_t status; /* 0 or an errno */
	uint32_t n;     /* records that follow */
	uint64_t v;
	uint32_t a;
	uint32_t pad;
};

/* One receive completion as the server saw it. */
struct rec {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t imm;   /* host order */
	uint32_t flags;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t grh_ok; /* UD: the GRH in front of the payload is right */
	uint32_t crc;    /* of the payload in the receive buffer (UD: after the GRH) */
	uint32_t pad;
};

struct side {
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	union ibv_gid gid;
	struct ibv_pd *pd;
	uint8_t *buf;
	uint8_t *nw;
	struct ibv_mr *mr;
	struct ibv_mr *nw_mr;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_cq_ex *xcq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[NQP];
	struct ibv_qp_ex *qpx;
	char why[NQP][160];  /* why a QP could not be made or connected */
	char srq_why[96];
	int fd;
	struct info me, peer;
	unsigned int wait;
	/* server: async events seen and acked: kind, index, type */
	int nev;
	struct { int kind, index, type; } ev[64];
	/* server: the last UD receive, for C_UD_REPLY */
	struct ibv_wc last_ud;
};

/* ------------------------------------------------------------ helpers */

/* Byte i of pattern `seed`: never the canary, so damage is visible. */
static uint8_t pat(uint32_t seed, uint32_t i)
{
	uint8_t b = (uint8_t)(tool_mix(((uint64_t)seed << 32) | (i / 8)) >> (8 * (i % 8)));

	return b == CANARY ? (uint8_t)(b ^ 0xff) : b;
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pat(seed, i);
}

static uint32_t damage(const uint8_t *p, size_t len)
{
	uint32_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] != CANARY;
	return n;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ------------------------------------------------------------- setup */

static struct ibv_qp *make_qp(struct side *s, int i, bool server,
			     char *why)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = s->scq,
		.recv_cq = s->rcq,
		.qp_type = i == Q_UD ? IBV_QPT_UD : IBV_QPT_RC,
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH,
			 .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = s->pd,
	};
	struct ibv_qp *qp;

	if (server && (i == Q_SRQ1 || i == Q_SRQ2)) {
		if (!s->srq) {
			snprintf(why, 160, "no SRQ: %s", s->srq_why);
			return NULL;
		}
		a.srq = s->srq;
	}
	if (!server && i == Q_EX) {
		if (!s->xcq) {
			snprintf(why, 160, "ibv_create_cq_ex: %s",
				 strerror(errno));
			return NULL;
		}
		a.send_cq = a.recv_cq = ibv_cq_ex_to_cq(s->xcq);
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		/* no RDMA_WRITE_WITH_IMM: the case checks it is refused */
		a.send_ops_flags = IBV_QP_EX_WITH_SEND |
				   IBV_QP_EX_WITH_SEND_WITH_IMM |
				   IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	}
	qp = ibv_create_qp_ex(s->ctx, &a);
	if (!qp) {
		snprintf(why, 160, "ibv_create_qp_ex(%s): %s", qp_names[i],
			 strerror(errno));
		return NULL;
	}
	if (!server && i == Q_EX) {
		s->qpx = ibv_qp_to_qp_ex(qp);
		if (!s->qpx) {
			snprintf(why, 160, "ibv_qp_to_qp_ex: %s",
				 strerror(errno));
			ibv_destroy_qp(qp);
			return NULL;
		}
	}
	return qp;
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = IB_PORT };

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = QKEY;
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						     IBV_QP_PORT | IBV_QP_QKEY);
	}
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int connect_qp(struct side *s, int i, bool server)
{
	struct ibv_qp *qp = s->qp[i];
	struct ibv_qp_attr a;
	int rd = s->attr.max_qp_rd_atom < 16 ? s->attr.max_qp_rd_atom : 16;
	int ird = s->attr.max_qp_init_rd_atom < 16 ?
			  s->attr.max_qp_init_rd_atom : 16;
	int ret;

	if (rd < 1)
		rd = 1;
	if (ird < 1)
		ird = 1;
	if (qp->qp_type == IBV_QPT_UD) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		if (ret)
			return ret;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = s->me.psn;
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = s->port.active_mtu;
	a.dest_qp_num = s->peer.qpn[i];
	a.rq_psn = s->peer.psn;
	a.max_dest_rd_atomic = (uint8_t)ird;
	/* The RNR case wants the peer's RNR NAKs to come fast. */
	a.min_rnr_timer = server && i == Q_E_RNR ? 1 : 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, s->peer.gid, 16);
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = IB_PORT;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = !server && i == Q_E_RNR ? 1 : 7;
	a.sq_psn = s->me.psn;
	a.max_rd_atomic = (uint8_t)rd;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC);
}

static void setup(struct side *s, const struct opts *o, bool server)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	s->ctx = tool_open_device(o->dev);
	if (ibv_query_device(s->ctx, &s->attr) ||
	    ibv_query_port(s->ctx, IB_PORT, &s->port) ||
	    ibv_query_gid(s->ctx, IB_PORT, o->gidx, &s->gid))
		tool_fail("query device/port/gid");
	s->wait = o->wait;
	s->pd = ibv_alloc_pd(s->ctx);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	s->nw = aligned_alloc(4096, NW_SIZE);
	if (!s->pd || !s->buf || !s->nw)
		tool_fail("alloc_pd/memory: %s", strerror(errno));
	memset(s->buf, CANARY, BUF_SIZE);
	memset(s->nw, CANARY, NW_SIZE);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE, access);
	/* No IBV_ACCESS_REMOTE_WRITE: a WRITE to it is a remote access error. */
	s->nw_mr = ibv_reg_mr(s->pd, s->nw, NW_SIZE,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!s->mr || !s->nw_mr)
		tool_fail("ibv_reg_mr: %s", strerror(errno));
	s->scq = ibv_create_cq(s->ctx, 512, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->ctx, 512, NULL, NULL, 0);
	if (!s->scq || !s->rcq)
		tool_fail("ibv_create_cq: %s", strerror(errno));
	if (!server) {
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 2 * SQ_DEPTH,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
				    IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM,
		};

		s->xcq = ibv_create_cq_ex(s->ctx, &ca);
	} else {
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = 64, .max_sge = 2 },
		};

		s->srq = o->no_srq ? NULL : ibv_create_srq(s->pd, &sa);
		if (o->no_srq)
			snprintf(s->srq_why, sizeof(s->srq_why), "-S given");
		else if (!s->srq)
			snprintf(s->srq_why, sizeof(s->srq_why),
				 "ibv_create_srq: %s", strerror(errno));
	}
	for (int i = 0; i < NQP; i++) {
		s->qp[i] = make_qp(s, i, server, s->why[i]);
		if (s->qp[i] && to_init(s->qp[i])) {
			snprintf(s->why[i], sizeof(s->why[i]),
				 "modify_qp(%s) to INIT failed", qp_names[i]);
			ibv_destroy_qp(s->qp[i]);
			s->qp[i] = NULL;
		}
		s->me.qpn[i] = s->qp[i] ? s->qp[i]->qp_num : 0;
	}
	memcpy(s->me.gid, s->gid.raw, 16);
	s->me.buf = (uintptr_t)s->buf;
	s->me.rkey = s->mr->rkey;
	s->me.nw = (uintptr_t)s->nw;
	s->me.nw_rkey = s->nw_mr->rkey;
	s->me.psn = (uint32_t)(tool_mix((uint64_t)getpid() ^ (uint64_t)time(NULL)) &
			       0xffffff);
}

static void exchange_and_connect(struct side *s, bool server)
{
	if (server) {
		tool_read_all(s->fd, &s->peer, sizeof(s->peer));
		tool_write_all(s->fd, &s->me, sizeof(s->me));
	} else {
		tool_write_all(s->fd, &s->me, sizeof(s->me));
		tool_read_all(s->fd, &s->peer, sizeof(s->peer));
	}
	for (int i = 0; i < NQP; i++) {
		int ret;

		if (!s->qp[i])
			continue;
		if (!s->peer.qpn[i]) {
			snprintf(s->why[i], sizeof(s->why[i]),
				 "the peer has no %s QP", qp_names[i]);
			continue;
		}
		ret = connect_qp(s, i, server);
		if (ret) {
			snprintf(s->why[i], sizeof(s->why[i]),
				 "connecting %s: %s", qp_names[i], strerror(ret));
			ibv_destroy_qp(s->qp[i]);
			s->qp[i] = NULL;
			if (i == Q_EX)
				s->qpx = NULL;
		}
	}
}

/* ------------------------------------------------------------ server */

static struct rec to_rec(struct side *s, const struct ibv_wc *wc)
{
	struct rec r = {
		.wr_id = wc->wr_id, .status = wc->status, .opcode = wc->opcode,
		.byte_len = wc->byte_len, .imm = ntohl(wc->imm_data),
		.flags = wc->wc_flags, .qp_num = wc->qp_num,
		.src_qp = wc->src_qp,
	};
	uint8_t *p = s->buf + RECV_BASE + wc->wr_id * RECV_STRIDE;

	if (wc->status != IBV_WC_SUCCESS)
		return r;
	if (s->qp[Q_UD] && wc->qp_num == s->qp[Q_UD]->qp_num) {
		const struct ibv_grh *g = (const void *)p;
		uint32_t vtf = ntohl(g->version_tclass_flow);

		r.grh_ok = wc->byte_len >= GRH_LEN &&
			   (wc->wc_flags & IBV_WC_GRH) && (vtf >> 28) == 6 &&
			   !memcmp(g->sgid.raw, s->peer.gid, 16) &&
			   !memcmp(g->dgid.raw, s->me.gid, 16) &&
			   g->next_hdr == 0x1b;
		if (wc->byte_len >= GRH_LEN)
			r.crc = tool_crc32(p + GRH_LEN, wc->byte_len - GRH_LEN);
		s->last_ud = *wc;
	} else if (wc->opcode == IBV_WC_RECV && wc->byte_len <= 100) {
		r.crc = tool_crc32(p, wc->byte_len);
	} else if (wc->opcode == IBV_WC_RECV) {
		/* Two SGEs: 100 bytes, a 100-byte gap, the rest. */
		uint8_t *tmp = malloc(wc->byte_len);

		memcpy(tmp, p, 100);
		memcpy(tmp + 100, p + 200, wc->byte_len - 100);
		r.crc = tool_crc32(tmp, wc->byte_len);
		free(tmp);
	}
	return r;
}

static void post_recvs(struct side *s, uint32_t qi, uint32_t count,
		       uint32_t len, struct reply *rep)
{
	static uint32_t next_slot; /* wr_id = buffer slot, cycling in 24 */

	for (uint32_t k = 0; k < count; k++) {
		uint32_t slot = next_slot++ % 24;
		uint8_t *p = s->buf + RECV_BASE + (size_t)slot * RECV_STRIDE;
		struct ibv_sge sge[2] = {
			{ .addr = (uintptr_t)p, .length = len > 100 ? 100 : len,
			  .lkey = s->mr->lkey },
			{ .addr = (uintptr_t)p + 200, .length = len - 100,
			  .lkey = s->mr->lkey },
		};
		struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = sge,
					  .num_sge = len > 100 ? 2 : 1 },
				   *bad;
		int ret;

		if (qi == Q_UD || (qi == NQP && len <= 100)) {
			sge[0].length = len;
			wr.num_sge = 1;
		}
		memset(p, CANARY, RECV_STRIDE);
		if (qi == NQP)
			ret = s->srq ? ibv_post_srq_recv(s->srq, &wr,
				 (struct ibv_recv_wr **)&bad) : ENODEV;
		else
			ret = s->qp[qi] ? ibv_post_recv(s->qp[qi], &wr, &bad) :
					  ENODEV;
		if (ret) {
			rep->status = ret;
			return;
		}
	}
}

static int qp_index_of(struct side *s, struct ibv_qp *qp)
{
	for (int i = 0; i < NQP; i++)
		if (s->qp[i] == qp)
			return i;
	return -1;
}

/* Fetches async events for up to `ms`, acking each after noting it. */
static void drain_async(struct side *s, int ms)
{
	struct pollfd pfd = { .fd = s->ctx->async_fd, .events = POLLIN };
	double end = now() + ms / 1000.0;

	for (;;) {
		struct ibv_async_event ev;
		int left = (int)((end - now()) * 1000);

		if (poll(&pfd, 1, left > 0 ? left : 0) <= 0)
			return;
		if (ibv_get_async_event(s->ctx, &ev))
			return;
		if (s->nev < 64) {
			int kind = 0, idx = -1;

			switch (ev.event_type) {
			case IBV_EVENT_SRQ_LIMIT_REACHED:
			case IBV_EVENT_SRQ_ERR:
				kind = 2;
				idx = ev.element.srq == s->srq ? 0 : -1;
				break;
			case IBV_EVENT_QP_FATAL:
			case IBV_EVENT_QP_REQ_ERR:
			case IBV_EVENT_QP_ACCESS_ERR:
			case IBV_EVENT_COMM_EST:
			case IBV_EVENT_QP_LAST_WQE_REACHED:
				kind = 1;
				idx = qp_index_of(s, ev.element.qp);
				break;
			default:
				break;
			}
			s->ev[s->nev].kind = kind;
			s->ev[s->nev].index = idx;
			s->ev[s->nev].type = ev.event_type;
			s->nev++;
		}
		ibv_ack_async_event(&ev);
	}
}

/* The first event noted for (kind, index), preferring errors over COMM_EST. */
static int find_event(struct side *s, int kind, int idx)
{
	int found = -1;

	for (int i = 0; i < s->nev; i++) {
		if (s->ev[i].kind != kind || s->ev[i].index != idx)
			continue;
		if (s->ev[i].type != IBV_EVENT_COMM_EST &&
		    s->ev[i].type != IBV_EVENT_QP_LAST_WQE_REACHED)
			return s->ev[i].type;
		if (found < 0)
			found = s->ev[i].type;
	}
	return found;
}

static void ud_reply(struct side *s, uint32_t len, struct reply *rep)
{
	struct ibv_grh *grh;
	struct ibv_ah *ah;
	uint8_t *src = s->buf + 4096;
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len,
			       .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;
	double end;
	int n;

	if (!s->qp[Q_UD] || !s->last_ud.byte_len) {
		rep->status = ENODEV;
		return;
	}
	grh = (struct ibv_grh *)(s->buf + RECV_BASE +
				 s->last_ud.wr_id * RECV_STRIDE);
	ah = ibv_create_ah_from_wc(s->pd, &s->last_ud, grh, IB_PORT);
	if (!ah) {
		rep->status = errno;
		return;
	}
	fill(src, len, 0x7e91);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = s->last_ud.src_qp;
	wr.wr.ud.remote_qkey = QKEY;
	rep->status = ibv_post_send(s->qp[Q_UD], &wr, &bad);
	end = now() + s->wait;
	while (!rep->status && (n = ibv_poll_cq(s->scq, 1, &wc)) == 0 &&
	       now() < end)
		;
	if (!rep->status && (n != 1 || wc.status != IBV_WC_SUCCESS))
		rep->status = EIO;
	rep->v = tool_crc32(src, len);
	ibv_destroy_ah(ah);
}

static int run_server(const struct opts *o)
{
	struct side s = { 0 };
	struct cmd c;
	struct reply rep;
	struct rec recs[64];

	setup(&s, o, true);
	s.fd = tool_tcp_accept(o->port);
	exchange_and_connect(&s, true);
	{
		int fl = fcntl(s.ctx->async_fd, F_GETFL);

		fcntl(s.ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	}
	for (;;) {
		tool_read_all(s.fd, &c, sizeof(c));
		memset(&rep, 0, sizeof(rep));
		switch (c.op) {
		case C_RESET:
			memset(s.buf, CANARY, RECV_BASE);
			memset(s.nw, CANARY, NW_SIZE);
			break;
		case C_FILL:
			fill(s.buf + c.b, (uint32_t)c.c, c.a);
			break;
		case C_CRC:
			rep.v = tool_crc32(s.buf + c.b, c.c);
			break;
		case C_NW_CRC:
			rep.v = tool_crc32(s.nw + c.b, c.c);
			break;
		case C_DAMAGE:
			rep.v = damage(s.buf + c.b, c.c);
			break;
		case C_GET64:
			memcpy(&rep.v, s.buf + c.b, 8);
			break;
		case C_SET64:
			memcpy(s.buf + c.b, &c.c, 8);
			break;
		case C_POST_RECV:
			post_recvs(&s, c.a, (uint32_t)c.b, (uint32_t)c.c, &rep);
			break;
		case C_WAIT_RECV: {
			/* c: how long to wait in ms; 0: the -w wait. */
			double end = now() + (c.c ? (double)c.c / 1000 : s.wait);
			uint32_t want = c.b > 64 ? 64 : (uint32_t)c.b;

			while (rep.n < want && now() < end) {
				struct ibv_wc wc;
				int n = ibv_poll_cq(s.rcq, 1, &wc);

				if (n < 0) {
					rep.status = EIO;
					break;
				}
				if (n == 1)
					recs[rep.n++] = to_rec(&s, &wc);
			}
			tool_write_all(s.fd, &rep, sizeof(rep));
			tool_write_all(s.fd, recs, rep.n * sizeof(recs[0]));
			continue;
		}
		case C_SRQ_ARM: {
			struct ibv_srq_attr a = { .srq_limit = (uint32_t)c.b };

			rep.status = s.srq ? ibv_modify_srq(s.srq, &a,
							    IBV_SRQ_LIMIT) :
					     ENODEV;
			break;
		}
		case C_SRQ_QUERY: {
			struct ibv_srq_attr a;

			rep.status = s.srq ? ibv_query_srq(s.srq, &a) : ENODEV;
			if (!rep.status) {
				rep.v = a.srq_limit;
				rep.a = a.max_wr;
			}
			break;
		}
		case C_QP_STATE: {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
			struct ibv_qp_init_attr ia;

			rep.status = c.a < NQP && s.qp[c.a] ?
					     ibv_query_qp(s.qp[c.a], &a,
							  IBV_QP_STATE, &ia) :
					     ENODEV;
			rep.v = a.qp_state;
			break;
		}
		case C_ASYNC: {
			double end = now() + s.wait;
			int t;

			while ((t = find_event(&s, (int)c.a, (int)c.b)) < 0 &&
			       now() < end)
				drain_async(&s, 100);
			/* Events after the first: a little longer. */
			drain_async(&s, 50);
			t = find_event(&s, (int)c.a, (int)c.b);
			rep.status = t < 0 ? ETIMEDOUT : 0;
			rep.v = (uint64_t)(int64_t)t;
			break;
		}
		case C_UD_REPLY:
			ud_reply(&s, (uint32_t)c.b, &rep);
			break;
		case C_DONE:
			tool_write_all(s.fd, &rep, sizeof(rep));
			goto done;
		default:
			tool_fail("unknown command %u", c.op);
		}
		tool_write_all(s.fd, &rep, sizeof(rep));
	}
done:
	drain_async(&s, 0);
	for (int i = 0; i < NQP; i++)
		if (s.qp[i] && ibv_destroy_qp(s.qp[i]))
			tool_fail("destroy_qp %s", qp_names[i]);
	if ((s.srq && ibv_destroy_srq(s.srq)) || ibv_destroy_cq(s.scq) ||
	    ibv_destroy_cq(s.rcq) || ibv_dereg_mr(s.mr) ||
	    ibv_dereg_mr(s.nw_mr) || ibv_dealloc_pd(s.pd) ||
	    ibv_close_device(s.ctx))
		tool_fail("teardown: %s", strerror(errno));
	printf("mrce_verbs_conformance: server done\n");
	return 0;
}

/* ------------------------------------------------------------ client */

static char reason[512];
static int ncases, nfailed;

static int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return 1;
}

#define FAIL(...) return failf(__VA_ARGS__)

static struct reply call(struct side *s, uint32_t op, uint32_t a, uint64_t b,
			 uint64_t c)
{
	struct cmd cmd = { .op = op, .a = a, .b = b, .c = c };
	struct reply r;

	tool_write_all(s->fd, &cmd, sizeof(cmd));
	tool_read_all(s->fd, &r, sizeof(r));
	return r;
}

/* Waits (at most ms, or the -w wait when 0) for n receives on the server. */
static int wait_recv_ms(struct side *s, uint32_t n, struct rec *recs, uint64_t ms)
{
	struct cmd cmd = { .op = C_WAIT_RECV, .b = n, .c = ms };
	struct reply r;

	tool_write_all(s->fd, &cmd, sizeof(cmd));
	tool_read_all(s->fd, &r, sizeof(r));
	tool_read_all(s->fd, recs, r.n * sizeof(*recs));
	return (int)r.n;
}

static int wait_recv(struct side *s, uint32_t n, struct rec *recs)
{
	struct cmd cmd = { .op = C_WAIT_RECV, .b = n };
	struct reply r;

	tool_write_all(s->fd, &cmd, sizeof(cmd));
	tool_read_all(s->fd, &r, sizeof(r));
	tool_read_all(s->fd, recs, r.n * sizeof(*recs));
	return (int)r.n;
}

/* Polls `cq` for `n` completions for at most `secs` seconds. */
static int poll_for(struct ibv_cq *cq, int n, struct ibv_wc *wc, double secs)
{
	double end = now() + secs;
	int got = 0;

	while (got < n && now() < end) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		if (k < 0)
			return got;
		got += k;
	}
	return got;
}

/* Polls `cq` for `n` completions (or until the wait runs out). */
static int poll_n(struct side *s, struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return poll_for(cq, n, wc, s->wait);
}

/*
 * The server's bytes at [off, off+len) must be `expect`, and the GUARD
 * bytes either side still canaries.
 */
static int check_remote(struct side *s, uint64_t off, const uint8_t *expect,
			uint32_t len, const char *what)
{
	struct reply r = call(s, C_CRC, 0, off, len);
	uint32_t want = tool_crc32(expect, len);

	if ((uint32_t)r.v != want)
		FAIL("%s: crc 0x%08x at +%llu len %u, expected 0x%08x", what,
		     (uint32_t)r.v, (unsigned long long)off, len, want);
	r = call(s, C_DAMAGE, 0, off - GUARD, GUARD);
	if (r.v)
		FAIL("%s: %llu canary bytes damaged before the target", what,
		     (unsigned long long)r.v);
	r = call(s, C_DAMAGE, 0, off + len, GUARD);
	if (r.v)
		FAIL("%s: %llu canary bytes damaged after the target", what,
		     (unsigned long long)r.v);
	return 0;
}

static int need(struct side *s, int i)
{
	if (!s->qp[i])
		FAIL("QP %s unavailable: %s", qp_names[i], s->why[i]);
	return 0;
}

static int send_wrs(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret = ibv_post_send(qp, wr, &bad);

	if (ret)
		return failf("ibv_post_send: %s (bad_wr %llu)", strerror(ret),
			     bad ? (unsigned long long)bad->wr_id : 0ull);
	return 0;
}

static int expect_wc(const struct ibv_wc *wc, uint64_t wr_id,
		     enum ibv_wc_status st, enum ibv_wc_opcode op, bool check_op)
{
	if (wc->wr_id != wr_id || wc->status != st ||
	    (check_op && wc->status == IBV_WC_SUCCESS && wc->opcode != op))
		FAIL("completion wr_id %llu status %s opcode %d, expected wr_id %llu %s opcode %d",
		     (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
		     wc->opcode, (unsigned long long)wr_id,
		     ibv_wc_status_str(st), op);
	return 0;
}

#define L(off) ((uintptr_t)s->buf + (off))
#define R(off) (s->peer.buf + (off))

/* SEND with a 3-SGE gather list, SEND_WITH_IMM inline, zero-length SEND. */
static int case_send(struct side *s)
{
	uint8_t *src = s->buf;
	struct ibv_sge g[3] = {
		{ L(0), 300, s->mr->lkey },
		{ L(1000), 500, s->mr->lkey },
		{ L(2000), 200, s->mr->lkey },
	};
	struct ibv_sge in = { L(3000), 60, s->mr->lkey };
	struct ibv_send_wr w[3] = {
		{ .wr_id = 1, .next = &w[1], .sg_list = g, .num_sge = 3,
		  .opcode = IBV_WR_SEND },
		{ .wr_id = 2, .next = &w[2], .sg_list = &in, .num_sge = 1,
		  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htonl(0xc0ffee),
		  .send_flags = IBV_SEND_INLINE },
		{ .wr_id = 3, .num_sge = 0, .opcode = IBV_WR_SEND,
		  .send_flags = IBV_SEND_SIGNALED },
	};
	uint8_t expect[1000];
	struct rec r[3];
	struct ibv_wc wc;
	struct reply rep;

	if (need(s, Q_SEND))
		return 1;
	fill(src, 3100, 11);
	memcpy(expect, src, 300);
	memcpy(expect + 300, src + 1000, 500);
	memcpy(expect + 800, src + 2000, 200);
	rep = call(s, C_POST_RECV, Q_SEND, 3, 4096);
	if (rep.status)
		FAIL("server post_recv: %s", strerror(rep.status));
	if (send_wrs(s->qp[Q_SEND], w))
		return 1;
	/* Only the last is signaled: one completion covers all three. */
	if (poll_n(s, s->scq, 1, &wc) != 1)
		FAIL("no send completion");
	if (expect_wc(&wc, 3, IBV_WC_SUCCESS, IBV_WC_SEND, true))
		return 1;
	if (wait_recv(s, 3, r) != 3)
		FAIL("server got fewer than 3 receives");
	if (r[0].status || r[0].opcode != IBV_WC_RECV || r[0].byte_len != 1000 ||
	    (r[0].flags & IBV_WC_WITH_IMM) || r[0].crc != tool_crc32(expect, 1000))
		FAIL("gathered SEND: status %u opcode %u len %u flags 0x%x crc 0x%08x",
		     r[0].status, r[0].opcode, r[0].byte_len, r[0].flags,
		     r[0].crc);
	if (r[1].status || r[1].byte_len != 60 ||
	    !(r[1].flags & IBV_WC_WITH_IMM) || r[1].imm != 0xc0ffee ||
	    r[1].crc != tool_crc32(src + 3000, 60))
		FAIL("inline SEND_WITH_IMM: status %u len %u flags 0x%x imm 0x%x",
		     r[1].status, r[1].byte_len, r[1].flags, r[1].imm);
	if (r[2].status || r[2].byte_len != 0)
		FAIL("zero-length SEND: status %u len %u", r[2].status,
		     r[2].byte_len);
	if (r[0].qp_num != s->peer.qpn[Q_SEND])
		FAIL("receive qp_num %u, expected %u", r[0].qp_num,
		     s->peer.qpn[Q_SEND]);
	snprintf(reason, sizeof(reason), "3-SGE gather to 2-SGE scatter, inline+imm, zero-length");
	return 0;
}

/* WRITE with an SGE list, inline WRITE, 32 WRITEs with every 8th signaled. */
static int case_write(struct side *s)
{
	struct ibv_sge g[2] = { { L(0), 3000, s->mr->lkey },
				{ L(5000), 1096, s->mr->lkey } };
	struct ibv_sge in = { L(9000), 48, s->mr->lkey };
	struct ibv_send_wr w[2] = {
		{ .wr_id = 10, .next = &w[1], .sg_list = g, .num_sge = 2,
		  .opcode = IBV_WR_RDMA_WRITE },
		{ .wr_id = 11, .sg_list = &in, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE,
		  .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED },
	};
	uint8_t expect[4096];
	struct ibv_wc wc[8];
	int n;

	if (need(s, Q_WRITE))
		return 1;
	call(s, C_RESET, 0, 0, 0);
	fill(s->buf, 10000, 22);
	memcpy(expect, s->buf, 3000);
	memcpy(expect + 3000, s->buf + 5000, 1096);
	w[0].wr.rdma.remote_addr = R(4096);
	w[0].wr.rdma.rkey = s->peer.rkey;
	w[1].wr.rdma.remote_addr = R(20000);
	w[1].wr.rdma.rkey = s->peer.rkey;
	if (send_wrs(s->qp[Q_WRITE], w))
		return 1;
	if (poll_n(s, s->scq, 1, wc) != 1 ||
	    expect_wc(wc, 11, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, true))
		return reason[0] ? 1 : failf("no completion for the WRITEs");
	if (check_remote(s, 4096, expect, 4096, "gathered WRITE") ||
	    check_remote(s, 20000, s->buf + 9000, 48, "inline WRITE"))
		return 1;

	/* 32 WRITEs of 1 KiB, one WR each, every 8th signaled. */
	fill(s->buf + 65536, 32 * 1024, 23);
	for (int i = 0; i < 32; i++) {
		struct ibv_sge sg = { L(65536 + 1024 * (uint32_t)i), 1024,
				      s->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 100 + (uint64_t)i, .sg_list = &sg, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = i % 8 == 7 ? IBV_SEND_SIGNALED : 0,
		};

		wr.wr.rdma.remote_addr = R(65536 + 1024 * (uint32_t)i);
		wr.wr.rdma.rkey = s->peer.rkey;
		if (send_wrs(s->qp[Q_WRITE], &wr))
			return 1;
	}
	n = poll_n(s, s->scq, 4, wc);
	if (n != 4)
		FAIL("%d completions for 4 signaled of 32 WRITEs", n);
	for (int k = 0; k < 4; k++)
		if (expect_wc(&wc[k], 107 + 8 * (uint64_t)k, IBV_WC_SUCCESS,
			      IBV_WC_RDMA_WRITE, true))
			return 1;
	if (ibv_poll_cq(s->scq, 8, wc) != 0)
		FAIL("a completion for an unsignaled WRITE");
	if (check_remote(s, 65536, s->buf + 65536, 32 * 1024,
			 "32 WRITEs"))
		return 1;
	snprintf(reason, sizeof(reason), "2-SGE, inline, 4 of 32 signaled; canaries intact");
	return 0;
}

/* WRITE_WITH_IMM with data, and zero-length (as NCCL uses it). */
static int case_write_imm(struct side *s)
{
	struct ibv_sge g = { L(0), 2500, s->mr->lkey };
	struct ibv_send_wr w[2] = {
		{ .wr_id = 20, .next = &w[1], .sg_list = &g, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		  .imm_data = htonl(0x1234) },
		{ .wr_id = 21, .num_sge = 0,
		  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		  .imm_data = htonl(0x5678),
		  .send_flags = IBV_SEND_SIGNALED },
	};
	struct ibv_wc wc;
	struct rec r[2];
	struct reply rep;

	if (need(s, Q_WIMM))
		return 1;
	call(s, C_RESET, 0, 0, 0);
	fill(s->buf, 2500, 33);
	w[0].wr.rdma.remote_addr = R(8192);
	w[0].wr.rdma.rkey = s->peer.rkey;
	w[1].wr.rdma.remote_addr = R(0);
	w[1].wr.rdma.rkey = s->peer.rkey;
	rep = call(s, C_POST_RECV, Q_WIMM, 2, 4096);
	if (rep.status)
		FAIL("server post_recv: %s", strerror(rep.status));
	if (send_wrs(s->qp[Q_WIMM], w))
		return 1;
	if (poll_n(s, s->scq, 1, &wc) != 1 ||
	    expect_wc(&wc, 21, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, true))
		return reason[0] ? 1 : failf("no completion");
	if (wait_recv(s, 2, r) != 2)
		FAIL("server got fewer than 2 receive completions");
	for (int k = 0; k < 2; k++) {
		uint32_t imm = k ? 0x5678 : 0x1234, len = k ? 0 : 2500;

		if (r[k].status || r[k].opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
		    !(r[k].flags & IBV_WC_WITH_IMM) || r[k].imm != imm ||
		    r[k].byte_len != len)
			FAIL("WRITE_WITH_IMM %d: status %u opcode %u flags 0x%x imm 0x%x len %u",
			     k, r[k].status, r[k].opcode, r[k].flags, r[k].imm,
			     r[k].byte_len);
	}
	if (check_remote(s, 8192, s->buf, 2500, "WRITE_WITH_IMM data"))
		return 1;
	snprintf(reason, sizeof(reason), "2500 B and zero-length, immediates in order");
	return 0;
}

/* READ scattered into two local SGEs, with local canaries around them. */
static int case_read(struct side *s)
{
	uint8_t expect[6000];
	struct ibv_sge g[2] = { { L(10000), 2000, s->mr->lkey },
				{ L(20000), 4000, s->mr->lkey } };
	struct ibv_send_wr w = { .wr_id = 30, .sg_list = g, .num_sge = 2,
				 .opcode = IBV_WR_RDMA_READ,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	if (need(s, Q_READ))
		return 1;
	call(s, C_FILL, 44, 30000, 6000);
	fill(expect, 6000, 44);
	memset(s->buf + 10000 - GUARD, CANARY, 2000 + 2 * GUARD);
	memset(s->buf + 20000 - GUARD, CANARY, 4000 + 2 * GUARD);
	w.wr.rdma.remote_addr = R(30000);
	w.wr.rdma.rkey = s->peer.rkey;
	if (send_wrs(s->qp[Q_READ], &w))
		return 1;
	if (poll_n(s, s->scq, 1, &wc) != 1 ||
	    expect_wc(&wc, 30, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, true))
		return reason[0] ? 1 : failf("no READ completion");
	if (memcmp(s->buf + 10000, expect, 2000) ||
	    memcmp(s->buf + 20000, expect + 2000, 4000))
		FAIL("READ data differs from the server's pattern");
	if (damage(s->buf + 10000 - GUARD, GUARD) ||
	    damage(s->buf + 12000, GUARD) ||
	    damage(s->buf + 20000 - GUARD, GUARD) ||
	    damage(s->buf + 24000, GUARD))
		FAIL("READ wrote outside its SGEs");
	snprintf(reason, sizeof(reason), "6000 B into 2 SGEs; canaries intact");
	return 0;
}

static int post_atomic(struct side *s, struct ibv_qp *qp, uint64_t wr_id,
		       enum ibv_wr_opcode op, uint64_t res_off,
		       uint64_t remote_off, uint64_t cmp_add, uint64_t swap,
		       bool signaled)
{
	struct ibv_sge g = { L(res_off), 8, s->mr->lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &g, .num_sge = 1,
				 .opcode = op,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0 };

	w.wr.atomic.remote_addr = R(remote_off);
	w.wr.atomic.rkey = s->peer.rkey;
	w.wr.atomic.compare_add = cmp_add;
	w.wr.atomic.swap = swap;
	return send_wrs(qp, &w);
}

static int case_cmp_swp(struct side *s)
{
	uint64_t *res = (uint64_t *)(s->buf + 40000);
	struct ibv_wc wc[2];
	struct reply r;

	if (need(s, Q_CAS))
		return 1;
	call(s, C_RESET, 0, 0, 0);
	call(s, C_SET64, 0, 50000, 0x1111222233334444ull);
	res[0] = res[1] = 0;
	/* Matching compare: swapped; not matching: unchanged. */
	if (post_atomic(s, s->qp[Q_CAS], 40, IBV_WR_ATOMIC_CMP_AND_SWP, 40000,
			50000, 0x1111222233334444ull, 0xaaaabbbbccccddddull,
			true) ||
	    post_atomic(s, s->qp[Q_CAS], 41, IBV_WR_ATOMIC_CMP_AND_SWP, 40008,
			50000, 0x1111222233334444ull, 0x5555ull, true))
		return 1;
	if (poll_n(s, s->scq, 2, wc) != 2)
		FAIL("fewer than 2 CMP_SWP completions");
	if (expect_wc(&wc[0], 40, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, true) ||
	    expect_wc(&wc[1], 41, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, true))
		return 1;
	if (res[0] != 0x1111222233334444ull || res[1] != 0xaaaabbbbccccddddull)
		FAIL("old values 0x%llx 0x%llx", (unsigned long long)res[0],
		     (unsigned long long)res[1]);
	r = call(s, C_GET64, 0, 50000, 0);
	if (r.v != 0xaaaabbbbccccddddull)
		FAIL("remote value 0x%llx after CMP_SWP",
		     (unsigned long long)r.v);
	if (call(s, C_DAMAGE, 0, 50000 - GUARD, GUARD).v ||
	    call(s, C_DAMAGE, 0, 50008, GUARD).v)
		FAIL("CMP_SWP wrote outside its 8 bytes");
	snprintf(reason, sizeof(reason), "swap on match, no swap on mismatch; old values right");
	return 0;
}

/*
 * Many FETCH_ADDs on one counter, up to 16 outstanding: on one QP they
 * execute in order, so op i must return init + the adds before it; one
 * executed twice (a retransmission applied again) shifts every later value.
 */
static int case_fetch_add(struct side *s, uint32_t nops)
{
	const uint64_t init = 1000000;
	uint64_t *res = (uint64_t *)(s->buf + RES_BASE), sum = 0;
	uint32_t posted = 0, done = 0;
	struct ibv_wc wc[16];
	struct reply r;

	if (need(s, Q_FADD))
		return 1;
	if (nops > MAX_FADD)
		nops = MAX_FADD;
	call(s, C_SET64, 0, 60000, init);
	memset(res, 0, (size_t)nops * 8);
	while (done < nops) {
		while (posted < nops && posted - done < 16) {
			if (post_atomic(s, s->qp[Q_FADD], posted,
					IBV_WR_ATOMIC_FETCH_AND_ADD,
					RES_BASE + 8ull * posted, 60000,
					posted % 7 + 1, 0, true))
				return 1;
			posted++;
		}
		int n = poll_n(s, s->scq, 1, wc);

		if (n != 1)
			FAIL("FETCH_ADD %u: no completion", done);
		if (expect_wc(wc, done, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, true))
			return 1;
		done++;
	}
	for (uint32_t i = 0; i < nops; i++) {
		if (res[i] != init + sum)
			FAIL("FETCH_ADD %u returned %llu, expected %llu", i,
			     (unsigned long long)res[i],
			     (unsigned long long)(init + sum));
		sum += i % 7 + 1;
	}
	r = call(s, C_GET64, 0, 60000, 0);
	if (r.v != init + sum)
		FAIL("counter %llu after %u adds, expected %llu",
		     (unsigned long long)r.v, nops,
		     (unsigned long long)(init + sum));
	snprintf(reason, sizeof(reason), "%u ops, each applied exactly once", nops);
	return 0;
}

/*
 * WRITE X, READ it back, then a fenced WRITE Y to the same place: the
 * fence holds Y until the READ completed, so the READ returns X.
 */
static int case_fence(struct side *s)
{
	const uint32_t len = 8192;
	struct ibv_sge gx = { L(100000), len, s->mr->lkey };
	struct ibv_sge gr = { L(120000), len, s->mr->lkey };
	struct ibv_sge gy = { L(140000), len, s->mr->lkey };
	struct ibv_send_wr w[3] = {
		{ .wr_id = 50, .next = &w[1], .sg_list = &gx, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE },
		{ .wr_id = 51, .next = &w[2], .sg_list = &gr, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_READ },
		{ .wr_id = 52, .sg_list = &gy, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE,
		  .send_flags = IBV_SEND_FENCE | IBV_SEND_SIGNALED },
	};
	struct ibv_wc wc;

	if (need(s, Q_FENCE))
		return 1;
	call(s, C_RESET, 0, 0, 0);
	fill(s->buf + 100000, len, 55);
	fill(s->buf + 140000, len, 66);
	memset(s->buf + 120000, 0, len);
	for (int k = 0; k < 3; k++) {
		w[k].wr.rdma.remote_addr = R(200000);
		w[k].wr.rdma.rkey = s->peer.rkey;
	}
	if (send_wrs(s->qp[Q_FENCE], w))
		return 1;
	if (poll_n(s, s->scq, 1, &wc) != 1 ||
	    expect_wc(&wc, 52, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, true))
		return reason[0] ? 1 : failf("no completion");
	if (memcmp(s->buf + 120000, s->buf + 100000, len))
		FAIL("the READ before the fenced WRITE saw other data");
	if (check_remote(s, 200000, s->buf + 140000, len, "fenced WRITE"))
		return 1;
	snprintf(reason, sizeof(reason), "READ before a fenced WRITE returned the older data");
	return 0;
}

/* The ibv_wr_* API on a QP from ibv_create_qp_ex, polled with cq_ex. */
static int case_wr_api(struct side *s)
{
	struct ibv_qp_ex *x = s->qpx;
	struct ibv_cq_ex *cq = s->xcq;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_sge sl[2] = { { L(300000), 1000, s->mr->lkey },
				 { L(302000), 3000, s->mr->lkey } };
	uint64_t *old = (uint64_t *)(s->buf + 310000);
	char msg[] = "inline data through ibv_wr_set_inline_data";
	static const enum ibv_wc_opcode ops[4] = {
		IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_FETCH_ADD,
		IBV_WC_RDMA_READ,
	};
	static const uint32_t lens[4] = { 0, 0, 8, 4000 };
	struct rec r;
	struct reply rep;
	double end;
	int ret, n = 0;

	if (need(s, Q_EX))
		return 1;
	call(s, C_RESET, 0, 0, 0);
	call(s, C_SET64, 0, 320000, 7);
	fill(s->buf + 300000, 1000, 77);
	fill(s->buf + 302000, 3000, 78);
	memset(s->buf + 330000, 0, 4000);
	*old = 0;
	rep = call(s, C_POST_RECV, Q_EX, 1, 4096);
	if (rep.status)
		FAIL("server post_recv: %s", strerror(rep.status));

	/* An opcode left out of send_ops_flags is refused, nothing posted. */
	ibv_wr_start(x);
	x->wr_id = 59;
	ibv_wr_rdma_write_imm(x, s->peer.rkey, R(0), htonl(1));
	ibv_wr_set_sge(x, s->mr->lkey, L(300000), 8);
	ret = ibv_wr_complete(x);
	if (ret != EINVAL)
		FAIL("wr_rdma_write_imm outside send_ops_flags: %d, expected EINVAL",
		     ret);

	ibv_wr_start(x);
	x->wr_id = 60;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, s->peer.rkey, R(330000));
	ibv_wr_set_sge_list(x, 2, sl);
	x->wr_id = 61;
	ibv_wr_send_imm(x, htonl(0xbeef));
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	x->wr_id = 62;
	ibv_wr_atomic_fetch_add(x, s->peer.rkey, R(320000), 5);
	ibv_wr_set_sge(x, s->mr->lkey, L(310000), 8);
	x->wr_id = 63;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_rdma_read(x, s->peer.rkey, R(331000));
	ibv_wr_set_sge(x, s->mr->lkey, L(340000), 4000);
	ret = ibv_wr_complete(x);
	if (ret)
		FAIL("ibv_wr_complete: %s", strerror(ret));

	end = now() + s->wait;
	while (n < 4 && now() < end) {
		ret = ibv_start_poll(cq, &pa);
		if (ret == ENOENT)
			continue;
		if (ret)
			FAIL("ibv_start_poll: %s", strerror(ret));
		do {
			if (n < 4 &&
			    (cq->wr_id != 60 + (uint64_t)n ||
			     cq->status != IBV_WC_SUCCESS ||
			     ibv_wc_read_opcode(cq) != ops[n] ||
			     (lens[n] && ibv_wc_read_byte_len(cq) != lens[n]) ||
			     ibv_wc_read_qp_num(cq) != s->qp[Q_EX]->qp_num)) {
				uint64_t id = cq->wr_id;
				int st = cq->status;

				ibv_end_poll(cq);
				FAIL("cq_ex entry %d: wr_id %llu status %s opcode %d",
				     n, (unsigned long long)id,
				     ibv_wc_status_str(st), ops[n]);
			}
			n++;
		} while (ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	if (n != 4)
		FAIL("%d of 4 completions from cq_ex", n);
	if (*old != 7 || call(s, C_GET64, 0, 320000, 0).v != 12)
		FAIL("wr_atomic_fetch_add: old %llu", (unsigned long long)*old);
	{
		uint8_t expect[4000];

		memcpy(expect, s->buf + 300000, 1000);
		memcpy(expect + 1000, s->buf + 302000, 3000);
		if (check_remote(s, 330000, expect, 4000, "wr_rdma_write"))
			return 1;
		/* READ of 4000 at +331000: 3000 written bytes, 1000 canaries */
		if (memcmp(s->buf + 340000, expect + 1000, 3000) ||
		    damage(s->buf + 343000, 1000) != 0)
			FAIL("wr_rdma_read data differs");
	}
	if (wait_recv(s, 1, &r) != 1 || r.status ||
	    !(r.flags & IBV_WC_WITH_IMM) || r.imm != 0xbeef ||
	    r.byte_len != sizeof(msg) ||
	    r.crc != tool_crc32((const uint8_t *)msg, sizeof(msg)))
		FAIL("wr_send_imm inline: server receive wrong");
	snprintf(reason, sizeof(reason), "write+send_imm inline+fetch_add+fenced read in one batch; start/next/end_poll");
	return 0;
}

/* SRQ shared by two QPs, with the limit event. */
static int case_srq(struct side *s)
{
	struct rec r[12];
	struct reply rep;
	int n;

	if (need(s, Q_SRQ1) || need(s, Q_SRQ2))
		return 1;
	rep = call(s, C_POST_RECV, NQP, 16, 100);
	if (rep.status)
		FAIL("server post_srq_recv: %s", strerror(rep.status));
	rep = call(s, C_SRQ_ARM, 0, 8, 0);
	if (rep.status)
		FAIL("ibv_modify_srq(IBV_SRQ_LIMIT 8): %s",
		     strerror(rep.status));
	rep = call(s, C_SRQ_QUERY, 0, 0, 0);
	if (rep.status || rep.v != 8 || rep.a < 16)
		FAIL("ibv_query_srq: %s limit %llu max_wr %u",
		     strerror(rep.status), (unsigned long long)rep.v, rep.a);
	fill(s->buf, 12 * 100, 88);
	for (int i = 0; i < 12; i++) {
		struct ibv_sge g = { L(100 * (uint32_t)i), 50 + (uint32_t)i,
				     s->mr->lkey };
		struct ibv_send_wr w = { .wr_id = 70 + (uint64_t)i,
					 .sg_list = &g, .num_sge = 1,
					 .opcode = IBV_WR_SEND_WITH_IMM,
					 .imm_data = htonl((uint32_t)i),
					 .send_flags = IBV_SEND_SIGNALED };
		struct ibv_wc wc;

		if (send_wrs(s->qp[i % 2 ? Q_SRQ2 : Q_SRQ1], &w))
			return 1;
		/* One at a time, so the order of arrival is known. */
		if (poll_n(s, s->scq, 1, &wc) != 1 ||
		    expect_wc(&wc, 70 + (uint64_t)i, IBV_WC_SUCCESS,
			      IBV_WC_SEND, true))
			return reason[0] ? 1 : failf("no completion for SEND %d", i);
	}
	n = wait_recv(s, 12, r);
	if (n != 12)
		FAIL("%d of 12 receives from the SRQ", n);
	for (int i = 0; i < 12; i++) {
		uint32_t qpn = s->peer.qpn[i % 2 ? Q_SRQ2 : Q_SRQ1];

		if (r[i].status || r[i].imm != (uint32_t)i ||
		    r[i].byte_len != 50 + (uint32_t)i || r[i].qp_num != qpn ||
		    r[i].crc != tool_crc32(s->buf + 100 * i, 50 + (uint32_t)i))
			FAIL("SRQ receive %d: status %u imm %u len %u qp %u (want %u)",
			     i, r[i].status, r[i].imm, r[i].byte_len,
			     r[i].qp_num, qpn);
	}
	rep = call(s, C_ASYNC, 2, 0, 0);
	if (rep.status || rep.v != IBV_EVENT_SRQ_LIMIT_REACHED)
		FAIL("no IBV_EVENT_SRQ_LIMIT_REACHED (got %lld)",
		     (long long)rep.v);
	rep = call(s, C_SRQ_QUERY, 0, 0, 0);
	if (rep.status || rep.v != 0)
		FAIL("srq_limit %llu after the event, expected 0 (disarmed)",
		     (unsigned long long)rep.v);
	snprintf(reason, sizeof(reason), "12 receives over 2 QPs, SRQ_LIMIT_REACHED at 4 < 8");
	return 0;
}

/* UD on a lossy link: how long a datagram may take, how often it is sent. */
#define UD_WAIT_MS 1000
#define UD_TRIES 10

/* A receive of datagram j < i (its size tells), late after a resend. */
static bool ud_earlier_copy(const struct rec *r, const uint32_t *sizes, int i)
{
	for (int j = 0; j < i; j++)
		if (r->byte_len == GRH_LEN + sizes[j])
			return true;
	return false;
}

/*
 * UD: AH from the server's GID, GRH checked there; its answer comes back.
 * Datagrams lost on a lossy link are sent again (UD_TRIES at most).
 */
static int case_ud(struct side *s)
{
	int ud_resends = 0;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = IB_PORT,
				  .grh = { .hop_limit = 64, .sgid_index = 0 } };
	uint32_t sizes[3] = { 1, 200, 1000 };
	struct ibv_ah *ah;
	struct rec r[3];
	struct reply rep;
	struct ibv_wc wc;
	uint8_t *rx = s->buf + 400000;

	if (need(s, Q_UD))
		return 1;
	memcpy(aa.grh.dgid.raw, s->peer.gid, 16);
	ah = ibv_create_ah(s->pd, &aa);
	if (!ah)
		FAIL("ibv_create_ah: %s", strerror(errno));
	rep = call(s, C_POST_RECV, Q_UD, 3, GRH_LEN + UD_MSG_MAX);
	if (rep.status)
		FAIL("server post_recv (UD): %s", strerror(rep.status));
	fill(s->buf, 3000, 99);
	for (int i = 0; i < 3; i++) {
		struct ibv_sge g = { L(1000 * (uint32_t)i), sizes[i],
				     s->mr->lkey };
		struct ibv_send_wr w = { .wr_id = 80 + (uint64_t)i,
					 .sg_list = &g, .num_sge = 1,
					 .opcode = i == 1 ? IBV_WR_SEND_WITH_IMM :
							    IBV_WR_SEND,
					 .imm_data = htonl(0xd00d),
					 .send_flags = IBV_SEND_SIGNALED };
		int got = 0;

		w.wr.ud.ah = ah;
		w.wr.ud.remote_qpn = s->peer.qpn[Q_UD];
		w.wr.ud.remote_qkey = QKEY;
		/*
		 * UD promises no delivery: on a lossy link a datagram that
		 * does not arrive within UD_WAIT_MS is sent again (UD_TRIES
		 * times at most). A late copy of an earlier datagram (known
		 * by its size) used a receive: post another, keep waiting.
		 */
		for (int t = 0; !got && t < UD_TRIES; t++) {
			if (t)
				ud_resends++;
			if (send_wrs(s->qp[Q_UD], &w) || poll_n(s, s->scq, 1, &wc) != 1 ||
			    expect_wc(&wc, 80 + (uint64_t)i, IBV_WC_SUCCESS,
				      IBV_WC_SEND, true)) {
				ibv_destroy_ah(ah);
				return reason[0] ? 1 : failf("no UD send completion");
			}
			while (wait_recv_ms(s, 1, &r[i], UD_WAIT_MS) == 1) {
				if (!ud_earlier_copy(&r[i], sizes, i)) {
					got = 1;
					break;
				}
				rep = call(s, C_POST_RECV, Q_UD, 1, GRH_LEN + UD_MSG_MAX);
				if (rep.status)
					FAIL("server post_recv (UD): %s", strerror(rep.status));
			}
		}
		if (!got) {
			ibv_destroy_ah(ah);
			FAIL("UD datagram %d not received in %d tries", i, UD_TRIES);
		}
	}
	ibv_destroy_ah(ah);
	for (int i = 0; i < 3; i++)
		if (r[i].status || r[i].byte_len != GRH_LEN + sizes[i] ||
		    !r[i].grh_ok || r[i].src_qp != s->qp[Q_UD]->qp_num ||
		    r[i].crc != tool_crc32(s->buf + 1000 * i, sizes[i]) ||
		    (i == 1) != !!(r[i].flags & IBV_WC_WITH_IMM) ||
		    (i == 1 && r[i].imm != 0xd00d))
			FAIL("UD receive %d: status %u len %u grh_ok %u src_qp %u flags 0x%x",
			     i, r[i].status, r[i].byte_len, r[i].grh_ok,
			     r[i].src_qp, r[i].flags);
	/* The server answers with an AH made by ibv_create_ah_from_wc. */
	{
		struct ibv_sge g = { (uintptr_t)rx, GRH_LEN + 600,
				     s->mr->lkey };
		struct ibv_recv_wr w = { .wr_id = 90, .sg_list = &g,
					 .num_sge = 1 },
				   *bad;
		int ret = ibv_post_recv(s->qp[Q_UD], &w, &bad);

		if (ret)
			FAIL("post_recv (UD): %s", strerror(ret));
	}
	/* The reply is a datagram too: asked for again while it does not come. */
	for (int t = 0, got = 0; !got; t++) {
		if (t == UD_TRIES)
			FAIL("no UD reply in %d tries", UD_TRIES);
		if (t)
			ud_resends++;
		rep = call(s, C_UD_REPLY, 0, 600, 0);
		if (rep.status)
			FAIL("server reply via ibv_create_ah_from_wc: %s",
			     strerror(rep.status));
		got = poll_for(s->rcq, 1, &wc, UD_WAIT_MS / 1000.0) == 1;
	}
	if (wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != GRH_LEN + 600 || !(wc.wc_flags & IBV_WC_GRH) ||
	    wc.src_qp != s->peer.qpn[Q_UD] ||
	    tool_crc32(rx + GRH_LEN, 600) != (uint32_t)rep.v)
		FAIL("reply: status %s len %u src_qp %u",
		     ibv_wc_status_str(wc.status), wc.byte_len, wc.src_qp);
	if (ud_resends) {
		snprintf(reason, sizeof(reason),
			 "1/200/1000 B (+imm), GRH checked, reply via create_ah_from_wc; %d datagrams sent again after loss",
			 ud_resends);
		return 0;
	}
	snprintf(reason, sizeof(reason), "1/200/1000 B (+imm), GRH checked, reply via create_ah_from_wc");
	return 0;
}

/*
 * A remote access violation: the failing WR completes with
 * IBV_WC_REM_ACCESS_ERR, the two after it with IBV_WC_WR_FLUSH_ERR, the QP
 * is in ERR (ibv_query_qp), nothing landed, and the server's QP reports an
 * access (or fatal) async event.
 */
static int access_case(struct side *s, int qi, uint64_t raddr, uint32_t rkey,
		       uint32_t len, bool nw_target, const char *what)
{
	struct ibv_sge g = { L(500000), len, s->mr->lkey };
	struct ibv_sge g2 = { L(500000), 64, s->mr->lkey };
	struct ibv_send_wr w[3] = {
		{ .wr_id = 1, .next = &w[1], .sg_list = &g, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
		{ .wr_id = 2, .next = &w[2], .sg_list = &g2, .num_sge = 1,
		  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
		{ .wr_id = 3, .sg_list = &g2, .num_sge = 1,
		  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
	};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc[3];
	struct reply rep;
	int n;

	if (need(s, qi))
		return 1;
	call(s, C_RESET, 0, 0, 0);
	fill(s->buf + 500000, len, 123);
	w[0].wr.rdma.remote_addr = raddr;
	w[0].wr.rdma.rkey = rkey;
	w[1].wr.rdma.remote_addr = R(250000);
	w[1].wr.rdma.rkey = s->peer.rkey;
	if (send_wrs(s->qp[qi], w))
		return 1;
	n = poll_n(s, s->scq, 3, wc);
	if (n != 3)
		FAIL("%s: %d of 3 completions", what, n);
	if (expect_wc(&wc[0], 1, IBV_WC_REM_ACCESS_ERR, 0, false) ||
	    expect_wc(&wc[1], 2, IBV_WC_WR_FLUSH_ERR, 0, false) ||
	    expect_wc(&wc[2], 3, IBV_WC_WR_FLUSH_ERR, 0, false))
		return 1;
	if (ibv_query_qp(s->qp[qi], &qa, IBV_QP_STATE, &qia) ||
	    qa.qp_state != IBV_QPS_ERR)
		FAIL("%s: QP state %d after the error, expected ERR", what,
		     qa.qp_state);
	/*
	 * The refused WRITE never lands. The WRITE after it completes flushed, but
	 * MetaRoCE places packets out of order (transport spec 8a): when its packets
	 * reached the responder before the refused one's, it was placed before the
	 * refusal. Only its neighbourhood must be intact.
	 */
	if (call(s, C_DAMAGE, 0, 250000 - GUARD, GUARD).v ||
	    call(s, C_DAMAGE, 0, 250000 + 64, GUARD).v)
		FAIL("%s: bytes around the flushed WRITE's target changed", what);
	if (nw_target) {
		uint8_t canaries[NW_SIZE];

		memset(canaries, CANARY, sizeof(canaries));
		if ((uint32_t)call(s, C_NW_CRC, 0, 0, NW_SIZE).v !=
		    tool_crc32(canaries, NW_SIZE))
			FAIL("%s: the refused WRITE landed", what);
	} else if (call(s, C_DAMAGE, 0, 0, 250000).v ||
		   call(s, C_DAMAGE, 0, 250000 + 64, RECV_BASE - 250000 - 64).v ||
		   call(s, C_DAMAGE, 0, BUF_SIZE - 256, 256).v) {
		/* Everything but the flushed WRITE's 64 bytes (see above). */
		FAIL("%s: the refused WRITE landed", what);
	}
	rep = call(s, C_ASYNC, 1, (uint64_t)qi, 0);
	if (rep.status || (rep.v != IBV_EVENT_QP_ACCESS_ERR &&
			   rep.v != IBV_EVENT_QP_FATAL &&
			   rep.v != IBV_EVENT_QP_REQ_ERR))
		FAIL("%s: the server's QP reported no access/fatal async event (%lld)",
		     what, (long long)(int64_t)rep.v);
	snprintf(reason, sizeof(reason),
		 "REM_ACCESS_ERR then 2 x WR_FLUSH_ERR, QP in ERR, nothing landed, server got %s",
		 ibv_event_type_str((enum ibv_event_type)rep.v));
	return 0;
}

static int case_err_rkey(struct side *s)
{
	return access_case(s, Q_E_RKEY, R(1024), s->peer.rkey ^ 0x5a5a00,
			   256, false, "bad rkey");
}

static int case_err_bounds(struct side *s)
{
	/* 64 bytes starting 32 before the end of the server's MR. */
	return access_case(s, Q_E_BOUNDS, R(BUF_SIZE - 32), s->peer.rkey, 64,
			   false, "out of bounds");
}

static int case_err_access(struct side *s)
{
	return access_case(s, Q_E_ACCESS, s->peer.nw + 128, s->peer.nw_rkey,
			   256, true, "MR without REMOTE_WRITE");
}

/* rnr_retry 1 and no receive posted at the server: RNR_RETRY_EXC_ERR. */
static int case_err_rnr(struct side *s)
{
	struct ibv_sge g = { L(0), 64, s->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 9, .sg_list = &g, .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;

	if (need(s, Q_E_RNR))
		return 1;
	if (send_wrs(s->qp[Q_E_RNR], &w))
		return 1;
	if (poll_n(s, s->scq, 1, &wc) != 1)
		FAIL("no completion for a SEND nobody can receive");
	if (expect_wc(&wc, 9, IBV_WC_RNR_RETRY_EXC_ERR, 0, false))
		return 1;
	if (ibv_query_qp(s->qp[Q_E_RNR], &qa, IBV_QP_STATE, &qia) ||
	    qa.qp_state != IBV_QPS_ERR)
		FAIL("QP state %d after RNR retry exhaustion, expected ERR",
		     qa.qp_state);
	snprintf(reason, sizeof(reason), "rnr_retry 1: IBV_WC_RNR_RETRY_EXC_ERR, QP ERR");
	return 0;
}

static void run_case(const char *name, int (*fn)(struct side *), struct side *s)
{
	struct ibv_wc wc[16];

	/* What an earlier case left behind is not this case's. */
	while (ibv_poll_cq(s->scq, 16, wc) > 0 || ibv_poll_cq(s->rcq, 16, wc) > 0)
		;
	reason[0] = '\0';
	ncases++;
	if (fn(s)) {
		nfailed++;
		printf("CASE %s: FAIL %s\n", name, reason);
	} else {
		printf("CASE %s: PASS %s\n", name, reason);
	}
	fflush(stdout);
}

static uint32_t g_fadd_ops;

static int case_fetch_add_n(struct side *s)
{
	return case_fetch_add(s, g_fadd_ops);
}

static int run_client(const struct opts *o)
{
	struct side s = { 0 };
	int flags;

	g_fadd_ops = o->fadd_ops;
	setup(&s, o, false);
	s.fd = tool_tcp_connect(o->host, o->port);
	exchange_and_connect(&s, false);

	run_case("send_sge_inline_imm_zero", case_send, &s);
	run_case("write_sge_inline_unsignaled", case_write, &s);
	run_case("write_imm_incl_zero_length", case_write_imm, &s);
	run_case("read_scatter", case_read, &s);
	run_case("atomic_cmp_swp", case_cmp_swp, &s);
	run_case("atomic_fetch_add_exactly_once", case_fetch_add_n, &s);
	run_case("fence_read_before_write", case_fence, &s);
	run_case("wr_api_cq_ex", case_wr_api, &s);
	run_case("srq_limit_event", case_srq, &s);
	run_case("ud_send_recv_grh", case_ud, &s);
	run_case("err_bad_rkey", case_err_rkey, &s);
	run_case("err_out_of_bounds", case_err_bounds, &s);
	run_case("err_no_remote_write", case_err_access, &s);
	run_case("err_rnr_retry_exceeded", case_err_rnr, &s);

	call(&s, C_DONE, 0, 0, 0);
	/* Our own async events (e.g. QP_FATAL on the failed QPs): ack them. */
	flags = fcntl(s.ctx->async_fd, F_GETFL);
	fcntl(s.ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	for (;;) {
		struct ibv_async_event ev;

		if (ibv_get_async_event(s.ctx, &ev))
			break;
		ibv_ack_async_event(&ev);
	}
	for (int i = 0; i < NQP; i++)
		if (s.qp[i] && ibv_destroy_qp(s.qp[i]))
			tool_fail("destroy_qp %s", qp_names[i]);
	if ((s.xcq && ibv_destroy_cq(ibv_cq_ex_to_cq(s.xcq))) ||
	    ibv_destroy_cq(s.scq) || ibv_destroy_cq(s.rcq) ||
	    ibv_dereg_mr(s.mr) || ibv_dereg_mr(s.nw_mr) ||
	    ibv_dealloc_pd(s.pd) || ibv_close_device(s.ctx))
		tool_fail("teardown: %s", strerror(errno));
	if (nfailed) {
		printf("FAIL %d/%d failed\n", nfailed, ncases);
		return 1;
	}
	printf("PASS %d/%d\n", ncases, ncases);
	return 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-d dev] [-g gidx] [-p tcpport] [-t secs] [-w wait_secs] [-n fetch_add_ops] [-S] [host]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .gidx = 0, .port = 18650, .timeout = 300,
			  .wait = 20, .fadd_ops = 1000 };
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:g:p:t:w:n:Sh")) != -1) {
		switch (opt) {
		case 'd':
			o.dev = optarg;
			break;
		case 'g':
			o.gidx = atoi(optarg);
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 't':
			o.timeout = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			o.wait = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			o.fadd_ops = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'S':
			o.no_srq = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		o.host = argv[optind];
	if (optind + 1 < argc)
		usage(argv[0]);
	tool_init("mrce_verbs_conformance", o.timeout);
	return o.host ? run_client(&o) : run_server(&o);
}
