// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_datapath.c - post_send, post_recv, poll_cq and req_notify_cq: the
 * verbs that libibverbs' inline wrappers call through context.ops. No system
 * call and no allocation here, except the doorbell the daemon asked for.
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

static void mrce_ring_doorbell(struct mrce_context *ctx)
{
	uint64_t one = 1;
	ssize_t n;

	/* EAGAIN means the counter is saturated: the daemon wakes anyway. */
	n = write(ctx->doorbell_fd, &one, sizeof(one));
	(void)n;
	__atomic_fetch_add(&ctx->doorbells, 1, __ATOMIC_RELAXED);
}

static int mrce_build_send_wqe(struct mrce_qp *qp, struct mrce_wqe *wqe,
			       const struct ibv_send_wr *wr)
{
	uint32_t length = 0;
	int i;

	if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM)
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;

	wqe->wr_id = wr->wr_id;
	wqe->opcode = (uint8_t)wr->opcode;
	wqe->send_flags = (uint8_t)wr->send_flags;
	wqe->imm_data = wr->opcode == IBV_WR_SEND_WITH_IMM ? wr->imm_data : 0;
	wqe->rkey = 0;
	wqe->remote_addr = 0;
	wqe->compare_add = 0;
	wqe->swap = 0;
	memset(wqe->reserved, 0, sizeof(wqe->reserved));

	if (wr->send_flags & IBV_SEND_INLINE) {
		for (i = 0; i < wr->num_sge; i++)
			length += wr->sg_list[i].length;
		if (length > qp->cap.max_inline_data || length > MRCE_MAX_INLINE)
			return EINVAL;
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
		mrce_ring_doorbell(ctx);
	pthread_spin_unlock(&qp->sq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int mrce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct mrce_qp *qp = to_mqp(ibqp);
	struct mrce_context *ctx = to_mctx(ibqp->context);
	uint32_t posted = 0;
	int ret = 0;
	int i;

	pthread_spin_lock(&qp->rq_lock);
	if (__atomic_load_n(&ibqp->state, __ATOMIC_ACQUIRE) == IBV_QPS_RESET) {
		ret = EINVAL;
		goto out;
	}
	if (__atomic_load_n(&ctx->conn.dead, __ATOMIC_ACQUIRE)) {
		ret = EIO;
		goto out;
	}
	for (; wr; wr = wr->next) {
		struct mrce_wqe *wqe;
		uint32_t length = 0;

		if (wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			ret = EINVAL;
			break;
		}
		if (!mrce_ring_prod_free(&qp->rq, 1)) {
			ret = ENOMEM;
			break;
		}
		wqe = mrce_ring_prod_slot(&qp->rq);
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
		mrce_ring_prod_advance(&qp->rq);
		posted++;
	}
out:
	if (posted && mrce_ring_prod_publish(&qp->rq))
		mrce_ring_doorbell(ctx);
	pthread_spin_unlock(&qp->rq_lock);
	if (ret)
		*bad_wr = wr;
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

int mrce_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	(void)srq;
	*bad_wr = wr;
	return EOPNOTSUPP;
}
