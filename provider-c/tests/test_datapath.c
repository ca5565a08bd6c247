// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the provider's data path without a daemon: QP, SRQ and CQ
 * rings live in plain memory initialised here as the daemon would, and the
 * test reads back the WQEs that post_send, the ibv_wr_* API and
 * post_srq_recv wrote; it writes CQEs and polls them with ibv_poll_cq and
 * the ibv_cq_ex API. Also: address handles, init_ah_from_wc from a GRH,
 * and the translation of async events to the app's objects.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mrce.h"
#include "check.h"


#define SLOTS 8

static struct mrce_context *ctx;
static int peer_fd;

static void *ring_mem(uint16_t kind, uint32_t slot_size)
{
	size_t len = MRCE_RING_SLOTS_OFF + (size_t)SLOTS * slot_size;
	struct mrce_ring_header *h = aligned_alloc(64, len);

	memset(h, 0, len);
	h->magic = MRCE_RING_MAGIC;
	h->version = MRCE_RING_VERSION;
	h->kind = kind;
	h->slot_size = slot_size;
	h->slot_count = SLOTS;
	return h;
}

static void make_ctx(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	ctx = calloc(1, sizeof(*ctx));
	ctx->conn.fd = sv[0];
	peer_fd = sv[1];
	pthread_mutex_init(&ctx->conn.lock, NULL);
	pthread_mutex_init(&ctx->obj_lock, NULL);
	ctx->doorbell_fd = eventfd(0, EFD_NONBLOCK);
	ctx->vctx.context.ops.post_send = mrce_post_send;
	ctx->vctx.context.ops.post_recv = mrce_post_recv;
	ctx->vctx.context.ops.post_srq_recv = mrce_post_srq_recv;
	ctx->vctx.context.ops.poll_cq = mrce_poll_cq;
	ctx->hello.gid[10] = 0xff;
	ctx->hello.gid[11] = 0xff;
	memcpy(ctx->hello.gid + 12, "\xc6\x12\x00\x02", 4); /* 198.18.0.2 */
}

static struct mrce_qp *make_qp(enum ibv_qp_type type, uint64_t send_ops)
{
	struct mrce_qp *qp = calloc(1, sizeof(*qp));

	if (mrce_ring_attach(&qp->sq, ring_mem(MRCE_RING_KIND_SQ, MRCE_WQE_SIZE),
			     MRCE_RING_SLOTS_OFF + SLOTS * MRCE_WQE_SIZE,
			     MRCE_RING_KIND_SQ, MRCE_WQE_SIZE) ||
	    mrce_ring_attach(&qp->rq, ring_mem(MRCE_RING_KIND_RQ, MRCE_WQE_SIZE),
			     MRCE_RING_SLOTS_OFF + SLOTS * MRCE_WQE_SIZE,
			     MRCE_RING_KIND_RQ, MRCE_WQE_SIZE))
		abort();
	pthread_spin_init(&qp->sq_lock, 0);
	pthread_spin_init(&qp->rq_lock, 0);
	qp->has_rq = true;
	qp->cap = (struct ibv_qp_cap){ .max_send_wr = SLOTS,
				       .max_recv_wr = SLOTS,
				       .max_send_sge = 4,
				       .max_recv_sge = 2,
				       .max_inline_data = 64 };
	qp->ibv_qp.context = &ctx->vctx.context;
	qp->ibv_qp.qp_type = type;
	qp->ibv_qp.state = IBV_QPS_RTS;
	qp->ibv_qp.handle = 77;
	qp->is_qp_ex = true;
	qp->send_ops_flags = send_ops;
	pthread_mutex_init(&qp->ibv_qp.mutex, NULL);
	pthread_cond_init(&qp->ibv_qp.cond, NULL);
	mrce_qp_ex_init(qp);
	return qp;
}

static struct mrce_wqe *sq_wqe(struct mrce_qp *qp, uint32_t idx)
{
	return mrce_ring_slot(&qp->sq, idx);
}

static uint32_t published(struct mrce_ring *r)
{
	return __atomic_load_n(&r->hdr->producer, __ATOMIC_ACQUIRE);
}

static struct ibv_ah *make_ah(const char *ip, uint8_t tclass, uint8_t hops)
{
	struct ibv_pd pd = { .context = &ctx->vctx.context };
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
				 .grh = { .traffic_class = tclass,
					  .hop_limit = hops } };
	static struct ibv_pd keep;

	keep = pd;
	a.grh.dgid.raw[10] = 0xff;
	a.grh.dgid.raw[11] = 0xff;
	inet_pton(AF_INET, ip, a.grh.dgid.raw + 12);
	return mrce_create_ah(&keep, &a);
}

static void test_post_send_rc(void)
{
	struct mrce_qp *qp = make_qp(IBV_QPT_RC, MRCE_RC_SEND_OPS);
	uint8_t payload[100];
	uint64_t old = 0;
	struct ibv_sge sge[5] = {
		{ .addr = 0x1000, .length = 10, .lkey = 1 },
		{ .addr = 0x2000, .length = 20, .lkey = 2 },
		{ .addr = 0x3000, .length = 30, .lkey = 3 },
		{ .addr = 0x4000, .length = 40, .lkey = 4 },
		{ .addr = 0x5000, .length = 50, .lkey = 5 },
	};
	struct ibv_sge atom = { .addr = (uintptr_t)&old, .length = 8,
				.lkey = 9 };
	struct ibv_send_wr w[4], *bad;
	struct mrce_wqe *q;
	uint64_t v;
	int i;

	for (i = 0; i < 100; i++)
		payload[i] = (uint8_t)(i * 3 + 1);

	/* A chain: WRITE_WITH_IMM with 3 SGEs, fenced READ, CMP_SWP, FADD. */
	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){ .wr_id = 1, .next = &w[1], .sg_list = sge,
				     .num_sge = 3,
				     .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				     .send_flags = IBV_SEND_SIGNALED |
						   IBV_SEND_SOLICITED,
				     .imm_data = htonl(0xabcd) };
	w[0].wr.rdma.remote_addr = 0x123456789;
	w[0].wr.rdma.rkey = 0x55;
	w[1] = (struct ibv_send_wr){ .wr_id = 2, .next = &w[2], .sg_list = sge,
				     .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				     .send_flags = IBV_SEND_FENCE };
	w[1].wr.rdma.remote_addr = 0x8000;
	w[1].wr.rdma.rkey = 0x66;
	w[2] = (struct ibv_send_wr){ .wr_id = 3, .next = &w[3],
				     .sg_list = &atom, .num_sge = 1,
				     .opcode = IBV_WR_ATOMIC_CMP_AND_SWP };
	w[2].wr.atomic.remote_addr = 0x9008;
	w[2].wr.atomic.rkey = 0x77;
	w[2].wr.atomic.compare_add = 11;
	w[2].wr.atomic.swap = 22;
	w[3] = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &atom,
				     .num_sge = 1,
				     .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	w[3].wr.atomic.remote_addr = 0xa000;
	w[3].wr.atomic.rkey = 0x88;
	w[3].wr.atomic.compare_add = 5;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == 0);
	CHECK(published(&qp->sq) == 4);
	q = sq_wqe(qp, 0);
	CHECK(q->wr_id == 1 && q->opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
	CHECK(q->send_flags == (IBV_SEND_SIGNALED | IBV_SEND_SOLICITED));
	CHECK(q->num_sge == 3 && q->length == 60 && q->imm_data == htonl(0xabcd));
	CHECK(q->remote_addr == 0x123456789 && q->rkey == 0x55);
	CHECK(q->data.sge[2].addr == 0x3000 && q->data.sge[2].lkey == 3);
	q = sq_wqe(qp, 1);
	CHECK(q->opcode == IBV_WR_RDMA_READ && q->send_flags == IBV_SEND_FENCE);
	CHECK(q->remote_addr == 0x8000 && q->rkey == 0x66 && q->length == 10);
	q = sq_wqe(qp, 2);
	CHECK(q->opcode == IBV_WR_ATOMIC_CMP_AND_SWP && q->compare_add == 11 &&
	      q->swap == 22 && q->remote_addr == 0x9008 && q->rkey == 0x77);
	CHECK(q->num_sge == 1 && q->data.sge[0].length == 8);
	q = sq_wqe(qp, 3);
	CHECK(q->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD &&
	      q->compare_add == 5 && q->swap == 0 && q->rkey == 0x88);
	qp->sq.hdr->consumer = 4; /* the "daemon" took them */

	/* Inline SEND with two buffers; zero-length WRITE_WITH_IMM. */
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)payload, .length = 40 };
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)payload + 40,
				   .length = 24 };
	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){ .wr_id = 5, .next = &w[1], .sg_list = sge,
				     .num_sge = 2, .opcode = IBV_WR_SEND,
				     .send_flags = IBV_SEND_INLINE };
	w[1] = (struct ibv_send_wr){ .wr_id = 6, .num_sge = 0,
				     .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				     .imm_data = htonl(7) };
	w[1].wr.rdma.rkey = 1;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == 0);
	q = sq_wqe(qp, 4);
	CHECK(q->num_sge == 0 && q->length == 64 &&
	      q->send_flags == IBV_SEND_INLINE &&
	      !memcmp(q->data.inline_data, payload, 64));
	q = sq_wqe(qp, 5);
	CHECK(q->length == 0 && q->num_sge == 0 && q->imm_data == htonl(7));

	/* Errors: *bad_wr is the first WR not posted; those before it are. */
	sge[0] = (struct ibv_sge){ .addr = 0x1000, .length = 8 };
	sge[1] = (struct ibv_sge){ .addr = 0x2000, .length = 8 };
	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){ .wr_id = 7, .next = &w[1], .sg_list = sge,
				     .num_sge = 1, .opcode = IBV_WR_SEND };
	w[1] = (struct ibv_send_wr){ .wr_id = 8, .sg_list = sge, .num_sge = 2,
				     .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	w[1].wr.atomic.remote_addr = 0x1000;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL && bad == &w[1]);
	CHECK(published(&qp->sq) == 7);
	qp->sq.hdr->consumer = 7;
	w[0].next = NULL;
	w[0].opcode = IBV_WR_ATOMIC_CMP_AND_SWP; /* length 8, misaligned */
	w[0].wr.atomic.remote_addr = 0x1004;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL && bad == &w[0]);
	w[0].wr.atomic.remote_addr = 0x1000;
	sge[0].length = 4; /* not 8 bytes */
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL);
	sge[0].length = 8;
	w[0].send_flags = IBV_SEND_INLINE; /* atomics never inline */
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL);
	w[0].opcode = IBV_WR_RDMA_READ; /* nor READ */
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL);
	w[0].opcode = IBV_WR_SEND;
	sge[0].length = 65; /* inline over max_inline_data (64) */
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL);
	w[0].send_flags = 0;
	w[0].sg_list = sge;
	w[0].num_sge = 5; /* over max_send_sge (4) */
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL);
	w[0].num_sge = 1;
	w[0].opcode = IBV_WR_LOCAL_INV;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL && bad == &w[0]);
	w[0].opcode = (enum ibv_wr_opcode)0xee;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL);
	CHECK(published(&qp->sq) == 7);

	/* The doorbell rings only when the daemon asked for it. */
	w[0].opcode = IBV_WR_SEND;
	CHECK(read(ctx->doorbell_fd, &v, sizeof(v)) < 0);
	qp->sq.hdr->flags = MRCE_RING_NEED_WAKEUP;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == 0);
	CHECK(read(ctx->doorbell_fd, &v, sizeof(v)) == sizeof(v) && v == 1);
	qp->sq.hdr->flags = 0;

	/* A full ring: ENOMEM at the first WR that does not fit. */
	for (i = 0; i < 4; i++)
		w[i] = (struct ibv_send_wr){ .wr_id = 10 + (uint64_t)i,
					     .next = i < 3 ? &w[i + 1] : NULL,
					     .sg_list = sge, .num_sge = 1,
					     .opcode = IBV_WR_SEND };
	/* consumer 7, producer 8: 7 free */
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == 0);
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == ENOMEM && bad == &w[3]);
	CHECK(published(&qp->sq) == 15);

	/* Not in RTS: EINVAL. */
	qp->sq.hdr->consumer = 15;
	qp->ibv_qp.state = IBV_QPS_RTR;
	CHECK(ibv_post_send(&qp->ibv_qp, w, &bad) == EINVAL && bad == &w[0]);
}

static void test_post_send_ud(void)
{
	struct mrce_qp *qp = make_qp(IBV_QPT_UD, MRCE_UD_SEND_OPS);
	struct ibv_ah *ah = make_ah("198.18.0.1", 0x28, 9);
	struct ibv_sge sge = { .addr = 0x1000, .length = 100, .lkey = 3 };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .imm_data = htonl(3) }, *bad;
	struct mrce_wqe *q;

	CHECK(ah != NULL);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = 0x123456;
	w.wr.ud.remote_qkey = 0x11111111;
	CHECK(ibv_post_send(&qp->ibv_qp, &w, &bad) == 0);
	q = sq_wqe(qp, 0);
	CHECK(q->ud_remote_qpn == 0x123456 && q->ud_remote_qkey == 0x11111111);
	CHECK(q->ud_dest_ipv4 == inet_addr("198.18.0.1"));
	CHECK(q->ud_traffic_class == 0x28 && q->ud_hop_limit == 9);
	CHECK(q->imm_data == htonl(3) && q->length == 100);
	w.opcode = IBV_WR_RDMA_WRITE; /* not on UD */
	CHECK(ibv_post_send(&qp->ibv_qp, &w, &bad) == EINVAL);
	w.opcode = IBV_WR_SEND;
	w.wr.ud.ah = NULL; /* no AH */
	CHECK(ibv_post_send(&qp->ibv_qp, &w, &bad) == EINVAL);
	CHECK(published(&qp->sq) == 1);
	mrce_destroy_ah(ah);
}

static void test_wr_api(void)
{
	struct mrce_qp *qp = make_qp(IBV_QPT_RC, IBV_QP_EX_WITH_SEND |
						 IBV_QP_EX_WITH_RDMA_WRITE |
						 IBV_QP_EX_WITH_RDMA_READ |
						 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
	struct ibv_qp_ex *x = &qp->ibv_qp_ex;
	struct ibv_sge sl[2] = { { .addr = 0x10, .length = 1, .lkey = 1 },
				 { .addr = 0x20, .length = 2, .lkey = 2 } };
	char text[] = "hello, inline";
	struct ibv_data_buf bufs[2] = { { text, 5 }, { text + 5, 8 } };
	struct mrce_wqe *q;

	ibv_wr_start(x);
	x->wr_id = 100;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_rdma_write(x, 0x42, 0x1000);
	ibv_wr_set_sge_list(x, 2, sl);
	x->wr_id = 101;
	x->wr_flags = 0;
	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 2, bufs);
	x->wr_id = 102;
	ibv_wr_atomic_fetch_add(x, 0x43, 0x2000, 9);
	ibv_wr_set_sge(x, 7, 0x3000, 8);
	CHECK(published(&qp->sq) == 0); /* nothing visible before complete */
	CHECK(ibv_wr_complete(x) == 0);
	CHECK(published(&qp->sq) == 3);
	q = sq_wqe(qp, 0);
	CHECK(q->wr_id == 100 && q->opcode == IBV_WR_RDMA_WRITE &&
	      q->rkey == 0x42 && q->remote_addr == 0x1000 &&
	      q->num_sge == 2 && q->length == 3 &&
	      q->send_flags == (IBV_SEND_SIGNALED | IBV_SEND_FENCE));
	q = sq_wqe(qp, 1);
	CHECK(q->wr_id == 101 && q->opcode == IBV_WR_SEND &&
	      q->send_flags == IBV_SEND_INLINE && q->length == 13 &&
	      !memcmp(q->data.inline_data, text, 13));
	q = sq_wqe(qp, 2);
	CHECK(q->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD && q->compare_add == 9 &&
	      q->data.sge[0].length == 8);

	/* An opcode not in send_ops_flags: the whole batch is dropped. */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x10, 4);
	ibv_wr_send_imm(x, htonl(1));
	ibv_wr_set_sge(x, 1, 0x10, 4);
	CHECK(ibv_wr_complete(x) == EINVAL);
	CHECK(published(&qp->sq) == 3 && qp->sq.cached_prod == 3);
	/* Atomic without its 8-byte SGE; READ with inline data. */
	ibv_wr_start(x);
	ibv_wr_atomic_fetch_add(x, 1, 0x2000, 1);
	CHECK(ibv_wr_complete(x) == EINVAL);
	ibv_wr_start(x);
	ibv_wr_atomic_fetch_add(x, 1, 0x2001, 1); /* misaligned */
	ibv_wr_set_sge(x, 1, 0x10, 8);
	CHECK(ibv_wr_complete(x) == EINVAL);
	ibv_wr_start(x);
	ibv_wr_rdma_read(x, 1, 0x2000);
	ibv_wr_set_inline_data(x, text, 4);
	CHECK(ibv_wr_complete(x) == EINVAL);
	/* set_sge before any opcode; abort. */
	ibv_wr_start(x);
	ibv_wr_set_sge(x, 1, 0x10, 4);
	CHECK(ibv_wr_complete(x) == EINVAL);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_abort(x);
	CHECK(qp->sq.cached_prod == 3 && published(&qp->sq) == 3);
	/* Unsupported wr_*: EOPNOTSUPP. */
	ibv_wr_start(x);
	ibv_wr_local_inv(x, 5);
	CHECK(ibv_wr_complete(x) == EOPNOTSUPP);
	/* An empty batch is fine. */
	ibv_wr_start(x);
	CHECK(ibv_wr_complete(x) == 0);
	CHECK(published(&qp->sq) == 3);
}

static void test_srq(void)
{
	struct mrce_srq *srq = calloc(1, sizeof(*srq));
	struct ibv_sge sge[3] = { { .addr = 1, .length = 10, .lkey = 1 },
				  { .addr = 2, .length = 20, .lkey = 2 },
				  { .addr = 3, .length = 30, .lkey = 3 } };
	struct ibv_recv_wr w[2] = {
		{ .wr_id = 1, .next = &w[1], .sg_list = sge, .num_sge = 2 },
		{ .wr_id = 2, .sg_list = sge, .num_sge = 3 },
	}, *bad;
	struct mrce_wqe *q;
	struct mrce_qp *qp = make_qp(IBV_QPT_RC, 0);

	if (mrce_ring_attach(&srq->ring, ring_mem(MRCE_RING_KIND_SRQ, MRCE_WQE_SIZE),
			     MRCE_RING_SLOTS_OFF + SLOTS * MRCE_WQE_SIZE,
			     MRCE_RING_KIND_SRQ, MRCE_WQE_SIZE))
		abort();
	pthread_spin_init(&srq->lock, 0);
	srq->max_wr = SLOTS;
	srq->max_sge = 2;
	srq->ibv_srq.context = &ctx->vctx.context;
	CHECK(ibv_post_srq_recv(&srq->ibv_srq, w, &bad) == EINVAL &&
	      bad == &w[1]);
	CHECK(published(&srq->ring) == 1);
	q = mrce_ring_slot(&srq->ring, 0);
	CHECK(q->wr_id == 1 && q->num_sge == 2 && q->length == 30 &&
	      q->data.sge[1].lkey == 2);
	/* A QP on an SRQ has no RQ of its own. */
	qp->has_rq = false;
	w[0].next = NULL;
	CHECK(ibv_post_recv(&qp->ibv_qp, w, &bad) == EINVAL && bad == &w[0]);
	/* The ring kind is checked on attach. */
	CHECK(mrce_ring_attach(&srq->ring, ring_mem(MRCE_RING_KIND_RQ, MRCE_WQE_SIZE),
			       MRCE_RING_SLOTS_OFF + SLOTS * MRCE_WQE_SIZE,
			       MRCE_RING_KIND_SRQ, MRCE_WQE_SIZE) == EPROTO);
}

static void put_cqe(struct mrce_ring *r, uint32_t idx, uint64_t wr_id,
		    uint32_t status, uint32_t opcode, uint32_t len)
{
	struct mrce_cqe *c = mrce_ring_slot(r, idx);

	memset(c, 0, sizeof(*c));
	c->wr_id = wr_id;
	c->status = status;
	c->opcode = opcode;
	c->byte_len = len;
	c->imm_data = htonl((uint32_t)wr_id);
	c->qp_num = 0x99;
	c->src_qp = 0x77;
	c->wc_flags = IBV_WC_WITH_IMM | IBV_WC_GRH;
	c->sl = 3;
}

static void test_cq_ex(void)
{
	struct mrce_cq *cq = calloc(1, sizeof(*cq));
	struct ibv_cq_ex *x = &cq->ibv_cq_ex;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc wc[2];
	uint64_t seen = 0;
	int n = 0, ret;

	if (mrce_ring_attach(&cq->ring, ring_mem(MRCE_RING_KIND_CQ, MRCE_CQE_SIZE),
			     MRCE_RING_SLOTS_OFF + SLOTS * MRCE_CQE_SIZE,
			     MRCE_RING_KIND_CQ, MRCE_CQE_SIZE))
		abort();
	pthread_spin_init(&cq->lock, 0);
	cq->ibv_cq.context = &ctx->vctx.context;
	mrce_cq_ex_init(cq);

	CHECK(ibv_start_poll(x, &pa) == ENOENT);
	put_cqe(&cq->ring, 0, 1, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 0);
	put_cqe(&cq->ring, 1, 2, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8);
	put_cqe(&cq->ring, 2, 3, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_READ, 0);
	__atomic_store_n(&cq->ring.hdr->producer, 3, __ATOMIC_RELEASE);
	for (ret = ibv_start_poll(x, &pa); ret == 0; ret = ibv_next_poll(x)) {
		seen = seen * 10 + x->wr_id;
		if (x->wr_id == 1)
			CHECK(ibv_wc_read_opcode(x) == IBV_WC_RECV_RDMA_WITH_IMM &&
			      ibv_wc_read_imm_data(x) == htonl(1) &&
			      ibv_wc_read_qp_num(x) == 0x99 &&
			      ibv_wc_read_src_qp(x) == 0x77 &&
			      ibv_wc_read_sl(x) == 3 &&
			      (ibv_wc_read_wc_flags(x) & IBV_WC_WITH_IMM));
		if (x->wr_id == 2)
			CHECK(ibv_wc_read_byte_len(x) == 8 &&
			      x->status == IBV_WC_SUCCESS);
		if (x->wr_id == 3)
			CHECK(x->status == IBV_WC_REM_ACCESS_ERR);
		n++;
	}
	CHECK(ret == ENOENT && n == 3 && seen == 123);
	ibv_end_poll(x);
	CHECK(cq->ring.hdr->consumer == 3);
	/* ibv_poll_cq on the same CQ; start_poll stops after one entry. */
	put_cqe(&cq->ring, 3, 4, IBV_WC_SUCCESS, IBV_WC_SEND, 0);
	put_cqe(&cq->ring, 4, 5, IBV_WC_SUCCESS, IBV_WC_SEND, 0);
	__atomic_store_n(&cq->ring.hdr->producer, 5, __ATOMIC_RELEASE);
	CHECK(ibv_start_poll(x, &pa) == 0 && x->wr_id == 4);
	ibv_end_poll(x);
	CHECK(cq->ring.hdr->consumer == 4);
	CHECK(mrce_poll_cq(&cq->ibv_cq, 2, wc) == 1 && wc[0].wr_id == 5);
	pa.comp_mask = 1;
	CHECK(ibv_start_poll(x, &pa) == EINVAL);
}

/*
 * A daemon serving IPv6 (HELLO's gid an IPv6 address): AHs name IPv6 hosts,
 * a UD send carries the whole dgid in ud_dgid and 0 in ud_dest_ipv4; an
 * IPv4-mapped, zero or multicast dgid is EINVAL; the reply AH of a receive
 * is the sender's IPv6 GID.
 */
static void test_ah_ipv6(void)
{
	struct ibv_pd pd = { .context = &ctx->vctx.context };
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
				 .grh = { .hop_limit = 64 } };
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .src_qp = 5 };
	struct ibv_ah_attr got;
	struct ibv_grh grh;
	uint8_t saved[16];
	struct mrce_qp *qp;
	struct ibv_ah *ah;
	struct ibv_sge sge = { .addr = 0x1000, .length = 10, .lkey = 3 };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND }, *bad;
	struct mrce_wqe *q;
	uint32_t ip = 1;

	memcpy(saved, ctx->hello.gid, 16);
	inet_pton(AF_INET6, "2001:db8::2", ctx->hello.gid);
	inet_pton(AF_INET6, "2001:db8::1", a.grh.dgid.raw);
	CHECK(mrce_ah_attr_check(ctx, &a, &ip) == 0 && ip == 0);
	ah = mrce_create_ah(&pd, &a);
	CHECK(ah != NULL && to_mah(ah)->dest_ipv4 == 0);
	qp = make_qp(IBV_QPT_UD, MRCE_UD_SEND_OPS);
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = 7;
	w.wr.ud.remote_qkey = 9;
	CHECK(ibv_post_send(&qp->ibv_qp, &w, &bad) == 0);
	q = sq_wqe(qp, 0);
	CHECK(q->ud_dest_ipv4 == 0 &&
	      !memcmp(q->ud_dgid, a.grh.dgid.raw, 16) && q->ud_remote_qpn == 7);
	mrce_destroy_ah(ah);

	memset(&grh, 0, sizeof(grh));
	grh.version_tclass_flow = htonl(6u << 28);
	memcpy(grh.sgid.raw, a.grh.dgid.raw, 16);
	memcpy(grh.dgid.raw, ctx->hello.gid, 16);
	CHECK(mrce_init_ah_from_wc(&ctx->vctx.context, 1, &wc, &grh, &got) == 0);
	CHECK(!memcmp(got.grh.dgid.raw, a.grh.dgid.raw, 16));

	memset(a.grh.dgid.raw, 0, 16);
	CHECK(mrce_ah_attr_check(ctx, &a, &ip) == EINVAL); /* zero */
	a.grh.dgid.raw[10] = 0xff;
	a.grh.dgid.raw[11] = 0xff;
	a.grh.dgid.raw[12] = 198;
	CHECK(mrce_ah_attr_check(ctx, &a, &ip) == EINVAL); /* IPv4 peer */
	inet_pton(AF_INET6, "ff02::1", a.grh.dgid.raw);
	CHECK(mrce_ah_attr_check(ctx, &a, &ip) == EINVAL); /* multicast */
	memcpy(ctx->hello.gid, saved, 16);
}

static void test_ah(void)
{
	struct ibv_pd pd = { .context = &ctx->vctx.context };
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };
	struct ibv_ah_attr got;
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .src_qp = 5 };
	struct ibv_grh grh;
	struct ibv_ah *ah;
	uint32_t ip;

	a.grh.dgid.raw[10] = 0xff;
	a.grh.dgid.raw[11] = 0xff;
	memcpy(a.grh.dgid.raw + 12, "\xc6\x12\x00\x01", 4);
	CHECK(mrce_ah_attr_check(ctx, &a, &ip) == 0 &&
	      ip == inet_addr("198.18.0.1"));
	a.is_global = 0;
	errno = 0;
	CHECK(mrce_create_ah(&pd, &a) == NULL && errno == EINVAL);
	a.is_global = 1;
	a.grh.dgid.raw[10] = 0; /* a real IPv6 GID */
	CHECK(mrce_ah_attr_check(ctx, &a, &ip) == EINVAL);
	a.grh.dgid.raw[10] = 0xff;
	a.grh.sgid_index = 1;
	CHECK(mrce_ah_attr_check(ctx, &a, &ip) == EINVAL);
	a.grh.sgid_index = 0;
	ctx->hello.max_ah = 1;
	ah = mrce_create_ah(&pd, &a);
	CHECK(ah != NULL);
	errno = 0;
	CHECK(mrce_create_ah(&pd, &a) == NULL && errno == ENOMEM);
	mrce_destroy_ah(ah);
	ctx->hello.max_ah = 0;

	/* The GRH the daemon writes: sgid = sender, dgid = us. */
	memset(&grh, 0, sizeof(grh));
	grh.version_tclass_flow = htonl(6u << 28 | 0x2au << 20 | 0x12345);
	grh.next_hdr = 0x1b;
	grh.hop_limit = 64;
	memcpy(grh.sgid.raw, a.grh.dgid.raw, 16);
	memcpy(grh.dgid.raw, ctx->hello.gid, 16);
	CHECK(mrce_init_ah_from_wc(&ctx->vctx.context, 1, &wc, &grh, &got) == 0);
	CHECK(got.is_global && !memcmp(got.grh.dgid.raw, a.grh.dgid.raw, 16) &&
	      got.grh.traffic_class == 0x2a && got.grh.flow_label == 0x12345 &&
	      got.port_num == 1);
	ah = mrce_create_ah_from_wc(&pd, &wc, &grh, 1);
	CHECK(ah && to_mah(ah)->dest_ipv4 == inet_addr("198.18.0.1"));
	if (ah)
		mrce_destroy_ah(ah);
	wc.wc_flags = 0; /* no GRH */
	CHECK(mrce_init_ah_from_wc(&ctx->vctx.context, 1, &wc, &grh, &got) ==
	      EINVAL);
	wc.wc_flags = IBV_WC_GRH;
	grh.dgid.raw[15] ^= 1; /* not our GID */
	CHECK(mrce_init_ah_from_wc(&ctx->vctx.context, 1, &wc, &grh, &got) ==
	      EINVAL);
}

static void test_async_translate(void)
{
	struct mrce_qp *qp = make_qp(IBV_QPT_RC, 0);
	struct mrce_srq *srq = calloc(1, sizeof(*srq));
	struct mrce_async_event in;
	struct ibv_async_event out;

	srq->ibv_srq.handle = 5;
	pthread_mutex_init(&srq->ibv_srq.mutex, NULL);
	pthread_cond_init(&srq->ibv_srq.cond, NULL);
	ctx->qps = qp;
	ctx->srqs = srq;
	in = (struct mrce_async_event){ IBV_EVENT_QP_ACCESS_ERR, 77 };
	CHECK(mrce_translate_async_event(ctx, &in, &out));
	CHECK(out.event_type == IBV_EVENT_QP_ACCESS_ERR &&
	      out.element.qp == &qp->ibv_qp && qp->async_given == 1);
	mrce_ack_async_event(&out);
	CHECK(qp->ibv_qp.events_completed == 1);
	in = (struct mrce_async_event){ IBV_EVENT_SRQ_LIMIT_REACHED, 5 };
	CHECK(mrce_translate_async_event(ctx, &in, &out) &&
	      out.element.srq == &srq->ibv_srq && srq->async_given == 1);
	in = (struct mrce_async_event){ IBV_EVENT_QP_FATAL, 78 }; /* gone */
	CHECK(!mrce_translate_async_event(ctx, &in, &out));
	in = (struct mrce_async_event){ IBV_EVENT_PORT_ERR, 1 };
	CHECK(mrce_translate_async_event(ctx, &in, &out) &&
	      out.element.port_num == 1);
	ctx->qps = NULL;
	ctx->srqs = NULL;
}

int main(void)
{
	make_ctx();
	test_post_send_rc();
	test_post_send_ud();
	test_wr_api();
	test_srq();
	test_cq_ex();
	test_ah();
	test_ah_ipv6();
	test_async_translate();
	close(peer_fd);
	if (failures) {
		printf("test_datapath: %d failures\n", failures);
		return 1;
	}
	printf("test_datapath: OK\n");
	return 0;
}
