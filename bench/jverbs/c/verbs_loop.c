// SPDX-License-Identifier: Apache-2.0
/*
 * verbs_loop.c - the C reference for java-verbs' PostPollBench: the same two
 * loops through libibverbs' inline verbs (so through the provider's
 * context->ops), timed with CLOCK_MONOTONIC, printed as
 *   sendRecv ns/op MEAN (ROUNDS rounds of SECONDS s: r1 r2 ...)
 *   pollEmpty ns/op MEAN (...)
 *
 * sendRecv: one 64-byte signaled SEND from QP a to QP b of a loopback pair on
 *   the device, with at most WINDOW in flight; when the window is full both
 *   CQs are polled (send completions free the window, receive completions are
 *   re-posted). One op = one message.
 * pollEmpty: ibv_poll_cq of 16 entries on a CQ that never gets completions.
 *
 * usage: verbs_loop [-d dev] [-g gid_idx] [-w warmup_rounds] [-r rounds] [-t seconds]
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#define WINDOW 16
#define MSG 64

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cqa, *cqb, *cqe;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	char *buf;
	long inflight;
	struct ibv_wc wc[16];
} s;

static void die(const char *what)
{
	fprintf(stderr, "verbs_loop: %s failed: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void connect_qp(struct ibv_qp *qp, struct ibv_qp *peer, int gidx, union ibv_gid *gid)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = peer->qp_num;
	at.rq_psn = 0;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 12;
	at.ah_attr.is_global = 1;
	at.ah_attr.grh.dgid = *gid;
	at.ah_attr.grh.sgid_index = gidx;
	at.ah_attr.grh.hop_limit = 1;
	at.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.sq_psn = 0;
	at.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

static struct ibv_sge send_sge, recv_sge;
static struct ibv_send_wr send_wr;
static struct ibv_recv_wr recv_wr;

static void drain(void)
{
	struct ibv_recv_wr *bad_r;
	int n, i;

	n = ibv_poll_cq(s.cqa, 16, s.wc);
	if (n < 0)
		die("poll a");
	for (i = 0; i < n; i++) {
		if (s.wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "verbs_loop: send status %d\n", s.wc[i].status);
			exit(1);
		}
		s.inflight--;
	}
	n = ibv_poll_cq(s.cqb, 16, s.wc);
	if (n < 0)
		die("poll b");
	for (i = 0; i < n; i++) {
		if (s.wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "verbs_loop: recv status %d\n", s.wc[i].status);
			exit(1);
		}
		if (ibv_post_recv(s.b, &recv_wr, &bad_r))
			die("post_recv");
	}
}

/* One message: the body of PostPollBench.sendRecv. */
static inline void send_recv_op(void)
{
	struct ibv_send_wr *bad_s;

	while (s.inflight >= WINDOW)
		drain();
	if (ibv_post_send(s.a, &send_wr, &bad_s))
		die("post_send");
	s.inflight++;
}

static volatile int sink;

static inline void poll_empty_op(void)
{
	sink += ibv_poll_cq(s.cqe, 16, s.wc);
}

static double round_ns(int which, double seconds)
{
	double t0 = now_ns(), t;
	long ops = 0;

	do {
		for (int i = 0; i < 256; i++) {
			if (which == 0)
				send_recv_op();
			else
				poll_empty_op();
		}
		ops += 256;
		t = now_ns();
	} while (t - t0 < seconds * 1e9);
	return (t - t0) / ops;
}

int main(int argc, char **argv)
{
	const char *dev = "mrce0";
	int gidx = 0, warm = 3, rounds = 5, c, i, n;
	double secs = 2;
	struct ibv_device **list;
	union ibv_gid gid;
	struct ibv_recv_wr *bad_r;

	while ((c = getopt(argc, argv, "d:g:w:r:t:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		default:
			fprintf(stderr, "usage: verbs_loop [-d dev] [-g gid] [-w warmup] [-r rounds] [-t seconds]\n");
			return 2;
		}
	}
	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (i == n) {
		fprintf(stderr, "verbs_loop: no device %s\n", dev);
		return 1;
	}
	s.ctx = ibv_open_device(list[i]);
	if (!s.ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	if (ibv_query_gid(s.ctx, 1, gidx, &gid))
		die("ibv_query_gid");
	s.pd = ibv_alloc_pd(s.ctx);
	s.cqa = ibv_create_cq(s.ctx, 2 * WINDOW + 4, NULL, NULL, 0);
	s.cqb = ibv_create_cq(s.ctx, 2 * WINDOW + 4, NULL, NULL, 0);
	s.cqe = ibv_create_cq(s.ctx, 16, NULL, NULL, 0);
	if (!s.pd || !s.cqa || !s.cqb || !s.cqe)
		die("pd/cq");
	struct ibv_qp_init_attr ia = {
		.send_cq = s.cqa, .recv_cq = s.cqa, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * WINDOW, .max_recv_wr = 2 * WINDOW, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	s.a = ibv_create_qp(s.pd, &ia);
	ia.send_cq = s.cqb;
	ia.recv_cq = s.cqb;
	s.b = ibv_create_qp(s.pd, &ia);
	if (!s.a || !s.b)
		die("ibv_create_qp");
	s.buf = aligned_alloc(4096, 4096);
	memset(s.buf, 0x5a, 4096);
	s.mr = ibv_reg_mr(s.pd, s.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!s.mr)
		die("ibv_reg_mr");
	connect_qp(s.a, s.b, gidx, &gid);
	connect_qp(s.b, s.a, gidx, &gid);

	send_sge = (struct ibv_sge){ .addr = (uintptr_t)s.buf, .length = MSG, .lkey = s.mr->lkey };
	recv_sge = (struct ibv_sge){ .addr = (uintptr_t)s.buf + 2048, .length = MSG, .lkey = s.mr->lkey };
	send_wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &send_sge, .num_sge = 1,
					.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	recv_wr = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = &recv_sge, .num_sge = 1 };
	for (i = 0; i < 2 * WINDOW; i++)
		if (ibv_post_recv(s.b, &recv_wr, &bad_r))
			die("post_recv");

	for (int which = 0; which < 2; which++) {
		double sum = 0, r[64];

		for (i = 0; i < warm; i++)
			round_ns(which, secs);
		for (i = 0; i < rounds && i < 64; i++) {
			r[i] = round_ns(which, secs);
			sum += r[i];
		}
		printf("%s ns/op %.1f (%d rounds of %.0f s:", which == 0 ? "sendRecv" : "pollEmpty",
		       sum / rounds, rounds, secs);
		for (i = 0; i < rounds && i < 64; i++)
			printf(" %.1f", r[i]);
		printf(")\n");
		fflush(stdout);
	}
	while (s.inflight > 0)
		drain();
	ibv_destroy_qp(s.a);
	ibv_destroy_qp(s.b);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cqa);
	ibv_destroy_cq(s.cqb);
	ibv_destroy_cq(s.cqe);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	free(s.buf);
	return 0;
}
