// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_verbs_errors - bad arguments get the errno the verbs man pages define,
 * and the valid path works (RESET -> INIT -> RTR -> RTS -> ERR on a QP
 * connected to itself, with a message sent to itself and checked).
 * Plain libibverbs API: run it under LD_PRELOAD=libmetaroce.so.
 *
 *   mrce_verbs_errors [-d dev]
 *
 * Prints "PASS name" or "FAIL name: detail" per case, then
 * "N passed, M failed"; exits 0 iff M == 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IB_PORT 1

static int passed, failed;

static void result(const char *name, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void result(const char *name, int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("PASS %s\n", name);
		passed++;
		return;
	}
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failed++;
}

/* A verb returning an errno: expect `want`. */
static void expect_ret(const char *name, int got, int want)
{
	result(name, got == want, "returned %d (%s), expected %d (%s)", got,
	       strerror(got), want, strerror(want));
}

/* A verb returning NULL + errno: expect NULL and errno `want`. */
static void expect_null(const char *name, void *got, int err, int want)
{
	result(name, !got && err == want, "returned %p errno %d (%s), expected NULL errno %d (%s)",
	       got, got ? 0 : err, got ? "-" : strerror(err), want,
	       strerror(want));
}

struct env {
	struct ibv_context *ctx;
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static struct ibv_qp *make_qp(struct env *e, uint32_t send_wr, uint32_t recv_wr,
			      uint32_t send_sge, uint32_t recv_sge,
			      uint32_t inline_data)
{
	struct ibv_qp_init_attr init = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr,
			 .max_send_sge = send_sge, .max_recv_sge = recv_sge,
			 .max_inline_data = inline_data },
	};

	return ibv_create_qp(e->pd, &init);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				 .port_num = IB_PORT,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct env *e, struct ibv_qp *qp, uint32_t dest_qpn,
		  uint32_t psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = e->port_attr.active_mtu,
		.dest_qp_num = dest_qpn,
		.rq_psn = psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = IB_PORT,
			     .grh = { .sgid_index = 0, .hop_limit = 1 } },
	};

	if (ibv_query_gid(e->ctx, IB_PORT, 0, &a.ah_attr.grh.dgid))
		return errno;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *qp, uint32_t psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14,
				 .retry_cnt = 7, .rnr_retry = 7,
				 .sq_psn = psn, .max_rd_atomic = 1 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_one_send(struct env *e, struct ibv_qp *qp, int opcode,
			 int num_sge, int flags, uint32_t len,
			 struct ibv_send_wr **bad)
{
	struct ibv_sge sge[16];
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = sge,
				  .num_sge = num_sge,
				  .opcode = (enum ibv_wr_opcode)opcode,
				  .send_flags = (unsigned int)flags };

	for (int i = 0; i < 16; i++)
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)e->buf,
					   .length = len, .lkey = e->mr->lkey };
	*bad = NULL;
	return ibv_post_send(qp, &wr, bad);
}

static int post_one_recv(struct env *e, struct ibv_qp *qp, int num_sge,
			 uint64_t offset, uint32_t len,
			 struct ibv_recv_wr **bad)
{
	struct ibv_sge sge[16];
	struct ibv_recv_wr wr = { .wr_id = 9, .sg_list = sge,
				  .num_sge = num_sge };

	for (int i = 0; i < 16; i++)
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)e->buf + offset,
					   .length = len, .lkey = e->mr->lkey };
	*bad = NULL;
	return ibv_post_recv(qp, &wr, bad);
}

/* Polls e->cq for one completion, up to 5 s. */
static int poll_one(struct env *e, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(e->cq, 1, wc);

		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return 0;
	}
}

static void test_mr(struct env *e)
{
	struct ibv_mr *mr;
	int ret;

	errno = 0;
	mr = ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_REMOTE_WRITE);
	expect_null("reg_mr_remote_write_without_local_write", mr, errno,
		    EINVAL);
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_reg_mr(e->pd, e->buf, 4096, IBV_ACCESS_REMOTE_ATOMIC);
	expect_null("reg_mr_remote_atomic_without_local_write", mr, errno,
		    EINVAL);
	if (mr)
		ibv_dereg_mr(mr);

	{
		struct ibv_pd *pd = ibv_alloc_pd(e->ctx);

		mr = pd ? ibv_reg_mr(pd, e->buf, 4096, IBV_ACCESS_LOCAL_WRITE)
			: NULL;
		if (!mr) {
			result("dealloc_pd_with_live_mr", 0, "setup failed: %s",
			       strerror(errno));
			return;
		}
		expect_ret("dealloc_pd_with_live_mr", ibv_dealloc_pd(pd), EBUSY);
		ret = ibv_dereg_mr(mr);
		expect_ret("dereg_mr", ret, 0);
		expect_ret("dealloc_pd_after_dereg", ibv_dealloc_pd(pd), 0);
	}
}

static void test_cq(struct env *e)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	errno = 0;
	cq = ibv_create_cq(e->ctx, e->dev_attr.max_cqe + 1, NULL, NULL, 0);
	expect_null("create_cq_cqe_over_max", cq, errno, EINVAL);
	if (cq)
		ibv_destroy_cq(cq);

	cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	result("create_cq", cq && cq->cqe >= 16, "cq %p cqe %d errno %s", cq,
	       cq ? cq->cqe : 0, strerror(errno));
	if (!cq)
		return;
	{
		struct ibv_qp_init_attr init = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp = ibv_create_qp(e->pd, &init);
	}
	if (!qp) {
		result("destroy_cq_in_use_by_qp", 0, "create_qp: %s",
		       strerror(errno));
	} else {
		expect_ret("destroy_cq_in_use_by_qp", ibv_destroy_cq(cq), EBUSY);
		expect_ret("destroy_qp", ibv_destroy_qp(qp), 0);
	}
	expect_ret("destroy_cq", ibv_destroy_cq(cq), 0);

	ch = ibv_create_comp_channel(e->ctx);
	result("create_comp_channel", ch && ch->fd >= 0, "%s", strerror(errno));
	if (!ch)
		return;
	cq = ibv_create_cq(e->ctx, 4, NULL, ch, 0);
	if (cq) {
		expect_ret("destroy_comp_channel_in_use",
			   ibv_destroy_comp_channel(ch), EBUSY);
		expect_ret("req_notify_cq", ibv_req_notify_cq(cq, 0), 0);
		ibv_destroy_cq(cq);
	} else {
		result("destroy_comp_channel_in_use", 0, "create_cq: %s",
		       strerror(errno));
	}
	expect_ret("destroy_comp_channel", ibv_destroy_comp_channel(ch), 0);
}

static void test_create_qp_limits(struct env *e)
{
	struct ibv_qp *qp;
	int max_wr = e->dev_attr.max_qp_wr, max_sge = e->dev_attr.max_sge;

	errno = 0;
	qp = make_qp(e, (uint32_t)max_wr + 1, 4, 1, 1, 0);
	expect_null("create_qp_send_wr_over_max", qp, errno, EINVAL);
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = make_qp(e, 4, (uint32_t)max_wr + 1, 1, 1, 0);
	expect_null("create_qp_recv_wr_over_max", qp, errno, EINVAL);
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = make_qp(e, 4, 4, (uint32_t)max_sge + 1, 1, 0);
	expect_null("create_qp_send_sge_over_max", qp, errno, EINVAL);
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = make_qp(e, 4, 4, 1, (uint32_t)max_sge + 1, 0);
	expect_null("create_qp_recv_sge_over_max", qp, errno, EINVAL);
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = make_qp(e, 4, 4, 1, 1, 1u << 20);
	expect_null("create_qp_inline_over_max", qp, errno, EINVAL);
	if (qp)
		ibv_destroy_qp(qp);
}

static void test_qp_states(struct env *e)
{
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int ret;

	qp = make_qp(e, 8, 8, 2, 2, 64);
	if (!qp) {
		result("create_qp", 0, "%s", strerror(errno));
		return;
	}
	result("create_qp", qp->state == IBV_QPS_RESET && qp->qp_num != 0,
	       "state %d qpn %u", qp->state, qp->qp_num);

	ret = ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_CAP, &ia);
	result("query_qp_reset", !ret && a.qp_state == IBV_QPS_RESET &&
					 ia.cap.max_send_sge >= 2 &&
					 ia.cap.max_recv_wr >= 8,
	       "ret %d state %d send_sge %u recv_wr %u", ret, a.qp_state,
	       ia.cap.max_send_sge, ia.cap.max_recv_wr);

	ret = post_one_recv(e, qp, 1, 0, 64, &rbad);
	expect_ret("post_recv_in_reset", ret, EINVAL);
	result("post_recv_in_reset_bad_wr", ret && rbad != NULL, "bad_wr %p",
	       (void *)rbad);
	ret = post_one_send(e, qp, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, 8, &sbad);
	expect_ret("post_send_in_reset", ret, EINVAL);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	expect_ret("modify_qp_reset_to_rtr_illegal",
		   ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_INIT;
	expect_ret("modify_qp_to_init_missing_attrs",
		   ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	result("qp_state_unchanged_after_failure", qp->state == IBV_QPS_RESET,
	       "state %d", qp->state);

	expect_ret("modify_qp_to_init", to_init(qp), 0);
	result("qp_state_init", qp->state == IBV_QPS_INIT, "state %d",
	       qp->state);
	ret = post_one_send(e, qp, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, 8, &sbad);
	expect_ret("post_send_in_init", ret, EINVAL);
	ret = post_one_recv(e, qp, 3, 0, 8, &rbad);
	expect_ret("post_recv_too_many_sge", ret, EINVAL);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	expect_ret("modify_qp_to_rtr_missing_attrs",
		   ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_RTS;
	expect_ret("modify_qp_init_to_rts_illegal",
		   ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);

	/* Receive posted in INIT, then connect the QP to itself. */
	memset(e->buf, 0, 8192);
	expect_ret("post_recv_in_init", post_one_recv(e, qp, 1, 4096, 4096, &rbad),
		   0);
	expect_ret("modify_qp_to_rtr", to_rtr(e, qp, qp->qp_num, 0x1234), 0);
	expect_ret("modify_qp_to_rts", to_rts(qp, 0x1234), 0);
	result("qp_state_rts", qp->state == IBV_QPS_RTS, "state %d", qp->state);
	ret = ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN, &ia);
	result("query_qp_rts", !ret && a.qp_state == IBV_QPS_RTS &&
				       a.dest_qp_num == qp->qp_num,
	       "ret %d state %d dest %u", ret, a.qp_state, a.dest_qp_num);

	ret = post_one_send(e, qp, IBV_WR_SEND, 3, IBV_SEND_SIGNALED, 8, &sbad);
	expect_ret("post_send_too_many_sge", ret, EINVAL);
	result("post_send_too_many_sge_bad_wr", sbad != NULL, "bad_wr NULL");
	ret = post_one_send(e, qp, 0xee, 1, IBV_SEND_SIGNALED, 8, &sbad);
	expect_ret("post_send_bad_opcode", ret, EINVAL);
	ret = post_one_send(e, qp, IBV_WR_SEND, 1,
			    IBV_SEND_SIGNALED | IBV_SEND_INLINE, 4000, &sbad);
	expect_ret("post_send_inline_too_big", ret, EINVAL);

	/* The valid path: a signaled SEND_WITH_IMM to ourselves. */
	for (int i = 0; i < 1000; i++)
		e->buf[i] = (uint8_t)(i * 7 + 3);
	{
		struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = 1000,
				       .lkey = e->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 77, .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED,
					  .imm_data = htonl(0xfeed) };

		expect_ret("post_send_self", ibv_post_send(qp, &wr, &sbad), 0);
	}
	{
		int got_send = 0, got_recv = 0;

		for (int k = 0; k < 2 && poll_one(e, &wc) == 1; k++) {
			if (wc.wr_id == 77 && wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_SEND)
				got_send = 1;
			if (wc.wr_id == 9 && wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_RECV && wc.byte_len == 1000 &&
			    (wc.wc_flags & IBV_WC_WITH_IMM) &&
			    ntohl(wc.imm_data) == 0xfeed &&
			    wc.qp_num == qp->qp_num)
				got_recv = 1;
		}
		result("send_to_self_completions", got_send && got_recv,
		       "send %d recv %d", got_send, got_recv);
		result("send_to_self_data", !memcmp(e->buf, e->buf + 4096, 1000),
		       "received bytes differ");
	}

	/* ERR: a receive posted now is flushed. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	expect_ret("modify_qp_to_err", ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	result("qp_state_err", qp->state == IBV_QPS_ERR, "state %d", qp->state);
	ret = post_one_recv(e, qp, 1, 4096, 64, &rbad);
	expect_ret("post_recv_in_err", ret, 0);
	result("post_recv_in_err_flushed",
	       !ret && poll_one(e, &wc) == 1 && wc.wr_id == 9 &&
		       wc.status == IBV_WC_WR_FLUSH_ERR,
	       "no IBV_WC_WR_FLUSH_ERR completion (status %d)", wc.status);
	ret = post_one_send(e, qp, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, 8, &sbad);
	expect_ret("post_send_in_err", ret, EINVAL);
	expect_ret("destroy_qp_after_err", ibv_destroy_qp(qp), 0);
}

static void test_queries(struct env *e)
{
	union ibv_gid gid;
	struct ibv_port_attr pa;
	__be16 pkey;

	expect_ret("query_port_bad_port", ibv_query_port(e->ctx, 2, &pa), EINVAL);
	result("query_port", e->port_attr.state == IBV_PORT_ACTIVE &&
				     e->port_attr.link_layer ==
					     IBV_LINK_LAYER_ETHERNET &&
				     e->port_attr.lid == 0,
	       "state %d link_layer %d lid %u", e->port_attr.state,
	       e->port_attr.link_layer, e->port_attr.lid);
	errno = 0;
	result("query_gid_bad_index",
	       ibv_query_gid(e->ctx, IB_PORT, e->port_attr.gid_tbl_len, &gid) != 0,
	       "index %d accepted", e->port_attr.gid_tbl_len);
	result("query_gid_0_ipv4_mapped",
	       !ibv_query_gid(e->ctx, IB_PORT, 0, &gid) &&
		       gid.raw[10] == 0xff && gid.raw[11] == 0xff,
	       "not ::ffff:a.b.c.d");
	result("query_pkey_0", !ibv_query_pkey(e->ctx, IB_PORT, 0, &pkey) &&
				       ntohs(pkey) == 0xffff,
	       "pkey 0x%x", ntohs(pkey));
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct env e = { 0 };
	const char *dev_name = "mrce0";
	int opt;

	while ((opt = getopt(argc, argv, "d:")) != -1) {
		if (opt != 'd') {
			fprintf(stderr, "usage: %s [-d dev]\n", argv[0]);
			return 2;
		}
		dev_name = optarg;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			e.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!e.ctx) {
		printf("FAIL open_device: %s not found or not opened\n", dev_name);
		printf("0 passed, 1 failed\n");
		return 1;
	}
	if (ibv_query_device(e.ctx, &e.dev_attr) ||
	    ibv_query_port(e.ctx, IB_PORT, &e.port_attr)) {
		printf("FAIL query_device_port\n0 passed, 1 failed\n");
		return 1;
	}
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
	e.buf = aligned_alloc(4096, 8192);
	e.mr = e.pd && e.buf ? ibv_reg_mr(e.pd, e.buf, 8192,
					  IBV_ACCESS_LOCAL_WRITE)
			     : NULL;
	if (!e.pd || !e.cq || !e.mr) {
		printf("FAIL setup: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}

	test_queries(&e);
	test_mr(&e);
	test_cq(&e);
	test_create_qp_limits(&e);
	test_qp_states(&e);

	expect_ret("dereg_mr_final", ibv_dereg_mr(e.mr), 0);
	expect_ret("destroy_cq_final", ibv_destroy_cq(e.cq), 0);
	expect_ret("dealloc_pd_final", ibv_dealloc_pd(e.pd), 0);
	expect_ret("close_device", ibv_close_device(e.ctx), 0);
	free(e.buf);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
