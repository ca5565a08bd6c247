// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_verbs.c - control-path verbs on MetaRoCE objects. Each one is a
 * request to the daemon, which is authoritative for every check; the
 * provider only checks what its own shared-memory layout limits.
 *
 * Once the daemon is gone, every object is gone with it: destroy verbs then
 * free the local state and succeed, as libibverbs does for a disassociated
 * device; every other verb fails with EIO.
 *
 * Long because it holds every object's control verb and their destroy rule.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mrce.h"

static struct mrce_context *ctx_of(struct ibv_context *ibctx)
{
	return to_mctx(ibctx);
}

/* A destroy request; true when the local object may be freed. */
static int mrce_destroy_cmd(struct mrce_context *ctx, uint16_t op,
			    uint32_t handle)
{
	struct mrce_handle_req req = { .handle = handle };
	int ret;

	ret = mrce_conn_call(&ctx->conn, op, &req, sizeof(req), NULL, 0, NULL,
			     0);
	if (ret == EIO && ctx->conn.dead)
		return 0;
	return ret;
}

struct ibv_pd *mrce_alloc_pd(struct ibv_context *ibctx)
{
	struct mrce_handle_resp resp;
	struct mrce_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_call(&ctx_of(ibctx)->conn, MRCE_OP_ALLOC_PD, NULL, 0,
			     &resp, sizeof(resp), NULL, 0);
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	pd->ibv_pd.context = ibctx;
	pd->ibv_pd.handle = resp.handle;
	return &pd->ibv_pd;
}

int mrce_dealloc_pd(struct ibv_pd *pd)
{
	int ret = mrce_destroy_cmd(ctx_of(pd->context), MRCE_OP_DEALLOC_PD,
				   pd->handle);

	if (ret)
		return ret;
	free(to_mpd(pd));
	return 0;
}

struct ibv_mr *mrce_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t iova, unsigned int access)
{
	struct mrce_reg_mr_req req = {
		.pd = pd->handle,
		.access = access,
		.addr = (uintptr_t)addr,
		.length = length,
		.iova = iova,
	};
	struct mrce_reg_mr_resp resp;
	struct mrce_mr *mr;
	int ret;

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_call(&ctx_of(pd->context)->conn, MRCE_OP_REG_MR, &req,
			     sizeof(req), &resp, sizeof(resp), NULL, 0);
	if (ret) {
		free(mr);
		errno = ret;
		return NULL;
	}
	mr->ibv_mr.context = pd->context;
	mr->ibv_mr.pd = pd;
	mr->ibv_mr.addr = addr;
	mr->ibv_mr.length = length;
	mr->ibv_mr.handle = resp.handle;
	mr->ibv_mr.lkey = resp.lkey;
	mr->ibv_mr.rkey = resp.rkey;
	mr->share_fd = -1;
	mrce_share_mr(&ctx_of(pd->context)->conn, mr, access);
	return &mr->ibv_mr;
}

int mrce_dereg_mr(struct ibv_mr *mr)
{
	int ret = mrce_destroy_cmd(ctx_of(mr->context), MRCE_OP_DEREG_MR,
				   mr->handle);

	if (ret)
		return ret;
	mrce_unshare_mr(to_mmr(mr)); /* the daemon has unmapped it */
	free(to_mmr(mr));
	return 0;
}

/*
 * ibv_import_pd(3) and ibv_import_mr(3): the handle another process of this
 * context (ibv_import_device) got from ibv_alloc_pd / ibv_reg_mr. The daemon
 * keeps a reference for this connection; ibv_unimport_* drops it and frees
 * the local object (an app that unimports a PD its own objects still use
 * leaves the reference to the connection's close). Destroying is the
 * maker's: ibv_dealloc_pd / ibv_dereg_mr of an imported object fail with
 * EPERM and keep it.
 */
struct ibv_pd *mrce_import_pd(struct ibv_context *ibctx, uint32_t pd_handle)
{
	struct mrce_handle_req req = { .handle = pd_handle };
	struct mrce_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_call(&ctx_of(ibctx)->conn, MRCE_OP_IMPORT_PD, &req,
			     sizeof(req), NULL, 0, NULL, 0);
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	pd->ibv_pd.context = ibctx;
	pd->ibv_pd.handle = pd_handle;
	pd->imported = true;
	return &pd->ibv_pd;
}

void mrce_unimport_pd(struct ibv_pd *pd)
{
	if (!to_mpd(pd)->imported)
		return; /* not an import: the app must dealloc it */
	mrce_destroy_cmd(ctx_of(pd->context), MRCE_OP_UNIMPORT_PD, pd->handle);
	free(to_mpd(pd));
}

struct ibv_mr *mrce_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct mrce_import_mr_req req = { .pd = pd->handle,
					  .handle = mr_handle };
	struct mrce_import_mr_resp resp;
	struct mrce_mr *mr;
	int ret;

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_call(&ctx_of(pd->context)->conn, MRCE_OP_IMPORT_MR,
			     &req, sizeof(req), &resp, sizeof(resp), NULL, 0);
	if (ret) {
		free(mr);
		errno = ret;
		return NULL;
	}
	mr->ibv_mr.context = pd->context;
	mr->ibv_mr.pd = pd;
	mr->ibv_mr.addr = (void *)(uintptr_t)resp.addr;
	mr->ibv_mr.length = resp.length;
	mr->ibv_mr.handle = resp.handle;
	mr->ibv_mr.lkey = resp.lkey;
	mr->ibv_mr.rkey = resp.rkey;
	mr->imported = true;
	return &mr->ibv_mr;
}

void mrce_unimport_mr(struct ibv_mr *mr)
{
	if (!to_mmr(mr)->imported)
		return;
	mrce_destroy_cmd(ctx_of(mr->context), MRCE_OP_UNIMPORT_MR, mr->handle);
	free(to_mmr(mr));
}

/*
 * ibv_advise_mr (through verbs_context): the advice is accepted, and there is
 * nothing to do for it: the daemon reads and writes application memory with
 * process_vm_readv/writev, which fault pages in as any access does, so no
 * translation is ever cached that a prefetch could fill. Bad arguments get
 * the man page's EINVAL; the lkeys are checked on use, not here.
 */
int mrce_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	if (!pd)
		return EINVAL;
	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EINVAL;
	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH)
		return EINVAL;
	if (!num_sge || !sg_list)
		return EINVAL;
	return 0;
}

/*
 * ibv_rereg_mr: the IBV_REREG_MR_ERR_* convention, errno set. Registered
 * memory is never pinned here (the daemon reads it with process_vm_readv),
 * so there is nothing to do about fork: only the daemon's record changes.
 */
int mrce_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		  size_t length, int access)
{
	struct mrce_rereg_mr_req req = { .handle = mr->handle,
					 .flags = (uint32_t)flags };
	struct mrce_reg_mr_resp resp;
	int ret;

	if (flags <= 0 || (flags & ~(IBV_REREG_MR_CHANGE_TRANSLATION |
				     IBV_REREG_MR_CHANGE_PD |
				     IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		if (!pd || pd->context != mr->context) {
			errno = EINVAL;
			return IBV_REREG_MR_ERR_INPUT;
		}
		req.pd = pd->handle;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		req.access = (uint32_t)access & ~IBV_ACCESS_OPTIONAL_RANGE;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (!addr || !length) {
			errno = EINVAL;
			return IBV_REREG_MR_ERR_INPUT;
		}
		req.addr = (uintptr_t)addr;
		req.length = length;
		req.iova = (uintptr_t)addr;
	}
	ret = mrce_conn_call(&ctx_of(mr->context)->conn, MRCE_OP_REREG_MR, &req,
			     sizeof(req), &resp, sizeof(resp), NULL, 0);
	if (ret) {
		errno = ret;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
	}
	mr->lkey = resp.lkey;
	mr->rkey = resp.rkey;
	if (to_mmr(mr)->shared) {
		/* the daemon's new registration has no mapping: share it again, as it is now */
		mrce_unshare_mr(to_mmr(mr));
		mrce_share_mr(&ctx_of(mr->context)->conn, to_mmr(mr),
			      (flags & IBV_REREG_MR_CHANGE_ACCESS) ? (unsigned int)access : 0);
	}
	return 0;
}

struct ibv_comp_channel *mrce_create_comp_channel(struct ibv_context *ibctx)
{
	struct mrce_comp_channel *chan;
	struct mrce_handle_resp resp;
	int fd, ret;

	chan = calloc(1, sizeof(*chan));
	if (!chan) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_call(&ctx_of(ibctx)->conn,
			     MRCE_OP_CREATE_COMP_CHANNEL, NULL, 0, &resp,
			     sizeof(resp), &fd, 1);
	if (ret) {
		free(chan);
		errno = ret;
		return NULL;
	}
	chan->ibv_chan.context = ibctx;
	chan->ibv_chan.fd = fd;
	chan->handle = resp.handle;
	pthread_mutex_init(&chan->lock, NULL);
	return &chan->ibv_chan;
}

int mrce_destroy_comp_channel(struct ibv_comp_channel *ibchan)
{
	struct mrce_comp_channel *chan = to_mchan(ibchan);
	int ret;

	pthread_mutex_lock(&chan->lock);
	ret = chan->cqs ? EBUSY : 0;
	pthread_mutex_unlock(&chan->lock);
	if (ret)
		return ret;
	ret = mrce_destroy_cmd(ctx_of(ibchan->context),
			       MRCE_OP_DESTROY_COMP_CHANNEL, chan->handle);
	if (ret)
		return ret;
	close(ibchan->fd);
	pthread_mutex_destroy(&chan->lock);
	free(chan);
	return 0;
}

static struct mrce_cq *mrce_cq_new(struct ibv_context *ibctx, int cqe,
				   void *cq_context,
				   struct ibv_comp_channel *ibchan,
				   int comp_vector)
{
	struct mrce_context *ctx = ctx_of(ibctx);
	struct mrce_comp_channel *chan = ibchan ? to_mchan(ibchan) : NULL;
	struct mrce_create_cq_req req = {
		.cqe = (uint32_t)cqe,
		.channel = chan ? chan->handle : MRCE_NO_HANDLE,
		.comp_vector = (uint32_t)comp_vector,
	};
	struct mrce_create_cq_resp resp;
	struct mrce_cq *cq;
	int fd, ret;

	/* As the kernel's uverbs: comp_vector below num_comp_vectors (1 here). */
	if (cqe < 0 || (ibchan && ibchan->context != ibctx) || comp_vector < 0 ||
	    comp_vector >= ibctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * One entry of slack, as hardware providers allocate (mlx5: cqe + 1
	 * rounded up): an app that sizes a CQ for exactly its outstanding
	 * WRs and reads one entry late (perftest's latency tests with -e
	 * and a 1-entry send CQ) would otherwise find the ring full.
	 */
	if ((uint32_t)cqe < ctx->hello.max_cqe)
		req.cqe++;
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = mrce_conn_call(&ctx->conn, MRCE_OP_CREATE_CQ, &req, sizeof(req),
			     &resp, sizeof(resp), &fd, 1);
	if (ret)
		goto err_free;
	cq->map_size = resp.map_size;
	cq->map = mmap(NULL, cq->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	if (cq->map == MAP_FAILED) {
		ret = errno;
		goto err_destroy;
	}
	ret = mrce_ring_attach(&cq->ring, cq->map, cq->map_size,
			       MRCE_RING_KIND_CQ, MRCE_CQE_SIZE);
	if (ret)
		goto err_unmap;

	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->seen_notify = __atomic_load_n(&cq->ring.hdr->notify_count,
					  __ATOMIC_ACQUIRE);
	cq->ibv_cq.context = ibctx;
	cq->ibv_cq.channel = ibchan;
	cq->ibv_cq.cq_context = cq_context;
	cq->ibv_cq.handle = resp.handle;
	cq->ibv_cq.cqe = (int)resp.cqe;
	pthread_mutex_init(&cq->ibv_cq.mutex, NULL);
	pthread_cond_init(&cq->ibv_cq.cond, NULL);
	mrce_cq_ex_init(cq);
	if (chan) {
		pthread_mutex_lock(&chan->lock);
		cq->next_in_chan = chan->cqs;
		chan->cqs = cq;
		ibchan->refcnt++;
		pthread_mutex_unlock(&chan->lock);
	}
	pthread_mutex_lock(&ctx->obj_lock);
	cq->next_in_ctx = ctx->cqs;
	ctx->cqs = cq;
	pthread_mutex_unlock(&ctx->obj_lock);
	return cq;

err_unmap:
	munmap(cq->map, cq->map_size);
err_destroy:
	mrce_destroy_cmd(ctx, MRCE_OP_DESTROY_CQ, resp.handle);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq *mrce_create_cq(struct ibv_context *ibctx, int cqe,
			      void *cq_context, struct ibv_comp_channel *ibchan,
			      int comp_vector)
{
	struct mrce_cq *cq = mrce_cq_new(ibctx, cqe, cq_context, ibchan,
					 comp_vector);

	return cq ? &cq->ibv_cq : NULL;
}

/*
 * ibv_create_cq_ex: every standard wc_flag can be read; timestamps, cvlan,
 * flow tag and tag matching cannot (EOPNOTSUPP), nor parent domains.
 */
struct ibv_cq_ex *mrce_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct mrce_cq *cq;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->wc_flags & ~MRCE_CQ_EX_WC_FLAGS) ||
	    (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = mrce_cq_new(ibctx, (int)attr->cqe, attr->cq_context,
			 attr->channel, (int)attr->comp_vector);
	return cq ? &cq->ibv_cq_ex : NULL;
}


int mrce_destroy_cq(struct ibv_cq *ibcq)
{
	struct mrce_cq *cq = to_mcq(ibcq);
	struct mrce_context *ctx = ctx_of(ibcq->context);
	struct mrce_cq **pp;
	int ret;

	ret = mrce_destroy_cmd(ctx, MRCE_OP_DESTROY_CQ, ibcq->handle);
	if (ret)
		return ret;
	pthread_mutex_lock(&ctx->obj_lock);
	MRCE_UNLINK(ctx->cqs, cq);
	pthread_mutex_unlock(&ctx->obj_lock);
	/* As the man page says: wait until every event is acknowledged. */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->events_given ||
	       ibcq->async_events_completed != cq->async_given)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);

	if (ibcq->channel) {
		struct mrce_comp_channel *chan = to_mchan(ibcq->channel);

		pthread_mutex_lock(&chan->lock);
		for (pp = &chan->cqs; *pp; pp = &(*pp)->next_in_chan) {
			if (*pp == cq) {
				*pp = cq->next_in_chan;
				break;
			}
		}
		ibcq->channel->refcnt--;
		pthread_mutex_unlock(&chan->lock);
	}
	munmap(cq->map, cq->map_size);
	pthread_spin_destroy(&cq->lock);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq);
	return 0;
}

/*
 * The channel's CQ with a notification not yet turned into an event; of
 * several, the one notified first (oldest notify_seq), so that events leave a
 * channel shared by several CQs in the order the daemon raised them.
 */
static struct mrce_cq *mrce_chan_take_event(struct mrce_comp_channel *chan)
{
	struct mrce_cq *cq, *oldest = NULL;
	uint32_t oldest_seq = 0;

	pthread_mutex_lock(&chan->lock);
	for (cq = chan->cqs; cq; cq = cq->next_in_chan) {
		uint32_t n = __atomic_load_n(&cq->ring.hdr->notify_count,
					     __ATOMIC_ACQUIRE);
		uint32_t seq;

		if (n == cq->seen_notify)
			continue;
		seq = __atomic_load_n(&cq->ring.hdr->notify_seq,
				      __ATOMIC_RELAXED);
		if (!oldest || (int32_t)(seq - oldest_seq) < 0) {
			oldest = cq;
			oldest_seq = seq;
		}
	}
	if (oldest)
		oldest->seen_notify++;
	pthread_mutex_unlock(&chan->lock);
	return oldest;
}

/*
 * Whether a wait that a signal interrupted goes on, as libibverbs' read() of
 * the channel would: it restarts when the handlers have SA_RESTART, and fails
 * with EINTR otherwise (qperf ends its timed tests so: a SIGALRM handler
 * without SA_RESTART breaks its ibv_get_cq_event). poll() never restarts, and
 * which signal came is not known here: go on only when no caught signal's
 * handler lacks SA_RESTART.
 */
bool mrce_wait_restarts(void)
{
	struct sigaction sa;
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		/* faults are raised by the faulting thread itself and never interrupt a
		 * wait; sanitizer runtimes and JVMs catch them without SA_RESTART */
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
		    sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGSYS ||
		    sigaction(sig, NULL, &sa))
			continue;
		if (!(sa.sa_flags & SA_SIGINFO) &&
		    (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN))
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

int mrce_get_cq_event(struct ibv_comp_channel *ibchan, struct ibv_cq **cq_out,
		      void **cq_context)
{
	struct mrce_comp_channel *chan = to_mchan(ibchan);
	struct mrce_context *ctx = ctx_of(ibchan->context);
	struct pollfd pfd[2] = {
		{ .fd = ibchan->fd, .events = POLLIN },
		{ .fd = ctx->conn.fd, .events = POLLRDHUP },
	};
	int flags = fcntl(ibchan->fd, F_GETFL);
	bool nonblock = flags >= 0 && (flags & O_NONBLOCK);
	struct mrce_cq *cq;
	uint64_t one;
	int ret;

	for (;;) {
		ret = poll(pfd, 2, nonblock ? 0 : -1);
		if (ret < 0 && errno == EINTR && mrce_wait_restarts())
			continue;
		if (ret < 0)
			return -1;
		if (pfd[0].revents & POLLIN) {
			if (read(ibchan->fd, &one, sizeof(one)) != sizeof(one)) {
				if (errno == EAGAIN && !nonblock)
					continue;
				return -1;
			}
			cq = mrce_chan_take_event(chan);
			if (!cq)
				continue; /* its CQ was destroyed meanwhile */
			pthread_mutex_lock(&cq->ibv_cq.mutex);
			cq->events_given++;
			pthread_mutex_unlock(&cq->ibv_cq.mutex);
			*cq_out = &cq->ibv_cq;
			*cq_context = cq->ibv_cq.cq_context;
			return 0;
		}
		if (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			__atomic_store_n(&ctx->conn.dead, true,
					 __ATOMIC_RELEASE);
			errno = EIO;
			return -1;
		}
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
	}
}

void mrce_ack_cq_events(struct ibv_cq *ibcq, unsigned int nevents)
{
	pthread_mutex_lock(&ibcq->mutex);
	ibcq->comp_events_completed += nevents;
	pthread_cond_broadcast(&ibcq->cond);
	pthread_mutex_unlock(&ibcq->mutex);
}

static void mrce_cap_from_resp(struct ibv_qp_cap *cap,
			       const struct mrce_create_qp_resp *resp)
{
	cap->max_send_wr = resp->max_send_wr;
	cap->max_recv_wr = resp->max_recv_wr;
	cap->max_send_sge = resp->max_send_sge;
	cap->max_recv_sge = resp->max_recv_sge;
	cap->max_inline_data = resp->max_inline_data;
}

/*
 * Creates a QP from the fields ibv_qp_init_attr and ibv_qp_init_attr_ex
 * share; `send_ops` is 0 for ibv_create_qp (no ibv_qp_ex then).
 */
static struct ibv_qp *mrce_qp_new(struct ibv_pd *pd,
				  struct ibv_qp_init_attr *attr,
				  bool is_qp_ex, uint64_t send_ops)
{
	struct ibv_context *ibctx = pd->context;
	struct mrce_context *ctx = ctx_of(ibctx);
	struct mrce_create_qp_req req;
	struct mrce_create_qp_resp resp;
	struct mrce_qp *qp;
	int fd, ret;

	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD) {
		/* UC, XRC, raw packet, driver QPs */
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->context != ibctx ||
	    attr->recv_cq->context != ibctx ||
	    (attr->srq && attr->srq->context != ibctx) ||
	    attr->cap.max_send_sge > MRCE_MAX_SGE ||
	    attr->cap.max_recv_sge > MRCE_MAX_SGE ||
	    attr->cap.max_inline_data > MRCE_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	req = (struct mrce_create_qp_req){
		.pd = pd->handle,
		.send_cq = attr->send_cq->handle,
		.recv_cq = attr->recv_cq->handle,
		.srq = attr->srq ? attr->srq->handle : MRCE_NO_HANDLE,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all ? 1 : 0,
		.max_send_wr = attr->cap.max_send_wr,
		/* With an SRQ these are ignored (the QP's RQ is unused). */
		.max_recv_wr = attr->cap.max_recv_wr,
		.max_send_sge = attr->cap.max_send_sge,
		.max_recv_sge = attr->cap.max_recv_sge,
		.max_inline_data = attr->cap.max_inline_data,
	};
	ret = mrce_conn_call(&ctx->conn, MRCE_OP_CREATE_QP, &req, sizeof(req),
			     &resp, sizeof(resp), &fd, 1);
	if (ret)
		goto err_free;
	qp->map_size = resp.map_size;
	qp->map = mmap(NULL, qp->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	if (qp->map == MAP_FAILED) {
		ret = errno;
		goto err_destroy;
	}
	if (resp.sq_offset >= qp->map_size ||
	    (!attr->srq && resp.rq_offset >= qp->map_size)) {
		ret = EPROTO;
		goto err_unmap;
	}
	ret = mrce_ring_attach(&qp->sq, (uint8_t *)qp->map + resp.sq_offset,
			       qp->map_size - resp.sq_offset,
			       MRCE_RING_KIND_SQ, MRCE_WQE_SIZE);
	if (ret)
		goto err_unmap;
	/* A QP on an SRQ takes its receives from there: its RQ is unused. */
	qp->has_rq = !attr->srq;
	if (qp->has_rq) {
		ret = mrce_ring_attach(&qp->rq,
				       (uint8_t *)qp->map + resp.rq_offset,
				       qp->map_size - resp.rq_offset,
				       MRCE_RING_KIND_RQ, MRCE_WQE_SIZE);
		if (ret)
			goto err_unmap;
	}

	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	mrce_cap_from_resp(&qp->cap, &resp);
	if (attr->srq) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	}
	attr->cap = qp->cap;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->is_qp_ex = is_qp_ex;
	qp->send_ops_flags = send_ops;
	qp->ibv_qp.context = ibctx;
	qp->ibv_qp.qp_context = attr->qp_context;
	qp->ibv_qp.pd = pd;
	qp->ibv_qp.send_cq = attr->send_cq;
	qp->ibv_qp.recv_cq = attr->recv_cq;
	qp->ibv_qp.srq = attr->srq;
	qp->ibv_qp.handle = resp.handle;
	qp->ibv_qp.qp_num = resp.qp_num;
	qp->ibv_qp.state = IBV_QPS_RESET;
	qp->ibv_qp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibv_qp.mutex, NULL);
	pthread_cond_init(&qp->ibv_qp.cond, NULL);
	mrce_qp_ex_init(qp);
	pthread_mutex_lock(&ctx->obj_lock);
	qp->next_in_ctx = ctx->qps;
	ctx->qps = qp;
	pthread_mutex_unlock(&ctx->obj_lock);
	return &qp->ibv_qp;

err_unmap:
	munmap(qp->map, qp->map_size);
err_destroy:
	mrce_destroy_cmd(ctx, MRCE_OP_DESTROY_QP, resp.handle);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *mrce_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return mrce_qp_new(pd, attr, false, 0);
}

/*
 * ibv_create_qp_ex: a PD is required; send_ops_flags (the ibv_wr_* opcodes
 * the app will use) must be ones the QP type carries; XRC, RSS, TSO,
 * source QPN and create flags are not supported.
 */
struct ibv_qp *mrce_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
			       IBV_QP_INIT_ATTR_IND_TABLE |
			       IBV_QP_INIT_ATTR_RX_HASH |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	uint64_t allowed;
	bool ex = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;

	if ((attr->comp_mask & ~known) || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    !attr->pd || attr->pd->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & (IBV_QP_INIT_ATTR_XRCD |
				IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				IBV_QP_INIT_ATTR_IND_TABLE |
				IBV_QP_INIT_ATTR_RX_HASH)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	allowed = attr->qp_type == IBV_QPT_UD ? MRCE_UD_SEND_OPS :
						MRCE_RC_SEND_OPS;
	if (ex && (attr->send_ops_flags & ~allowed)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* The first fields of ibv_qp_init_attr_ex are an ibv_qp_init_attr. */
	return mrce_qp_new(attr->pd, (struct ibv_qp_init_attr *)attr, ex,
			   ex ? attr->send_ops_flags : 0);
}

/* As libibverbs: only a QP made with send_ops_flags has an ibv_qp_ex. */
struct ibv_qp_ex *mrce_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct mrce_qp *qp = to_mqp(ibqp);

	if (!qp->is_qp_ex) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return &qp->ibv_qp_ex;
}

static void mrce_attr_to_wire(struct mrce_qp_attr *w,
			      const struct ibv_qp_attr *a)
{
	memset(w, 0, sizeof(*w));
	w->qp_state = a->qp_state;
	w->cur_qp_state = a->cur_qp_state;
	w->path_mtu = a->path_mtu;
	w->qkey = a->qkey;
	w->rq_psn = a->rq_psn;
	w->sq_psn = a->sq_psn;
	w->dest_qp_num = a->dest_qp_num;
	w->qp_access_flags = (uint32_t)a->qp_access_flags;
	w->max_send_wr = a->cap.max_send_wr;
	w->max_recv_wr = a->cap.max_recv_wr;
	w->max_send_sge = a->cap.max_send_sge;
	w->max_recv_sge = a->cap.max_recv_sge;
	w->max_inline_data = a->cap.max_inline_data;
	w->flow_label = a->ah_attr.grh.flow_label;
	memcpy(w->dgid, a->ah_attr.grh.dgid.raw, sizeof(w->dgid));
	w->sgid_index = a->ah_attr.grh.sgid_index;
	w->hop_limit = a->ah_attr.grh.hop_limit;
	w->traffic_class = a->ah_attr.grh.traffic_class;
	w->is_global = a->ah_attr.is_global;
	w->dlid = a->ah_attr.dlid;
	w->sl = a->ah_attr.sl;
	w->src_path_bits = a->ah_attr.src_path_bits;
	w->static_rate = a->ah_attr.static_rate;
	w->ah_port_num = a->ah_attr.port_num;
	w->pkey_index = a->pkey_index;
	w->en_sqd_async_notify = a->en_sqd_async_notify;
	w->sq_draining = a->sq_draining;
	w->max_rd_atomic = a->max_rd_atomic;
	w->max_dest_rd_atomic = a->max_dest_rd_atomic;
	w->min_rnr_timer = a->min_rnr_timer;
	w->port_num = a->port_num;
	w->timeout = a->timeout;
	w->retry_cnt = a->retry_cnt;
	w->rnr_retry = a->rnr_retry;
}

static void mrce_attr_from_wire(struct ibv_qp_attr *a,
				const struct mrce_qp_attr *w)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = (enum ibv_qp_state)w->qp_state;
	a->cur_qp_state = (enum ibv_qp_state)w->cur_qp_state;
	a->path_mtu = (enum ibv_mtu)w->path_mtu;
	a->qkey = w->qkey;
	a->rq_psn = w->rq_psn;
	a->sq_psn = w->sq_psn;
	a->dest_qp_num = w->dest_qp_num;
	a->qp_access_flags = (unsigned int)w->qp_access_flags;
	a->cap.max_send_wr = w->max_send_wr;
	a->cap.max_recv_wr = w->max_recv_wr;
	a->cap.max_send_sge = w->max_send_sge;
	a->cap.max_recv_sge = w->max_recv_sge;
	a->cap.max_inline_data = w->max_inline_data;
	a->ah_attr.grh.flow_label = w->flow_label;
	memcpy(a->ah_attr.grh.dgid.raw, w->dgid, sizeof(w->dgid));
	a->ah_attr.grh.sgid_index = w->sgid_index;
	a->ah_attr.grh.hop_limit = w->hop_limit;
	a->ah_attr.grh.traffic_class = w->traffic_class;
	a->ah_attr.is_global = w->is_global;
	a->ah_attr.dlid = w->dlid;
	a->ah_attr.sl = w->sl;
	a->ah_attr.src_path_bits = w->src_path_bits;
	a->ah_attr.static_rate = w->static_rate;
	a->ah_attr.port_num = w->ah_port_num;
	a->pkey_index = w->pkey_index;
	a->en_sqd_async_notify = w->en_sqd_async_notify;
	a->sq_draining = w->sq_draining;
	a->max_rd_atomic = w->max_rd_atomic;
	a->max_dest_rd_atomic = w->max_dest_rd_atomic;
	a->min_rnr_timer = w->min_rnr_timer;
	a->port_num = w->port_num;
	a->timeout = w->timeout;
	a->retry_cnt = w->retry_cnt;
	a->rnr_retry = w->rnr_retry;
}

int mrce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct mrce_modify_qp_req req = {
		.handle = ibqp->handle,
		.attr_mask = (uint32_t)mask,
	};
	int ret;

	mrce_attr_to_wire(&req.attr, attr);
	ret = mrce_conn_call(&ctx_of(ibqp->context)->conn, MRCE_OP_MODIFY_QP,
			     &req, sizeof(req), NULL, 0, NULL, 0);
	if (ret)
		return ret;
	if (mask & IBV_QP_STATE)
		__atomic_store_n(&ibqp->state, attr->qp_state,
				 __ATOMIC_RELEASE);
	return 0;
}

int mrce_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr)
{
	struct mrce_qp *qp = to_mqp(ibqp);
	struct mrce_handle_req req = { .handle = ibqp->handle };
	struct mrce_qp_attr w;
	int ret;

	(void)mask; /* every field is valid in the answer */
	ret = mrce_conn_call(&ctx_of(ibqp->context)->conn, MRCE_OP_QUERY_QP,
			     &req, sizeof(req), &w, sizeof(w), NULL, 0);
	if (ret)
		return ret;
	mrce_attr_from_wire(attr, &w);
	attr->cap = qp->cap; /* fixed at create time; ours is the reference */
	/* The daemon moves a QP to ERR on its own (transport errors). */
	__atomic_store_n(&ibqp->state, attr->qp_state, __ATOMIC_RELEASE);
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}

int mrce_destroy_qp(struct ibv_qp *ibqp)
{
	struct mrce_qp *qp = to_mqp(ibqp);
	struct mrce_context *ctx = ctx_of(ibqp->context);
	int ret;

	ret = mrce_destroy_cmd(ctx, MRCE_OP_DESTROY_QP, ibqp->handle);
	if (ret)
		return ret;
	pthread_mutex_lock(&ctx->obj_lock);
	MRCE_UNLINK(ctx->qps, qp);
	pthread_mutex_unlock(&ctx->obj_lock);
	/* As the man page says: wait until every async event is acked. */
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->async_given)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
	munmap(qp->map, qp->map_size);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	free(qp);
	return 0;
}
