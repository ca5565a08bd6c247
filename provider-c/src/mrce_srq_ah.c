// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_srq_ah.c - shared receive queues (a ring of receive WQEs the daemon
 * made, like a QP's RQ) and address handles (provider-only objects: an AH
 * becomes the ud_* fields of a UD WQE, so the daemon never sees one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mrce.h"

/* ------------------------------------------------------------------ SRQ */

static struct ibv_srq *mrce_srq_new(struct ibv_pd *pd, void *srq_context,
				    struct ibv_srq_attr *attr)
{
	struct mrce_context *ctx = to_mctx(pd->context);
	struct mrce_create_srq_req req = {
		.pd = pd->handle,
		.max_wr = attr->max_wr,
		.max_sge = attr->max_sge,
		.srq_limit = attr->srq_limit,
	};
	struct mrce_create_srq_resp resp;
	struct mrce_srq *srq;
	int fd, ret;

	if (attr->max_sge > MRCE_MAX_SGE || attr->srq_limit > attr->max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_call(&ctx->conn, MRCE_OP_CREATE_SRQ, &req, sizeof(req),
			     &resp, sizeof(resp), &fd, 1);
	if (ret)
		goto err_free;
	srq->map_size = resp.map_size;
	srq->map = mmap(NULL, srq->map_size, PROT_READ | PROT_WRITE,
			MAP_SHARED, fd, 0);
	close(fd);
	if (srq->map == MAP_FAILED) {
		ret = errno;
		goto err_destroy;
	}
	ret = mrce_ring_attach(&srq->ring, srq->map, srq->map_size,
			       MRCE_RING_KIND_SRQ, MRCE_WQE_SIZE);
	if (ret)
		goto err_unmap;
	if (resp.max_sge > MRCE_MAX_SGE) {
		ret = EPROTO;
		goto err_unmap;
	}

	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	srq->max_wr = resp.max_wr;
	srq->max_sge = resp.max_sge;
	attr->max_wr = resp.max_wr;
	attr->max_sge = resp.max_sge;
	srq->ibv_srq.context = pd->context;
	srq->ibv_srq.srq_context = srq_context;
	srq->ibv_srq.pd = pd;
	srq->ibv_srq.handle = resp.handle;
	pthread_mutex_init(&srq->ibv_srq.mutex, NULL);
	pthread_cond_init(&srq->ibv_srq.cond, NULL);
	pthread_mutex_lock(&ctx->obj_lock);
	srq->next_in_ctx = ctx->srqs;
	ctx->srqs = srq;
	pthread_mutex_unlock(&ctx->obj_lock);
	return &srq->ibv_srq;

err_unmap:
	munmap(srq->map, srq->map_size);
err_destroy: {
	struct mrce_handle_req dreq = { .handle = resp.handle };

	mrce_conn_call(&ctx->conn, MRCE_OP_DESTROY_SRQ, &dreq, sizeof(dreq),
		       NULL, 0, NULL, 0);
}
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

struct ibv_srq *mrce_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	return mrce_srq_new(pd, attr->srq_context, &attr->attr);
}

/*
 * ibv_create_srq_ex reaches us only for what ibv_create_srq cannot do
 * (verbs.h sends a basic SRQ with a PD there): XRC and tag-matching SRQs,
 * which MetaRoCE does not have.
 */
struct ibv_srq *mrce_create_srq_ex(struct ibv_context *ctx,
				   struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t basic = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;

	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd &&
	    attr->pd->context == ctx && !(attr->comp_mask & ~basic) &&
	    (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
	     attr->srq_type == IBV_SRQT_BASIC))
		return mrce_srq_new(attr->pd, attr->srq_context, &attr->attr);
	errno = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? EOPNOTSUPP : EINVAL;
	return NULL;
}

int mrce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int mask)
{
	struct mrce_modify_srq_req req = {
		.handle = ibsrq->handle,
		.attr_mask = (uint32_t)mask,
		.max_wr = attr->max_wr,
		.srq_limit = attr->srq_limit,
	};

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	return mrce_conn_call(&to_mctx(ibsrq->context)->conn,
			      MRCE_OP_MODIFY_SRQ, &req, sizeof(req), NULL, 0,
			      NULL, 0);
}

int mrce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct mrce_handle_req req = { .handle = ibsrq->handle };
	struct mrce_srq_attr w;
	int ret;

	ret = mrce_conn_call(&to_mctx(ibsrq->context)->conn,
			     MRCE_OP_QUERY_SRQ, &req, sizeof(req), &w,
			     sizeof(w), NULL, 0);
	if (ret)
		return ret;
	attr->max_wr = w.max_wr;
	attr->max_sge = w.max_sge;
	attr->srq_limit = w.srq_limit;
	return 0;
}

int mrce_destroy_srq(struct ibv_srq *ibsrq)
{
	struct mrce_srq *srq = to_msrq(ibsrq);
	struct mrce_context *ctx = to_mctx(ibsrq->context);
	struct mrce_handle_req req = { .handle = ibsrq->handle };
	int ret;

	ret = mrce_conn_call(&ctx->conn, MRCE_OP_DESTROY_SRQ, &req,
			     sizeof(req), NULL, 0, NULL, 0);
	if (ret && !(ret == EIO && ctx->conn.dead))
		return ret;
	pthread_mutex_lock(&ctx->obj_lock);
	MRCE_UNLINK(ctx->srqs, srq);
	pthread_mutex_unlock(&ctx->obj_lock);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->async_given)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	munmap(srq->map, srq->map_size);
	pthread_spin_destroy(&srq->lock);
	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	free(srq);
	return 0;
}

/* ------------------------------------------------------------------- AH */

static const uint8_t mrce_v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0,
						  0, 0, 0, 0, 0xff, 0xff };

static bool mrce_gid_is_v4mapped(const uint8_t gid[16])
{
	return memcmp(gid, mrce_v4mapped_prefix, sizeof(mrce_v4mapped_prefix)) == 0;
}

/*
 * An AH of mrce0 addresses a host of the family the daemon serves (its GID,
 * HELLO's gid): it needs a GRH, sgid index 0 and port 1 (or 0, "any"), and
 * a dgid that is IPv4-mapped (::ffff:a.b.c.d, non-zero address) when the
 * daemon serves IPv4, or an IPv6 address that is neither IPv4-mapped, nor
 * zero, nor multicast (ff00::/8) when it serves IPv6. *dest_ipv4 is the
 * IPv4 address (network order), 0 for an IPv6 host.
 */
int mrce_ah_attr_check(const struct mrce_context *ctx,
		       const struct ibv_ah_attr *attr, uint32_t *dest_ipv4)
{
	static const uint8_t zero[16];
	const uint8_t *dgid = attr->grh.dgid.raw;

	if (!attr->is_global || attr->grh.sgid_index != 0 ||
	    (attr->port_num != 0 && attr->port_num != MRCE_PORT))
		return EINVAL;
	*dest_ipv4 = 0;
	if (!mrce_gid_is_v4mapped(ctx->hello.gid)) {
		if (mrce_gid_is_v4mapped(dgid) || !memcmp(dgid, zero, 16) ||
		    dgid[0] == 0xff)
			return EINVAL;
		return 0;
	}
	if (!mrce_gid_is_v4mapped(dgid))
		return EINVAL;
	/* Bytes 12..15 as they are in the GID: network order. */
	memcpy(dest_ipv4, dgid + 12, sizeof(*dest_ipv4));
	if (*dest_ipv4 == 0)
		return EINVAL;
	return 0;
}

struct ibv_ah *mrce_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct mrce_context *ctx = to_mctx(pd->context);
	struct mrce_ah *ah;
	uint32_t ipv4, n;

	if (!attr || mrce_ah_attr_check(ctx, attr, &ipv4)) {
		errno = EINVAL;
		return NULL;
	}
	n = __atomic_add_fetch(&ctx->num_ah, 1, __ATOMIC_RELAXED);
	if (ctx->hello.max_ah && n > ctx->hello.max_ah) {
		__atomic_sub_fetch(&ctx->num_ah, 1, __ATOMIC_RELAXED);
		errno = ENOMEM;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		__atomic_sub_fetch(&ctx->num_ah, 1, __ATOMIC_RELAXED);
		errno = ENOMEM;
		return NULL;
	}
	ah->attr = *attr;
	ah->dest_ipv4 = ipv4;
	ah->ibv_ah.context = pd->context;
	ah->ibv_ah.pd = pd;
	ah->ibv_ah.handle = MRCE_NO_HANDLE; /* no daemon object */
	return &ah->ibv_ah;
}

int mrce_destroy_ah(struct ibv_ah *ibah)
{
	struct mrce_context *ctx = to_mctx(ibah->context);

	__atomic_sub_fetch(&ctx->num_ah, 1, __ATOMIC_RELAXED);
	free(to_mah(ibah));
	return 0;
}

/*
 * The AH that answers a UD receive, from the GRH the daemon wrote in front
 * of the payload (mrce_abi.h, CQE): sgid is the sender (its GID),
 * dgid is us; we check that the dgid is our GID, as libibverbs checks that
 * it is in the GID table.
 */
int mrce_init_ah_from_wc(struct ibv_context *ibctx, uint8_t port_num,
			 const struct ibv_wc *wc, const struct ibv_grh *grh,
			 struct ibv_ah_attr *ah_attr)
{
	const struct mrce_context *ctx = to_mctx(ibctx);
	uint32_t vtf, ipv4;

	if (port_num != MRCE_PORT || !wc || !grh || !ah_attr ||
	    !(wc->wc_flags & IBV_WC_GRH))
		return EINVAL;
	if (memcmp(grh->dgid.raw, ctx->hello.gid, sizeof(ctx->hello.gid)))
		return EINVAL;
	vtf = be32toh(grh->version_tclass_flow);
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->is_global = 1;
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	ah_attr->grh.dgid = grh->sgid;
	ah_attr->grh.sgid_index = 0;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.traffic_class = (uint8_t)((vtf >> 20) & 0xff);
	ah_attr->grh.flow_label = vtf & 0xfffff;
	return mrce_ah_attr_check(ctx, ah_attr, &ipv4);
}

struct ibv_ah *mrce_create_ah_from_wc(struct ibv_pd *pd,
				      const struct ibv_wc *wc,
				      const struct ibv_grh *grh,
				      uint8_t port_num)
{
	struct ibv_ah_attr attr;
	int ret = mrce_init_ah_from_wc(pd->context, port_num, wc, grh, &attr);

	if (ret) {
		errno = ret;
		return NULL;
	}
	return mrce_create_ah(pd, &attr);
}
