// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_datapath.c - post_send, post_recv, poll_cq and req_notify_cq: the
 * verbs that libibverbs' inline wrappers call through context.ops. No system
 * call and no allocation here, except the doorbell the daemon asked for.
 *
 * Long because post/poll and their _ex forms build and read the same slots.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "mrce.h"

/* How many empty polls of a CQ between two checks for a dead daemon. */
#define MRCE_DEAD_CHECK_POLLS 4096
/*
 * Empty polls in a row after which every further empty poll yields the CPU:
 * a busy-polling app shares its cores with the daemon that must produce the
 * completion it waits for (2 cores here: two apps and two daemons).
 */
#define MRCE_YIELD_AFTER_POLLS 16

/* true when the daemon is gone; a poll() of the control socket, no I/O. */
bool mrce_ctx_check_dead(struct mrce_context *ctx)
{
	struct pollfd pfd = { .fd = ctx->conn.fd, .events = POLLRDHUP };

	if (__atomic_load_n(&ctx->conn.dead, __ATOMIC_ACQUIRE))
		return true;
	if (poll(&pfd, 1, 0) > 0 &&
	    (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
		__atomic_store_n(&ctx->conn.dead, true, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

/* No QP: a ring whose post marks none in the doorbell page (an SRQ's). */
#define MRCE_NO_QPN UINT32_MAX

/*
 * A ring asked for a wakeup after a post (mrce_abi.h, "flags"): mark the QP
 * in the doorbell page, then write the eventfd only if the daemon sleeps;
 * it reads the page while it is awake.
 */
static void mrce_ring_doorbell(struct mrce_context *ctx, uint32_t qpn)
{
	uint64_t one = 1;
	ssize_t n;

	if (ctx->db_page && qpn != MRCE_NO_QPN) {
		uint32_t x = qpn & MRCE_QP_INDEX_MASK;
		uint64_t *bits = (uint64_t *)(ctx->db_page + MRCE_DB_BITS_OFF);
		uint64_t *summary =
			(uint64_t *)(ctx->db_page + MRCE_DB_SUMMARY_OFF);
		uint32_t *sleeping =
			(uint32_t *)(ctx->db_page + MRCE_DB_SLEEPING_OFF);

		__atomic_fetch_or(&bits[x / 64], 1ull << (x % 64),
				  __ATOMIC_RELEASE);
		__atomic_fetch_or(&summary[x / 4096], 1ull << ((x / 64) % 64),
				  __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(sleeping, __ATOMIC_SEQ_CST))
			return;
	}
	/* EAGAIN means the counter is saturated: the daemon wakes anyway. */
	n = write(ctx->doorbell_fd, &one, sizeof(one));
	(void)n;
	__atomic_fetch_add(&ctx->doorbells, 1, __ATOMIC_RELAXED);
}

static bool mrce_is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* The opcodes a QP of this type carries (mrce_abi.h, "RC opcodes"). */
static bool mrce_opcode_ok(const struct mrce_qp *qp, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return qp->ibv_qp.qp_type == IBV_QPT_RC;
	default:
		return false;
	}
}

/* The send_flags bits the WQE carries: FENCE, SIGNALED, SOLICITED, INLINE. */
#define MRCE_WQE_SEND_FLAGS                                        \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | \
	 IBV_SEND_INLINE)

/* The UD fields of a WQE from an address handle of this context. */
static const uint8_t mrce_no_dgid[16];

static int mrce_wqe_set_ud(struct mrce_qp *qp, struct mrce_wqe *wqe,
			   struct ibv_ah *ibah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct mrce_ah *ah;

	if (!ibah || ibah->context != qp->ibv_qp.context)
		return EINVAL;
	ah = to_mah(ibah);
	wqe->ud_remote_qpn = remote_qpn & 0xffffff;
	wqe->ud_remote_qkey = remote_qkey;
	wqe->ud_dest_ipv4 = ah->dest_ipv4;
	memcpy(wqe->ud_dgid, ah->attr.grh.dgid.raw, sizeof(wqe->ud_dgid));
	wqe->ud_traffic_class = ah->attr.grh.traffic_class;
	wqe->ud_hop_limit = ah->attr.grh.hop_limit;
	return 0;
}

/*
 * Checks one work request against the QP and the ABI and writes its WQE.
 * Nothing is visible to the daemon until the producer index is published.
 */
int mrce_build_send_wqe(struct mrce_qp *qp, struct mrce_wqe *wqe,
			const struct ibv_send_wr *wr)
{
	enum ibv_wr_opcode op = wr->opcode;
	bool inl = (wr->send_flags & IBV_SEND_INLINE) != 0;
	uint32_t length = 0;
	int i, ret;

	if (!mrce_opcode_ok(qp, op) || wr->num_sge < 0)
		return EINVAL;
	/* READ and atomics write into local memory: never inline. */
	if (inl && (op == IBV_WR_RDMA_READ || mrce_is_atomic(op)))
		return EINVAL;
	if (!inl && (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	if (mrce_is_atomic(op) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
	     (wr->wr.atomic.remote_addr & 7) != 0))
		return EINVAL;

	memset(wqe, 0, MRCE_WQE_DATA_OFF);
	wqe->wr_id = wr->wr_id;
	wqe->opcode = (uint8_t)op;
	wqe->send_flags = (uint8_t)(wr->send_flags & MRCE_WQE_SEND_FLAGS);
	switch (op) {
	case IBV_WR_SEND_WITH_IMM:
		wqe->imm_data = wr->imm_data;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wqe->imm_data = wr->imm_data;
		/* fall through */
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		wqe->remote_addr = wr->wr.rdma.remote_addr;
		wqe->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		wqe->swap = wr->wr.atomic.swap;
		/* fall through */
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = wr->wr.atomic.remote_addr;
		wqe->rkey = wr->wr.atomic.rkey;
		wqe->compare_add = wr->wr.atomic.compare_add;
		break;
	default:
		break;
	}
	if (qp->ibv_qp.qp_type == IBV_QPT_UD) {
		ret = mrce_wqe_set_ud(qp, wqe, wr->wr.ud.ah,
				      wr->wr.ud.remote_qpn,
				      wr->wr.ud.remote_qkey);
		if (ret)
			return ret;
	}

	if (inl) {
		for (i = 0; i < wr->num_sge; i++) {
			length += wr->sg_list[i].length;
			if (length > qp->cap.max_inline_data ||
			    length > MRCE_MAX_INLINE)
				return EINVAL;
		}
		length = 0;
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(wqe->data.inline_data + length,
			       (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			length += wr->sg_list[i].length;
		}
		wqe->num_sge = 0;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			wqe->data.sge[i].addr = wr->sg_list[i].addr;
			wqe->data.sge[i].length = wr->sg_list[i].length;
			wqe->data.sge[i].lkey = wr->sg_list[i].lkey;
			length += wr->sg_list[i].length;
		}
		wqe->num_sge = (uint16_t)wr->num_sge;
	}
	wqe->length = length;
	return 0;
}

int mrce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct mrce_qp *qp = to_mqp(ibqp);
	struct mrce_context *ctx = to_mctx(ibqp->context);
	uint32_t posted = 0;
	int ret = 0;

	pthread_spin_lock(&qp->sq_lock);
	if (__atomic_load_n(&ibqp->state, __ATOMIC_ACQUIRE) != IBV_QPS_RTS) {
		ret = EINVAL;
		goto out;
	}
	if (__atomic_load_n(&ctx->conn.dead, __ATOMIC_ACQUIRE)) {
		ret = EIO;
		goto out;
	}
	for (; wr; wr = wr->next) {
		if (!mrce_ring_prod_free(&qp->sq, 1)) {
			ret = ENOMEM;
			break;
		}
		ret = mrce_build_send_wqe(qp, mrce_ring_prod_slot(&qp->sq), wr);
		if (ret)
			break;
		mrce_ring_prod_advance(&qp->sq);
		posted++;
	}
out:
	if (posted && mrce_ring_prod_publish(&qp->sq))
		mrce_ring_doorbell(ctx, ibqp->qp_num);
	pthread_spin_unlock(&qp->sq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* One receive WQE (RQ and SRQ rings share the layout). */
static void mrce_build_recv_wqe(struct mrce_wqe *wqe,
				const struct ibv_recv_wr *wr)
{
	uint32_t length = 0;
	int i;

	memset(wqe, 0, MRCE_WQE_DATA_OFF);
	wqe->wr_id = wr->wr_id;
	for (i = 0; i < wr->num_sge; i++) {
		wqe->data.sge[i].addr = wr->sg_list[i].addr;
		wqe->data.sge[i].length = wr->sg_list[i].length;
		wqe->data.sge[i].lkey = wr->sg_list[i].lkey;
		length += wr->sg_list[i].length;
	}
	wqe->num_sge = (uint16_t)wr->num_sge;
	wqe->length = length;
}

/*
 * Posts the chain on a receive ring (a QP's RQ or an SRQ), the caller holding
 * the ring's lock: each WR is checked against max_sge and the ring's room, then
 * built in place; the posted ones are published (ringing the doorbell when the
 * engine asks for it) even when a later one fails. Returns 0, or the errno with
 * *bad_wr at the first WR not posted (EIO on a dead daemon connection).
 */
static int mrce_post_recv_ring(struct mrce_context *ctx, uint32_t qpn,
			       struct mrce_ring *ring,
			       uint32_t max_sge, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	uint32_t posted = 0;
	int ret = 0;

	if (__atomic_load_n(&ctx->conn.dead, __ATOMIC_ACQUIRE)) {
		ret = EIO;
		goto out;
	}
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			ret = EINVAL;
			break;
		}
		if (!mrce_ring_prod_free(ring, 1)) {
			ret = ENOMEM;
			break;
		}
		mrce_build_recv_wqe(mrce_ring_prod_slot(ring), wr);
		mrce_ring_prod_advance(ring);
		posted++;
	}
out:
	if (posted && mrce_ring_prod_publish(ring))
		mrce_ring_doorbell(ctx, qpn);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int mrce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct mrce_qp *qp = to_mqp(ibqp);
	int ret;

	if (!qp->has_rq) {
		/* Its receives come from the SRQ. */
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq_lock);
	if (__atomic_load_n(&ibqp->state, __ATOMIC_ACQUIRE) == IBV_QPS_RESET) {
		*bad_wr = wr;
		ret = EINVAL;
	} else {
		ret = mrce_post_recv_ring(to_mctx(ibqp->context), ibqp->qp_num,
					  &qp->rq,
					  qp->cap.max_recv_sge, wr, bad_wr);
	}
	pthread_spin_unlock(&qp->rq_lock);
	return ret;
}

/* Same rules as post_recv, on the SRQ's ring; an SRQ has no state. */
int mrce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct mrce_srq *srq = to_msrq(ibsrq);
	int ret;

	pthread_spin_lock(&srq->lock);
	ret = mrce_post_recv_ring(to_mctx(ibsrq->context), MRCE_NO_QPN,
				  &srq->ring,
				  srq->max_sge, wr, bad_wr);
	pthread_spin_unlock(&srq->lock);
	return ret;
}

static void mrce_cqe_to_wc(struct ibv_wc *wc, const struct mrce_cqe *cqe)
{
	wc->wr_id = cqe->wr_id;
	wc->status = (enum ibv_wc_status)cqe->status;
	wc->opcode = (enum ibv_wc_opcode)cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->imm_data = cqe->imm_data;
	wc->qp_num = cqe->qp_num;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = cqe->wc_flags;
	wc->pkey_index = cqe->pkey_index;
	wc->slid = cqe->slid;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
}

int mrce_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct mrce_cq *cq = to_mcq(ibcq);
	uint32_t avail, n, i;
	int ret;

	if (num_entries <= 0)
		return 0;
	pthread_spin_lock(&cq->lock);
	avail = mrce_ring_cons_avail(&cq->ring);
	n = avail < (uint32_t)num_entries ? avail : (uint32_t)num_entries;
	for (i = 0; i < n; i++)
		mrce_cqe_to_wc(&wc[i], mrce_ring_slot(&cq->ring,
						      cq->ring.cached_cons + i));
	if (n) {
		mrce_ring_cons_release(&cq->ring, n);
		cq->empty_polls = 0;
		ret = (int)n;
	} else if (++cq->empty_polls >= MRCE_DEAD_CHECK_POLLS) {
		cq->empty_polls = 0;
		ret = mrce_ctx_check_dead(to_mctx(ibcq->context)) ? -EIO : 0;
	} else {
		ret = 0;
	}
	pthread_spin_unlock(&cq->lock);
	if (!n && cq->empty_polls >= MRCE_YIELD_AFTER_POLLS)
		sched_yield();
	return ret;
}

int mrce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct mrce_cq *cq = to_mcq(ibcq);

	if (__atomic_load_n(&to_mctx(ibcq->context)->conn.dead,
			    __ATOMIC_ACQUIRE))
		return EIO;
	__atomic_store_n(&cq->ring.hdr->arm,
			 solicited_only ? MRCE_CQ_ARM_SOLICITED :
					  MRCE_CQ_ARM_NEXT,
			 __ATOMIC_RELEASE);
	/*
	 * Mirror of the daemon's "write CQE, fence, read arm": either the daemon
	 * sees the arm and notifies, or the app's next poll sees the CQE.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

/* ------------------------------------------------------------------------
 * ibv_wr_* (struct ibv_qp_ex): wr_start takes the SQ lock, each wr_<opcode>
 * writes a WQE into the next ring slot without publishing it, the wr_set_*
 * calls fill that WQE, and wr_complete publishes them all at once (or rolls
 * the producer back on the first error, which it returns). wr_abort rolls
 * back. The checks are those of post_send; a WQE's SGE-dependent checks run
 * when the next WQE starts or at wr_complete.
 * ------------------------------------------------------------------------ */

static void mrce_wr_fail(struct mrce_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

static void mrce_wr_finish(struct mrce_qp *qp)
{
	struct mrce_wqe *wqe = qp->wr_cur;

	qp->wr_cur = NULL;
	if (!wqe || qp->wr_err)
		return;
	if (mrce_is_atomic((enum ibv_wr_opcode)wqe->opcode) &&
	    (wqe->num_sge != 1 || wqe->data.sge[0].length != 8 ||
	     (wqe->send_flags & IBV_SEND_INLINE)))
		mrce_wr_fail(qp, EINVAL);
	if (qp->ibv_qp.qp_type == IBV_QPT_UD && wqe->ud_dest_ipv4 == 0 &&
	    !memcmp(wqe->ud_dgid, mrce_no_dgid, sizeof(wqe->ud_dgid)))
		mrce_wr_fail(qp, EINVAL); /* no wr_set_ud_addr */
}

static struct mrce_wqe *mrce_wr_new(struct ibv_qp_ex *qpx,
				    enum ibv_wr_opcode op, uint64_t ops_flag)
{
	struct mrce_qp *qp = to_mqpx(qpx);
	struct mrce_wqe *wqe;

	mrce_wr_finish(qp);
	if (qp->wr_err)
		return NULL;
	if (!(qp->send_ops_flags & ops_flag) || !mrce_opcode_ok(qp, op)) {
		mrce_wr_fail(qp, EINVAL);
		return NULL;
	}
	if (!mrce_ring_prod_free(&qp->sq, 1)) {
		mrce_wr_fail(qp, ENOMEM);
		return NULL;
	}
	wqe = mrce_ring_prod_slot(&qp->sq);
	memset(wqe, 0, MRCE_WQE_DATA_OFF);
	wqe->wr_id = qpx->wr_id;
	wqe->opcode = (uint8_t)op;
	/* INLINE comes from wr_set_inline_data*, not from wr_flags. */
	wqe->send_flags = (uint8_t)(qpx->wr_flags & MRCE_WQE_SEND_FLAGS &
				    ~IBV_SEND_INLINE);
	mrce_ring_prod_advance(&qp->sq);
	qp->wr_cur = wqe;
	return wqe;
}

static void mrce_wr_start(struct ibv_qp_ex *qpx)
{
	struct mrce_qp *qp = to_mqpx(qpx);

	pthread_spin_lock(&qp->sq_lock);
	qp->wr_first = qp->sq.cached_prod;
	qp->wr_cur = NULL;
	qp->wr_err = 0;
}

static int mrce_wr_complete(struct ibv_qp_ex *qpx)
{
	struct mrce_qp *qp = to_mqpx(qpx);
	struct mrce_context *ctx = to_mctx(qp->ibv_qp.context);
	int ret;

	mrce_wr_finish(qp);
	ret = qp->wr_err;
	if (!ret && __atomic_load_n(&qp->ibv_qp.state, __ATOMIC_ACQUIRE) !=
			    IBV_QPS_RTS)
		ret = EINVAL;
	if (!ret && __atomic_load_n(&ctx->conn.dead, __ATOMIC_ACQUIRE))
		ret = EIO;
	if (ret)
		qp->sq.cached_prod = qp->wr_first; /* never published */
	else if (qp->sq.cached_prod != qp->wr_first &&
		 mrce_ring_prod_publish(&qp->sq))
		mrce_ring_doorbell(ctx, qp->ibv_qp.qp_num);
	pthread_spin_unlock(&qp->sq_lock);
	return ret;
}

static void mrce_wr_abort(struct ibv_qp_ex *qpx)
{
	struct mrce_qp *qp = to_mqpx(qpx);

	qp->sq.cached_prod = qp->wr_first;
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq_lock);
}

static void mrce_wr_send(struct ibv_qp_ex *qpx)
{
	mrce_wr_new(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void mrce_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct mrce_wqe *wqe = mrce_wr_new(qpx, IBV_WR_SEND_WITH_IMM,
					   IBV_QP_EX_WITH_SEND_WITH_IMM);

	if (wqe)
		wqe->imm_data = imm;
}

static void mrce_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	struct mrce_wqe *wqe = mrce_wr_new(qpx, IBV_WR_RDMA_WRITE,
					   IBV_QP_EX_WITH_RDMA_WRITE);

	if (wqe) {
		wqe->rkey = rkey;
		wqe->remote_addr = remote_addr;
	}
}

static void mrce_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, __be32 imm)
{
	struct mrce_wqe *wqe = mrce_wr_new(qpx, IBV_WR_RDMA_WRITE_WITH_IMM,
					   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);

	if (wqe) {
		wqe->rkey = rkey;
		wqe->remote_addr = remote_addr;
		wqe->imm_data = imm;
	}
}

static void mrce_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct mrce_wqe *wqe = mrce_wr_new(qpx, IBV_WR_RDMA_READ,
					   IBV_QP_EX_WITH_RDMA_READ);

	if (wqe) {
		wqe->rkey = rkey;
		wqe->remote_addr = remote_addr;
	}
}

static void mrce_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			   uint64_t flag, uint32_t rkey, uint64_t remote_addr,
			   uint64_t compare_add, uint64_t swap)
{
	struct mrce_wqe *wqe = mrce_wr_new(qpx, op, flag);

	if (!wqe)
		return;
	if (remote_addr & 7)
		mrce_wr_fail(to_mqpx(qpx), EINVAL);
	wqe->rkey = rkey;
	wqe->remote_addr = remote_addr;
	wqe->compare_add = compare_add;
	wqe->swap = swap;
}

static void mrce_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare,
				   uint64_t swap)
{
	mrce_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP,
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
		       compare, swap);
}

static void mrce_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	mrce_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
		       add, 0);
}

/* The WQE a wr_set_* call fills, or NULL (and the error) without one. */
static struct mrce_wqe *mrce_wr_cur(struct mrce_qp *qp)
{
	if (!qp->wr_cur)
		mrce_wr_fail(qp, EINVAL);
	return qp->wr_err ? NULL : qp->wr_cur;
}

static void mrce_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				 const struct ibv_sge *sg_list)
{
	struct mrce_qp *qp = to_mqpx(qpx);
	struct mrce_wqe *wqe = mrce_wr_cur(qp);
	uint32_t length = 0;
	size_t i;

	if (!wqe)
		return;
	if (num_sge > qp->cap.max_send_sge) {
		mrce_wr_fail(qp, EINVAL);
		return;
	}
	for (i = 0; i < num_sge; i++) {
		wqe->data.sge[i].addr = sg_list[i].addr;
		wqe->data.sge[i].length = sg_list[i].length;
		wqe->data.sge[i].lkey = sg_list[i].lkey;
		length += sg_list[i].length;
	}
	wqe->num_sge = (uint16_t)num_sge;
	wqe->length = length;
	wqe->send_flags &= (uint8_t)~IBV_SEND_INLINE;
}

static void mrce_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	mrce_wr_set_sge_list(qpx, 1, &sge);
}

static void mrce_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					 size_t num_buf,
					 const struct ibv_data_buf *buf_list)
{
	struct mrce_qp *qp = to_mqpx(qpx);
	struct mrce_wqe *wqe = mrce_wr_cur(qp);
	enum ibv_wr_opcode op;
	size_t i, length = 0;

	if (!wqe)
		return;
	op = (enum ibv_wr_opcode)wqe->opcode;
	if (op == IBV_WR_RDMA_READ || mrce_is_atomic(op)) {
		mrce_wr_fail(qp, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		length += buf_list[i].length;
		if (length > qp->cap.max_inline_data ||
		    length > MRCE_MAX_INLINE) {
			mrce_wr_fail(qp, EINVAL);
			return;
		}
	}
	length = 0;
	for (i = 0; i < num_buf; i++) {
		memcpy(wqe->data.inline_data + length, buf_list[i].addr,
		       buf_list[i].length);
		length += buf_list[i].length;
	}
	wqe->num_sge = 0;
	wqe->length = (uint32_t)length;
	wqe->send_flags |= IBV_SEND_INLINE;
}

static void mrce_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				    size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	mrce_wr_set_inline_data_list(qpx, 1, &buf);
}

static void mrce_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct mrce_qp *qp = to_mqpx(qpx);
	struct mrce_wqe *wqe = mrce_wr_cur(qp);

	if (!wqe)
		return;
	if (qp->ibv_qp.qp_type != IBV_QPT_UD ||
	    mrce_wqe_set_ud(qp, wqe, ah, remote_qpn, remote_qkey))
		mrce_wr_fail(qp, EINVAL);
}

/* What MetaRoCE does not do: the batch fails with EOPNOTSUPP. */
static void mrce_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			    uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	(void)mw;
	(void)rkey;
	(void)info;
	mrce_wr_fail(to_mqpx(qpx), EOPNOTSUPP);
}

static void mrce_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	mrce_wr_fail(to_mqpx(qpx), EOPNOTSUPP);
}

static void mrce_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr,
			     uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	mrce_wr_fail(to_mqpx(qpx), EOPNOTSUPP);
}

static void mrce_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	(void)srqn;
	mrce_wr_fail(to_mqpx(qpx), EOPNOTSUPP);
}

static void mrce_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr, const void *data)
{
	(void)rkey;
	(void)remote_addr;
	(void)data;
	mrce_wr_fail(to_mqpx(qpx), EOPNOTSUPP);
}

void mrce_qp_ex_init(struct mrce_qp *qp)
{
	struct ibv_qp_ex *x = &qp->ibv_qp_ex;

	x->wr_atomic_cmp_swp = mrce_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = mrce_wr_atomic_fetch_add;
	x->wr_bind_mw = mrce_wr_bind_mw;
	x->wr_local_inv = mrce_wr_local_inv;
	x->wr_rdma_read = mrce_wr_rdma_read;
	x->wr_rdma_write = mrce_wr_rdma_write;
	x->wr_rdma_write_imm = mrce_wr_rdma_write_imm;
	x->wr_send = mrce_wr_send;
	x->wr_send_imm = mrce_wr_send_imm;
	x->wr_send_inv = mrce_wr_local_inv;
	x->wr_send_tso = mrce_wr_send_tso;
	x->wr_set_ud_addr = mrce_wr_set_ud_addr;
	x->wr_set_xrc_srqn = mrce_wr_set_xrc_srqn;
	x->wr_set_inline_data = mrce_wr_set_inline_data;
	x->wr_set_inline_data_list = mrce_wr_set_inline_data_list;
	x->wr_set_sge = mrce_wr_set_sge;
	x->wr_set_sge_list = mrce_wr_set_sge_list;
	x->wr_start = mrce_wr_start;
	x->wr_complete = mrce_wr_complete;
	x->wr_abort = mrce_wr_abort;
	x->wr_atomic_write = mrce_wr_atomic_write;
}

/* ------------------------------------------------------------------------
 * ibv_cq_ex polling: start_poll takes the CQ lock and shows the oldest CQE,
 * next_poll consumes it and shows the next, end_poll consumes the one shown
 * and unlocks. The read_* accessors read the CQE shown.
 * ------------------------------------------------------------------------ */

static void mrce_cqx_show(struct mrce_cq *cq)
{
	const struct mrce_cqe *cqe = mrce_ring_cons_slot(&cq->ring);

	cq->cur = cqe;
	cq->ibv_cq_ex.wr_id = cqe->wr_id;
	cq->ibv_cq_ex.status = (enum ibv_wc_status)cqe->status;
}

static int mrce_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct mrce_cq *cq = to_mcqx(cqx);
	int ret = ENOENT;

	if (attr && attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (mrce_ring_cons_avail(&cq->ring)) {
		cq->empty_polls = 0;
		mrce_cqx_show(cq);
		return 0; /* locked until end_poll */
	}
	if (++cq->empty_polls % MRCE_DEAD_CHECK_POLLS == 0 &&
	    mrce_ctx_check_dead(to_mctx(cqx->context)))
		ret = EIO;
	pthread_spin_unlock(&cq->lock);
	if (cq->empty_polls >= MRCE_YIELD_AFTER_POLLS)
		sched_yield();
	return ret;
}

static int mrce_next_poll(struct ibv_cq_ex *cqx)
{
	struct mrce_cq *cq = to_mcqx(cqx);

	if (cq->cur) {
		mrce_ring_cons_release(&cq->ring, 1);
		cq->cur = NULL;
	}
	if (!mrce_ring_cons_avail(&cq->ring))
		return ENOENT;
	mrce_cqx_show(cq);
	return 0;
}

static void mrce_end_poll(struct ibv_cq_ex *cqx)
{
	struct mrce_cq *cq = to_mcqx(cqx);

	if (cq->cur) {
		mrce_ring_cons_release(&cq->ring, 1);
		cq->cur = NULL;
	}
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode mrce_read_opcode(struct ibv_cq_ex *cqx)
{
	return (enum ibv_wc_opcode)to_mcqx(cqx)->cur->opcode;
}

static uint32_t mrce_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->vendor_err;
}

static uint32_t mrce_read_byte_len(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->byte_len;
}

static __be32 mrce_read_imm_data(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->imm_data;
}

static uint32_t mrce_read_qp_num(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->qp_num;
}

static uint32_t mrce_read_src_qp(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->src_qp;
}

static unsigned int mrce_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->wc_flags;
}

static uint32_t mrce_read_slid(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->slid;
}

static uint8_t mrce_read_sl(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->sl;
}

static uint8_t mrce_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return to_mcqx(cqx)->cur->dlid_path_bits;
}

void mrce_cq_ex_init(struct mrce_cq *cq)
{
	struct ibv_cq_ex *x = &cq->ibv_cq_ex;

	x->start_poll = mrce_start_poll;
	x->next_poll = mrce_next_poll;
	x->end_poll = mrce_end_poll;
	x->read_opcode = mrce_read_opcode;
	x->read_vendor_err = mrce_read_vendor_err;
	x->read_byte_len = mrce_read_byte_len;
	x->read_imm_data = mrce_read_imm_data;
	x->read_qp_num = mrce_read_qp_num;
	x->read_src_qp = mrce_read_src_qp;
	x->read_wc_flags = mrce_read_wc_flags;
	x->read_slid = mrce_read_slid;
	x->read_sl = mrce_read_sl;
	x->read_dlid_path_bits = mrce_read_dlid_path_bits;
	/* Timestamps, cvlan, flow tag, TM info: refused at create. */
}
