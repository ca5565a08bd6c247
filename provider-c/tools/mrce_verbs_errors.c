// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_verbs_errors - bad arguments get the errno the verbs man pages define,
 * and the valid path works (RESET -> INIT -> RTR -> RTS -> ERR on a QP
 * connected to itself, with a message sent to itself and checked).
 * Plain libibverbs API: run it under LD_PRELOAD=libmetaroce.so.
 *
 *   mrce_verbs_errors [-d dev] [-1]
 *
 * -1 skips the cases that need a daemon with SRQ and rereg support (a
 * daemon without them closes the connection on those requests).
 *
 * Prints "PASS name" or "FAIL name: detail" per case, then
 * "N passed, M failed"; exits 0 iff M == 0.
 *
 * Long because it is one self-contained program: a function per error case.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

static void test_bad_rc_wrs(struct env *e, struct ibv_qp *qp);

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
	test_bad_rc_wrs(e, qp);

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

/* Work requests the provider refuses on an RC QP in RTS (nothing is posted). */
static void test_bad_rc_wrs(struct env *e, struct ibv_qp *qp)
{
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)e->buf, .length = 8, .lkey = e->mr->lkey },
		{ .addr = (uintptr_t)e->buf + 8, .length = 8,
		  .lkey = e->mr->lkey },
	};
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = sge, .num_sge = 2,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD },
			   *bad = NULL;
	struct ibv_qp_ex *qpx;

	wr.wr.atomic.remote_addr = 0x10000;
	wr.wr.atomic.rkey = 1;
	expect_ret("post_send_atomic_two_sges", ibv_post_send(qp, &wr, &bad),
		   EINVAL);
	result("post_send_atomic_two_sges_bad_wr", bad == &wr, "bad_wr %p",
	       (void *)bad);
	wr.num_sge = 1;
	sge[0].length = 4;
	expect_ret("post_send_atomic_4_byte_sge",
		   ibv_post_send(qp, &wr, &bad), EINVAL);
	sge[0].length = 8;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = 0x10004;
	expect_ret("post_send_atomic_misaligned",
		   ibv_post_send(qp, &wr, &bad), EINVAL);
	wr.wr.atomic.remote_addr = 0x10000;
	wr.send_flags = IBV_SEND_INLINE;
	expect_ret("post_send_atomic_inline", ibv_post_send(qp, &wr, &bad),
		   EINVAL);
	wr.opcode = IBV_WR_RDMA_READ;
	expect_ret("post_send_read_inline", ibv_post_send(qp, &wr, &bad),
		   EINVAL);
	wr.send_flags = 0;
	wr.opcode = IBV_WR_LOCAL_INV;
	expect_ret("post_send_local_inv", ibv_post_send(qp, &wr, &bad),
		   EINVAL);
	wr.opcode = IBV_WR_BIND_MW;
	expect_ret("post_send_bind_mw", ibv_post_send(qp, &wr, &bad), EINVAL);
	errno = 0;
	qpx = ibv_qp_to_qp_ex(qp);
	expect_null("qp_to_qp_ex_without_send_ops_flags", qpx, errno,
		    EOPNOTSUPP);
}

static struct ibv_qp *make_qp_ex(struct env *e, enum ibv_qp_type type,
				 uint32_t comp_mask, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = comp_mask, .pd = e->pd, .send_ops_flags = send_ops,
	};

	return ibv_create_qp_ex(e->ctx, &a);
}

/* Extended verbs and what mrce0 refuses; local checks, no daemon state. */
static void test_extended(struct env *e)
{
	struct ibv_device_attr_ex dx;
	struct ibv_query_device_ex_input in = { .comp_mask = 1 };
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_cq_ex *cqx;
	struct ibv_cq_init_attr_ex ca = { .cqe = 8 };
	struct ibv_poll_cq_attr pa = { 0 };
	void *p;
	int ret;

	memset(&dx, 0, sizeof(dx));
	ret = ibv_query_device_ex(e->ctx, NULL, &dx);
	result("query_device_ex",
	       !ret && dx.orig_attr.max_qp == e->dev_attr.max_qp &&
		       dx.orig_attr.max_srq > 0 && dx.orig_attr.max_ah > 0 &&
		       dx.orig_attr.atomic_cap == IBV_ATOMIC_HCA &&
		       dx.orig_attr.max_qp_init_rd_atom > 0 &&
		       dx.phys_port_cnt_ex == 1,
	       "ret %d max_srq %d max_ah %d atomic_cap %d init_rd_atom %d",
	       ret, dx.orig_attr.max_srq, dx.orig_attr.max_ah,
	       dx.orig_attr.atomic_cap, dx.orig_attr.max_qp_init_rd_atom);
	expect_ret("query_device_ex_bad_comp_mask",
		   ibv_query_device_ex(e->ctx, &in, &dx), EINVAL);
	expect_ret("fork_init", ibv_fork_init(), 0);

	/* QP types and create_qp_ex attributes mrce0 does not have. */
	{
		struct ibv_qp_init_attr init = {
			.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_UC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		errno = 0;
		qp = ibv_create_qp(e->pd, &init);
		expect_null("create_qp_uc", qp, errno, EOPNOTSUPP);
		init.qp_type = IBV_QPT_RAW_PACKET;
		errno = 0;
		qp = ibv_create_qp(e->pd, &init);
		expect_null("create_qp_raw_packet", qp, errno, EOPNOTSUPP);
	}
	errno = 0;
	qp = make_qp_ex(e, IBV_QPT_RC,
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV);
	expect_null("create_qp_ex_send_ops_local_inv", qp, errno, EOPNOTSUPP);
	errno = 0;
	qp = make_qp_ex(e, IBV_QPT_UD,
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			IBV_QP_EX_WITH_RDMA_WRITE);
	expect_null("create_qp_ex_ud_rdma_write", qp, errno, EOPNOTSUPP);
	errno = 0;
	qp = make_qp_ex(e, IBV_QPT_RC,
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
			0);
	expect_null("create_qp_ex_tso", qp, errno, EOPNOTSUPP);
	errno = 0;
	qp = make_qp_ex(e, IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			IBV_QP_EX_WITH_SEND);
	expect_null("create_qp_ex_without_pd", qp, errno, EINVAL);

	/* A QP with send_ops_flags has an ibv_qp_ex; in RESET it posts nothing. */
	qp = make_qp_ex(e, IBV_QPT_RC,
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	qpx = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	result("create_qp_ex_send_ops", qp && qpx, "qp %p qpx %p: %s",
	       (void *)qp, (void *)qpx, strerror(errno));
	if (qpx) {
		ibv_wr_start(qpx);
		qpx->wr_id = 1;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)e->buf, 8);
		expect_ret("wr_complete_in_reset", ibv_wr_complete(qpx),
			   EINVAL);
		ibv_wr_start(qpx);
		ibv_wr_rdma_read(qpx, 1, 0x1000); /* not in send_ops_flags */
		ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)e->buf, 8);
		expect_ret("wr_opcode_not_in_send_ops", ibv_wr_complete(qpx),
			   EINVAL);
	}
	if (qp)
		expect_ret("destroy_qp_ex", ibv_destroy_qp(qp), 0);

	/* cq_ex: standard wc_flags only. */
	ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	cqx = ibv_create_cq_ex(e->ctx, &ca);
	expect_null("create_cq_ex_timestamp", cqx, errno, EOPNOTSUPP);
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	cqx = ibv_create_cq_ex(e->ctx, &ca);
	expect_null("create_cq_ex_ignore_overrun", cqx, errno, EOPNOTSUPP);
	ca.comp_mask = 0;
	cqx = ibv_create_cq_ex(e->ctx, &ca);
	result("create_cq_ex", cqx && cqx->cqe >= 8, "%s", strerror(errno));
	if (cqx) {
		expect_ret("start_poll_empty", ibv_start_poll(cqx, &pa), ENOENT);
		pa.comp_mask = 1;
		expect_ret("start_poll_bad_comp_mask",
			   ibv_start_poll(cqx, &pa), EINVAL);
		expect_ret("destroy_cq_ex",
			   ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	}
	expect_ret("resize_cq", ibv_resize_cq(e->cq, 128), EOPNOTSUPP);

	/* What MetaRoCE does not do. */
	errno = 0;
	p = ibv_reg_dmabuf_mr(e->pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE);
	expect_null("reg_dmabuf_mr", p, errno, EOPNOTSUPP);
	{
		struct ibv_alloc_dm_attr da = { .length = 4096 };

		errno = 0;
		p = ibv_alloc_dm(e->ctx, &da);
		expect_null("alloc_dm", p, errno, EOPNOTSUPP);
	}
	errno = 0;
	p = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	expect_null("alloc_mw", p, errno, EOPNOTSUPP);
	{
		struct ibv_xrcd_init_attr xa = { .comp_mask = 0 };

		errno = 0;
		p = ibv_open_xrcd(e->ctx, &xa);
		expect_null("open_xrcd", p, errno, EOPNOTSUPP);
	}
	{
		struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ };

		errno = 0;
		p = ibv_create_wq(e->ctx, &wa);
		expect_null("create_wq", p, errno, EOPNOTSUPP);
	}
	qp = make_qp(e, 4, 4, 1, 1, 0);
	if (qp) {
		union ibv_gid mgid = { .raw = { 0xff, 0x0e } };
		struct ibv_flow_attr fa = { .size = sizeof(fa), .port = 1 };

		expect_ret("attach_mcast", ibv_attach_mcast(qp, &mgid, 0),
			   EOPNOTSUPP);
		expect_ret("detach_mcast", ibv_detach_mcast(qp, &mgid, 0),
			   EOPNOTSUPP);
		errno = 0;
		p = ibv_create_flow(qp, &fa);
		expect_null("create_flow", p, errno, EOPNOTSUPP);
		ibv_destroy_qp(qp);
	}
}

/* Address handles: provider-local objects. */
static void test_ah(struct env *e)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = IB_PORT };
	struct ibv_wc wc = { .wc_flags = 0 };
	struct ibv_grh grh = { 0 };
	struct ibv_ah_attr out;
	struct ibv_ah *ah;

	if (ibv_query_gid(e->ctx, IB_PORT, 0, &a.grh.dgid))
		return;
	a.is_global = 0;
	errno = 0;
	ah = ibv_create_ah(e->pd, &a);
	expect_null("create_ah_not_global", ah, errno, EINVAL);
	a.is_global = 1;
	a.grh.sgid_index = 1;
	errno = 0;
	ah = ibv_create_ah(e->pd, &a);
	expect_null("create_ah_bad_sgid_index", ah, errno, EINVAL);
	a.grh.sgid_index = 0;
	a.grh.dgid.raw[0] = 0xfe; /* fe80::..., not IPv4-mapped */
	errno = 0;
	ah = ibv_create_ah(e->pd, &a);
	expect_null("create_ah_ipv6_dgid", ah, errno, EINVAL);
	a.grh.dgid.raw[0] = 0;
	ah = ibv_create_ah(e->pd, &a);
	result("create_ah", ah != NULL, "%s", strerror(errno));
	if (ah)
		expect_ret("destroy_ah", ibv_destroy_ah(ah), 0);
	errno = 0;
	result("init_ah_from_wc_without_grh",
	       ibv_init_ah_from_wc(e->ctx, IB_PORT, &wc, &grh, &out) == -1 &&
		       errno == EINVAL,
	       "errno %d", errno);
	errno = 0;
	ah = ibv_create_ah_from_wc(e->pd, &wc, &grh, IB_PORT);
	expect_null("create_ah_from_wc_without_grh", ah, errno, EINVAL);
}

/* SRQ, rereg and async-event argument checks the provider makes itself. */
static void test_local_args(struct env *e)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 13 } };
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	int flags, ret;

	errno = 0;
	srq = ibv_create_srq(e->pd, &sa);
	expect_null("create_srq_sge_over_max", srq, errno, EINVAL);
	sa.attr.max_sge = 1;
	sa.attr.srq_limit = 17;
	errno = 0;
	srq = ibv_create_srq(e->pd, &sa);
	expect_null("create_srq_limit_over_max_wr", srq, errno, EINVAL);
	{
		struct ibv_srq_init_attr_ex sx = {
			.attr = { .max_wr = 4, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD,
			.srq_type = IBV_SRQT_XRC, .pd = e->pd,
		};

		errno = 0;
		srq = ibv_create_srq_ex(e->ctx, &sx);
		expect_null("create_srq_ex_xrc", srq, errno, EOPNOTSUPP);
	}

	errno = 0;
	ret = ibv_rereg_mr(e->mr, 0, NULL, NULL, 0, 0);
	result("rereg_mr_no_flags",
	       ret == IBV_REREG_MR_ERR_INPUT && errno == EINVAL,
	       "ret %d errno %d", ret, errno);
	errno = 0;
	ret = ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0);
	result("rereg_mr_change_pd_null",
	       ret == IBV_REREG_MR_ERR_INPUT && errno == EINVAL,
	       "ret %d errno %d", ret, errno);
	errno = 0;
	ret = ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL,
			   0, 0);
	result("rereg_mr_translation_null",
	       ret == IBV_REREG_MR_ERR_INPUT && errno == EINVAL,
	       "ret %d errno %d", ret, errno);

	/* Nothing queued: a non-blocking async_fd gives EAGAIN. */
	flags = fcntl(e->ctx->async_fd, F_GETFL);
	fcntl(e->ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	errno = 0;
	ret = ibv_get_async_event(e->ctx, &ev);
	result("get_async_event_nonblocking_empty", ret == -1 && errno == EAGAIN,
	       "ret %d errno %d", ret, errno);
	fcntl(e->ctx->async_fd, F_SETFL, flags);
}

/*
 * Daemon objects of ABI v2 (SRQ, rereg): run last (-1 skips them), because
 * a daemon without them closes the connection on an op it does not know.
 */
static void test_daemon_v2(struct env *e)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };
	struct ibv_srq_attr qa;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	void *old_addr = e->mr->addr;
	int ret;

	srq = ibv_create_srq(e->pd, &sa);
	result("create_srq", srq && sa.attr.max_wr >= 16, "%s",
	       strerror(errno));
	if (srq) {
		struct ibv_qp_init_attr init = {
			.send_cq = e->cq, .recv_cq = e->cq, .srq = srq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		};
		struct ibv_recv_wr rw = { .wr_id = 1 }, *bad;

		ret = ibv_query_srq(srq, &qa);
		result("query_srq", !ret && qa.max_wr >= 16 && qa.srq_limit == 0,
		       "ret %d max_wr %u limit %u", ret, qa.max_wr,
		       qa.srq_limit);
		qa.max_wr = 1024;
		expect_ret("modify_srq_resize", ibv_modify_srq(srq, &qa,
							       IBV_SRQ_MAX_WR),
			   EINVAL);
		qa.srq_limit = 100000;
		expect_ret("modify_srq_limit_over_max_wr",
			   ibv_modify_srq(srq, &qa, IBV_SRQ_LIMIT), EINVAL);
		qa.srq_limit = 4;
		expect_ret("modify_srq_limit", ibv_modify_srq(srq, &qa,
							      IBV_SRQ_LIMIT),
			   0);
		qp = ibv_create_qp(e->pd, &init);
		result("create_qp_on_srq", qp && qp->srq == srq, "%s",
		       strerror(errno));
		if (qp) {
			expect_ret("destroy_srq_in_use", ibv_destroy_srq(srq),
				   EBUSY);
			to_init(qp);
			expect_ret("post_recv_on_srq_qp",
				   ibv_post_recv(qp, &rw, &bad), EINVAL);
			ibv_destroy_qp(qp);
		}
		rw.num_sge = 3;
		expect_ret("post_srq_recv_too_many_sge",
			   ibv_post_srq_recv(srq, &rw, &bad), EINVAL);
		expect_ret("destroy_srq", ibv_destroy_srq(srq), 0);
	}
	ret = ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	result("rereg_mr_change_access", ret == 0 && e->mr->addr == old_addr,
	       "ret %d errno %d", ret, errno);
	errno = 0;
	ret = ibv_rereg_mr(e->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE);
	result("rereg_mr_remote_write_without_local_write",
	       ret == IBV_REREG_MR_ERR_CMD && errno == EINVAL,
	       "ret %d errno %d", ret, errno);
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
	int skip_v2 = 0;
	int opt;

	while ((opt = getopt(argc, argv, "d:1")) != -1) {
		if (opt == '1') {
			skip_v2 = 1;
			continue;
		}
		if (opt != 'd') {
			fprintf(stderr, "usage: %s [-d dev] [-1]\n", argv[0]);
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
	test_extended(&e);
	test_ah(&e);
	test_local_args(&e);
	if (!skip_v2)
		test_daemon_v2(&e);

	expect_ret("dereg_mr_final", ibv_dereg_mr(e.mr), 0);
	expect_ret("destroy_cq_final", ibv_destroy_cq(e.cq), 0);
	expect_ret("dealloc_pd_final", ibv_dealloc_pd(e.pd), 0);
	expect_ret("close_device", ibv_close_device(e.ctx), 0);
	free(e.buf);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
