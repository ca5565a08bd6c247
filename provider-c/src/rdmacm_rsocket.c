// SPDX-License-Identifier: Apache-2.0
/*
 * rsockets (rdma/rsocket.h) for libmetaroce-rdmacm.so: stream sockets over
 * an RC QP that this library's own rdma_* functions connect. librdmacm's
 * rsockets reach into its private id structures, so they cannot run on ids
 * served by the daemons; this is MetaRoCE's own implementation, and both
 * ends must use it (its wire format is not librdmacm's).
 *
 * Wire format: every message is a SEND_WITH_IMM. The immediate carries the
 * receive credits the sender gives back (bits 0..27) and the kind (bits
 * 28..31): data (the payload is stream bytes), credit-only, FIN (no more
 * data from the sender), IOMAP (the payload is a struct rs_iomap_msg: the
 * sender's riomap'ed buffer). Data messages spend one of the peer's data
 * credits (RS_RBUFS of them); control messages spend none: the receiver
 * reposts their buffer as soon as it sees them, and keeps RS_XBUFS receives
 * beyond the data ones for them (a receiver sends at most one credit-only
 * message per data message it consumed, so a few are in flight at most).
 * riowrite is an RDMA WRITE into the peer's mapping; the peer learns of it
 * by watching its memory, as with librdmacm.
 *
 * One thread at a time per rsocket (as rstream and riostream use them).
 *
 * Long because every r* call works on the same private rsocket state.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdmacm.h"
#include <rdma/rsocket.h>

#define EXPORT __attribute__((visibility("default")))

#define RS_BUF 16384u     /* one message's payload */
#define RS_RBUFS 64u      /* receives for data (the peer's credits) */
#define RS_XBUFS 32u      /* receives beyond those, for control messages */
#define RS_NRECV (RS_RBUFS + RS_XBUFS)
#define RS_SBUFS 32u      /* send staging slots */
#define RS_SQ (RS_SBUFS + 32u)
#define RS_CQ (RS_SQ + RS_NRECV)

#define RS_K_DATA 0u
#define RS_K_CREDIT 1u
#define RS_K_FIN 2u
#define RS_K_IOMAP 3u
#define RS_IMM(kind, credits) (((uint32_t)(kind) << 28) | ((credits) & 0x0fffffffu))
#define RS_IMM_KIND(imm) ((imm) >> 28)
#define RS_IMM_CREDITS(imm) ((imm) & 0x0fffffffu)
#define RS_WR_RECV (1ull << 63)
#define RS_WR_CTRL (1ull << 62)

enum rs_state { RS_NEW, RS_BOUND, RS_LISTEN, RS_CONNECTED, RS_CLOSED };

struct rs_iomap_msg {
	uint64_t addr;
	uint64_t offset;
	uint64_t len;
	uint32_t rkey;
	uint32_t pad;
};

struct rs_local_map {
	void *buf;
	size_t len;
	struct ibv_mr *mr;
};

struct rs {
	int fd;                 /* the number the application holds: an eventfd of ours */
	enum rs_state state;
	bool nonblock;
	int so_error;           /* SO_ERROR: the outcome of the last connect */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_cm_event *pending;  /* a listener's CONNECT_REQUEST not yet accepted */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *rmr, *smr;
	uint8_t *rbuf, *sbuf;
	/* received data messages in order: buffer index, length, bytes consumed */
	uint32_t rq_idx[RS_NRECV], rq_len[RS_NRECV], rq_head, rq_count, rq_off;
	uint32_t credits;       /* the peer's data receives we may fill */
	uint32_t unreported;    /* data receives reposted, not yet given back */
	uint32_t peer_credits;  /* what the peer believes it may send */
	uint32_t sfree[RS_SBUFS], nsfree; /* free staging slots */
	uint32_t sq_busy;       /* send WRs outstanding */
	bool fin_rcvd, fin_sent, broken;
	struct rs_iomap_msg peer_map; /* the peer's latest riomap (len 0: none) */
	struct rs_local_map map;      /* ours */
};

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rs **tab;
static int tab_len;

static int rs_fail(int err)
{
	errno = err;
	return -1;
}

static struct rs *rs_connected(int fd);
static struct rs *rs_in(int fd, enum rs_state want, int err);

static struct rs *rs_get(int fd)
{
	struct rs *s = NULL;

	pthread_mutex_lock(&tab_lock);
	if (fd >= 0 && fd < tab_len)
		s = tab[fd];
	pthread_mutex_unlock(&tab_lock);
	return s;
}

static int rs_put_tab(struct rs *s)
{
	pthread_mutex_lock(&tab_lock);
	if (s->fd >= tab_len) {
		int n = s->fd + 64;
		struct rs **t = realloc(tab, (size_t)n * sizeof(*t));

		if (!t) {
			pthread_mutex_unlock(&tab_lock);
			return ENOMEM;
		}
		memset(t + tab_len, 0, (size_t)(n - tab_len) * sizeof(*t));
		tab = t;
		tab_len = n;
	}
	tab[s->fd] = s;
	pthread_mutex_unlock(&tab_lock);
	return 0;
}

static struct rs *rs_alloc(void)
{
	struct rs *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->fd < 0 || rs_put_tab(s)) {
		if (s->fd >= 0)
			close(s->fd);
		free(s);
		return NULL;
	}
	return s;
}

static void rs_free_res(struct rs *s)
{
	if (s->id && s->id->qp)
		rdma_destroy_qp(s->id);
	if (s->map.mr)
		ibv_dereg_mr(s->map.mr);
	if (s->rmr)
		ibv_dereg_mr(s->rmr);
	if (s->smr)
		ibv_dereg_mr(s->smr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->cc)
		ibv_destroy_comp_channel(s->cc);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	free(s->rbuf);
	free(s->sbuf);
	s->map.mr = s->rmr = s->smr = NULL;
	s->cq = NULL;
	s->cc = NULL;
	s->pd = NULL;
	s->rbuf = s->sbuf = NULL;
}

static void rs_destroy(struct rs *s)
{
	rs_free_res(s);
	if (s->pending)
		rdma_ack_cm_event(s->pending);
	if (s->id)
		rdma_destroy_id(s->id);
	if (s->ch)
		rdma_destroy_event_channel(s->ch);
	pthread_mutex_lock(&tab_lock);
	tab[s->fd] = NULL;
	pthread_mutex_unlock(&tab_lock);
	close(s->fd);
	free(s);
}

/* ---- the data path ---- */

static int post_recv(struct rs *s, uint32_t idx)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(s->rbuf + (size_t)idx * RS_BUF),
			       .length = RS_BUF, .lkey = s->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV | idx, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(s->id->qp, &wr, &bad);
}

/* Posts a message from staging slot SLOT (UINT32_MAX: none, LEN 0). */
static int post_send(struct rs *s, uint32_t slot, uint32_t len, uint32_t imm,
		     enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { 0 };
	struct ibv_send_wr wr = { .opcode = op, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	int ret;

	wr.wr_id = slot == UINT32_MAX ? RS_WR_CTRL : slot;
	if (slot != UINT32_MAX) {
		sge.addr = (uintptr_t)(s->sbuf + (size_t)slot * RS_BUF);
		sge.length = len;
		sge.lkey = s->smr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	if (op == IBV_WR_SEND_WITH_IMM) {
		wr.imm_data = htonl(imm);
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	ret = ibv_post_send(s->id->qp, &wr, &bad);
	if (ret)
		return ret;
	s->sq_busy++;
	return 0;
}

/* Gives back the reposted data receives in a credit-only message when the peer needs them. */
static void maybe_credit(struct rs *s)
{
	if (s->broken || !s->unreported || s->sq_busy >= RS_SQ)
		return;
	if (s->unreported < RS_RBUFS / 2 && s->peer_credits > 0)
		return;
	if (post_send(s, UINT32_MAX, 0, RS_IMM(RS_K_CREDIT, s->unreported),
		      IBV_WR_SEND_WITH_IMM, 0, 0)) {
		s->broken = true;
		return;
	}
	s->peer_credits += s->unreported;
	s->unreported = 0;
}

/* Takes what the CQ holds; non-blocking. Returns how many completions it took. */
static int progress(struct rs *s)
{
	struct ibv_wc wc[16];
	int n, i, took = 0;

	if (!s->cq)
		return 0;
	while ((n = ibv_poll_cq(s->cq, 16, wc)) > 0) {
		took += n;
		for (i = 0; i < n; i++) {
			struct ibv_wc *w = &wc[i];

			if (!(w->wr_id & RS_WR_RECV)) {
				s->sq_busy--;
				if (!(w->wr_id & RS_WR_CTRL))
					s->sfree[s->nsfree++] = (uint32_t)w->wr_id;
				if (w->status != IBV_WC_SUCCESS)
					s->broken = true;
				continue;
			}
			if (w->status != IBV_WC_SUCCESS) {
				/* flushed at disconnect: what came before is kept, then EOF */
				s->broken = true;
				continue;
			}
			uint32_t idx = (uint32_t)(w->wr_id & 0xffffffffu);
			uint32_t imm = ntohl(w->imm_data);

			s->credits += RS_IMM_CREDITS(imm);
			switch (RS_IMM_KIND(imm)) {
			case RS_K_DATA:
				if (w->byte_len) {
					uint32_t at = (s->rq_head + s->rq_count) % RS_NRECV;

					s->rq_idx[at] = idx;
					s->rq_len[at] = w->byte_len;
					s->rq_count++;
					s->peer_credits--;
					continue;
				}
				break;
			case RS_K_FIN:
				s->fin_rcvd = true;
				break;
			case RS_K_IOMAP:
				if (w->byte_len >= sizeof(s->peer_map))
					memcpy(&s->peer_map, s->rbuf + (size_t)idx * RS_BUF,
					       sizeof(s->peer_map));
				break;
			default:
				break;
			}
			if (post_recv(s, idx))
				s->broken = true;
		}
	}
	if (n < 0)
		s->broken = true;
	maybe_credit(s);
	return took;
}

static int set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* Handles the rdma_cm events of a connected socket (DISCONNECTED); non-blocking. */
static void cm_events(struct rs *s)
{
	struct rdma_cm_event *ev;

	if (set_nonblock(s->ch->fd, true))
		return;
	while (!rdma_get_cm_event(s->ch, &ev)) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			s->broken = true;
		rdma_ack_cm_event(ev);
	}
}

/* Waits until the CQ or the rdma_cm channel has something, or TIMEOUT_MS. */
static void wait_for(struct rs *s, int timeout_ms)
{
	struct pollfd p[2] = { { .fd = s->cc->fd, .events = POLLIN },
			       { .fd = s->ch->fd, .events = POLLIN } };
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_req_notify_cq(s->cq, 0)) {
		s->broken = true;
		return;
	}
	if (progress(s)) /* came in before the arming: no need to sleep */
		return;
	if (poll(p, 2, timeout_ms) <= 0)
		return;
	if ((p[0].revents & POLLIN) && !ibv_get_cq_event(s->cc, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
	if (p[1].revents & POLLIN)
		cm_events(s);
}

static bool readable(struct rs *s)
{
	return s->rq_count || s->fin_rcvd || s->broken;
}

static bool writable(struct rs *s)
{
	return s->broken || (s->credits && s->nsfree && s->sq_busy < RS_SQ);
}

/* ---- connection set-up ---- */

/* Waits for the next event of S's channel; *out must be acked. */
static int next_event(struct rs *s, struct rdma_cm_event **out)
{
	if (set_nonblock(s->ch->fd, false))
		return errno;
	if (rdma_get_cm_event(s->ch, out))
		return errno;
	return 0;
}

static int expect(struct rs *s, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int ret = next_event(s, &ev), got;

	if (ret)
		return ret;
	got = ev->event;
	ret = got == (int)want ? 0 :
		got == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED :
		got == RDMA_CM_EVENT_UNREACHABLE ? ETIMEDOUT :
		got == RDMA_CM_EVENT_ADDR_ERROR || got == RDMA_CM_EVENT_ROUTE_ERROR ?
			EHOSTUNREACH : ECONNRESET;
	rdma_ack_cm_event(ev);
	return ret;
}

/* PD, CQ, buffers and QP for S's id, receives posted. */
static int setup_qp(struct rs *s)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = RS_SQ, .max_recv_wr = RS_NRECV,
					       .max_send_sge = 1, .max_recv_sge = 1 } };
	size_t rlen = (size_t)RS_NRECV * RS_BUF, slen = (size_t)RS_SBUFS * RS_BUF;
	uint32_t i;

	s->pd = ibv_alloc_pd(s->id->verbs);
	s->cc = s->pd ? ibv_create_comp_channel(s->id->verbs) : NULL;
	s->cq = s->cc ? ibv_create_cq(s->id->verbs, RS_CQ, s, s->cc, 0) : NULL;
	s->rbuf = s->cq ? malloc(rlen) : NULL;
	s->sbuf = s->rbuf ? malloc(slen) : NULL;
	if (!s->sbuf)
		return errno ? errno : ENOMEM;
	if (set_nonblock(s->cc->fd, true))
		return errno;
	s->rmr = ibv_reg_mr(s->pd, s->rbuf, rlen, IBV_ACCESS_LOCAL_WRITE);
	s->smr = s->rmr ? ibv_reg_mr(s->pd, s->sbuf, slen, 0) : NULL;
	if (!s->smr)
		return errno ? errno : ENOMEM;
	a.send_cq = a.recv_cq = s->cq;
	if (rdma_create_qp(s->id, s->pd, &a))
		return errno;
	for (i = 0; i < RS_NRECV; i++)
		if (post_recv(s, i))
			return EIO;
	for (i = 0; i < RS_SBUFS; i++)
		s->sfree[i] = i;
	s->nsfree = RS_SBUFS;
	s->credits = RS_RBUFS;
	s->peer_credits = RS_RBUFS;
	return 0;
}

static void conn_param(struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rs *s;

	if (domain != AF_INET && domain != AF_INET6)
		return rs_fail(EAFNOSUPPORT);
	if ((type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) != SOCK_STREAM ||
	    (protocol && protocol != IPPROTO_TCP))
		return rs_fail(EPROTONOSUPPORT);
	s = rs_alloc();
	if (!s)
		return rs_fail(ENOMEM);
	s->nonblock = type & SOCK_NONBLOCK;
	s->ch = rdma_create_event_channel();
	if (!s->ch || rdma_create_id(s->ch, &s->id, s, RDMA_PS_TCP)) {
		int err = errno;

		rs_destroy(s);
		return rs_fail(err);
	}
	return s->fd;
}

EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs *s = rs_in(socket, RS_NEW, EINVAL);

	if (!s)
		return -1;
	if (!addr || addrlen < sizeof(struct sockaddr_in) || addrlen < rc_addr_len(addr))
		return rs_fail(EINVAL);
	if (rdma_bind_addr(s->id, (struct sockaddr *)addr))
		return -1;
	s->state = RS_BOUND;
	return 0;
}

EXPORT int rlisten(int socket, int backlog)
{
	struct rs *s = rs_in(socket, RS_BOUND, EINVAL);

	if (!s)
		return -1;
	if (rdma_listen(s->id, backlog))
		return -1;
	s->state = RS_LISTEN;
	return 0;
}

/* A listener's next CONNECT_REQUEST into l->pending; EAGAIN when none (non-blocking). */
static int take_request(struct rs *l, bool block)
{
	struct rdma_cm_event *ev;

	while (!l->pending) {
		if (set_nonblock(l->ch->fd, !block) || rdma_get_cm_event(l->ch, &ev))
			return errno;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			l->pending = ev;
		else
			rdma_ack_cm_event(ev);
	}
	return 0;
}

EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs *l = rs_in(socket, RS_LISTEN, EINVAL), *s;
	struct rdma_conn_param p;
	struct rdma_cm_id *cid;
	int ret;

	if (!l)
		return -1;
	ret = take_request(l, !l->nonblock);
	if (ret)
		return rs_fail(ret);
	cid = l->pending->id;
	rdma_ack_cm_event(l->pending);
	l->pending = NULL;
	s = rs_alloc();
	if (!s) {
		rdma_reject(cid, NULL, 0);
		rdma_destroy_id(cid);
		return rs_fail(ENOMEM);
	}
	s->id = cid;
	cid->context = s;
	s->ch = rdma_create_event_channel();
	ret = !s->ch || rdma_migrate_id(cid, s->ch) ? errno : setup_qp(s);
	if (!ret) {
		conn_param(&p);
		ret = rdma_accept(cid, &p) ? errno : expect(s, RDMA_CM_EVENT_ESTABLISHED);
	} else {
		rdma_reject(cid, NULL, 0);
	}
	if (ret) {
		rs_destroy(s);
		return rs_fail(ret);
	}
	s->state = RS_CONNECTED;
	if (addr && addrlen) {
		socklen_t len = rc_addr_len(rdma_get_peer_addr(cid));
		socklen_t n = *addrlen < len ? *addrlen : len;

		memcpy(addr, rdma_get_peer_addr(cid), n);
		*addrlen = len;
	}
	return s->fd;
}

/* Connects before returning, also on a non-blocking socket (a connect that completed at once). */
EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs *s = rs_get(socket);
	struct rdma_conn_param p;
	int ret;

	if (!s)
		return rs_fail(EBADF);
	if (s->state == RS_CONNECTED)
		return rs_fail(EISCONN);
	if ((s->state != RS_NEW && s->state != RS_BOUND) || !addr ||
	    addrlen < sizeof(struct sockaddr_in) || addrlen < rc_addr_len(addr))
		return rs_fail(EINVAL);
	ret = rdma_resolve_addr(s->id, NULL, (struct sockaddr *)addr, 10000) ? errno :
		expect(s, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!ret)
		ret = rdma_resolve_route(s->id, 10000) ? errno :
			expect(s, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!ret)
		ret = setup_qp(s);
	if (!ret) {
		conn_param(&p);
		ret = rdma_connect(s->id, &p) ? errno : expect(s, RDMA_CM_EVENT_ESTABLISHED);
	}
	s->so_error = ret;
	if (ret) {
		rs_free_res(s);
		s->state = RS_CLOSED;
		return rs_fail(ret);
	}
	s->state = RS_CONNECTED;
	return 0;
}

/* ---- data ---- */

/* The rsocket numbered FD in state WANT, or NULL with errno EBADF (no such rsocket) or ERR. */
static struct rs *rs_in(int fd, enum rs_state want, int err)
{
	struct rs *s = rs_get(fd);

	if (!s || s->state != want) {
		errno = s ? err : EBADF;
		return NULL;
	}
	return s;
}

static struct rs *rs_connected(int fd)
{
	return rs_in(fd, RS_CONNECTED, ENOTCONN);
}

/* Copies N bytes into a free staging slot and posts them; false (S broken) when the post fails. */
static bool post_staged(struct rs *s, const void *src, uint32_t n, uint32_t imm,
			enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey)
{
	uint32_t slot = s->sfree[--s->nsfree];

	memcpy(s->sbuf + (size_t)slot * RS_BUF, src, n);
	if (post_send(s, slot, n, imm, op, raddr, rkey)) {
		s->sfree[s->nsfree++] = slot;
		s->broken = true;
		return false;
	}
	return true;
}

static bool nonblocking(struct rs *s, int flags)
{
	return s->nonblock || (flags & MSG_DONTWAIT);
}

/* Posts what the send credits allow of SRC's N bytes; the bytes posted. */
static size_t send_some(struct rs *s, const uint8_t *src, size_t len)
{
	size_t done = 0;

	while (done < len && writable(s) && !s->broken) {
		uint32_t n = len - done > RS_BUF ? RS_BUF : (uint32_t)(len - done);

		if (!post_staged(s, src + done, n, RS_IMM(RS_K_DATA, s->unreported),
				 IBV_WR_SEND_WITH_IMM, 0, 0))
			break;
		s->peer_credits += s->unreported;
		s->unreported = 0;
		s->credits--;
		done += n;
		progress(s);
	}
	return done;
}

/* Copies what has arrived, up to LEN bytes, to DST, reposting each receive it empties; the bytes copied. */
static size_t recv_some(struct rs *s, uint8_t *dst, size_t len)
{
	size_t done = 0;

	while (done < len && s->rq_count) {
		uint32_t idx = s->rq_idx[s->rq_head], left = s->rq_len[s->rq_head] - s->rq_off;
		uint32_t n = len - done < left ? (uint32_t)(len - done) : left;

		memcpy(dst + done, s->rbuf + (size_t)idx * RS_BUF + s->rq_off, n);
		done += n;
		s->rq_off += n;
		if (s->rq_off == s->rq_len[s->rq_head]) {
			s->rq_off = 0;
			s->rq_head = (s->rq_head + 1) % RS_NRECV;
			s->rq_count--;
			if (!s->broken && post_recv(s, idx))
				s->broken = true;
			s->unreported++;
		}
	}
	maybe_credit(s);
	return done;
}

/*
 * rsend (OUT) and rrecv: moves what it can, then returns or waits for
 * progress. A send returns once all is posted (a non-blocking one: once
 * something is), EPIPE after the end of the stream or a failure; a receive
 * once something arrived (all, with MSG_WAITALL) or at the end of the stream
 * (0 then). Non-blocking, with nothing moved: EAGAIN.
 */
static ssize_t stream_io(int socket, uint8_t *buf, size_t len, int flags, bool out)
{
	struct rs *s = rs_connected(socket);
	size_t done = 0;

	if (!s)
		return -1;
	for (;;) {
		progress(s);
		if (out && (s->broken || s->fin_sent))
			return done ? (ssize_t)done : rs_fail(EPIPE);
		done += out ? send_some(s, buf + done, len - done) : recv_some(s, buf + done, len - done);
		if (done == len || (done && (out ? nonblocking(s, flags) : !(flags & MSG_WAITALL))))
			return (ssize_t)done;
		if (!out && (s->fin_rcvd || s->broken))
			return (ssize_t)done; /* end of stream */
		if (nonblocking(s, flags))
			return done ? (ssize_t)done : rs_fail(EAGAIN);
		if (!s->broken)
			wait_for(s, -1);
	}
}

EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return stream_io(socket, (uint8_t *)buf, len, flags, true);
}

EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return stream_io(socket, buf, len, flags, false);
}

EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			 struct sockaddr *src_addr, socklen_t *addrlen)
{
	(void)src_addr;
	if (addrlen)
		*addrlen = 0;
	return rrecv(socket, buf, len, flags);
}

EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		       const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)dest_addr;
	(void)addrlen;
	return rsend(socket, buf, len, flags);
}

static ssize_t iov_io(int socket, const struct iovec *iov, int cnt, int flags, bool out)
{
	ssize_t total = 0;
	int i;

	for (i = 0; i < cnt; i++) {
		ssize_t n;

		if (!iov[i].iov_len)
			continue;
		n = out ? rsend(socket, iov[i].iov_base, iov[i].iov_len, flags) :
			rrecv(socket, iov[i].iov_base, iov[i].iov_len, flags);
		if (n < 0)
			return total ? total : n;
		total += n;
		if ((size_t)n < iov[i].iov_len)
			break;
	}
	return total;
}

EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return iov_io(socket, iov, iovcnt, 0, false);
}

EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return iov_io(socket, iov, iovcnt, 0, true);
}

EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return iov_io(socket, msg->msg_iov, (int)msg->msg_iovlen, flags, false);
}

EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return iov_io(socket, msg->msg_iov, (int)msg->msg_iovlen, flags, true);
}

/* ---- riomap / riowrite ---- */

EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rs *s = rs_connected(socket);
	struct rs_iomap_msg m;

	(void)flags;
	if (!s)
		return -1;
	if (prot != PROT_WRITE || !len)
		return rs_fail(EINVAL);
	if (s->map.mr)
		return rs_fail(ENOMEM); /* one mapping at a time (RDMA_IOMAPSIZE 1) */
	if (offset == -1)
		offset = 0;
	s->map.mr = ibv_reg_mr(s->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->map.mr)
		return -1;
	s->map.buf = buf;
	s->map.len = len;
	while (!s->nsfree || s->sq_busy >= RS_SQ) {
		if (s->broken)
			return rs_fail(ECONNRESET);
		wait_for(s, -1);
		progress(s);
	}
	m = (struct rs_iomap_msg){ .addr = (uintptr_t)buf, .offset = (uint64_t)offset,
				   .len = len, .rkey = s->map.mr->rkey };
	if (!post_staged(s, &m, sizeof(m), RS_IMM(RS_K_IOMAP, 0), IBV_WR_SEND_WITH_IMM, 0, 0))
		return rs_fail(ECONNRESET);
	return offset;
}

EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rs *s = rs_get(socket);

	if (!s)
		return rs_fail(EBADF);
	if (!s->map.mr || s->map.buf != buf || s->map.len != len)
		return rs_fail(EINVAL);
	ibv_dereg_mr(s->map.mr);
	s->map.mr = NULL;
	return 0;
}

EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rs *s = rs_connected(socket);
	size_t done = 0;

	if (!s)
		return (size_t)-1;
	for (;;) {
		struct rs_iomap_msg *m = &s->peer_map;

		progress(s);
		if (s->broken)
			return done ? done : (size_t)rs_fail(EPIPE);
		if (!m->len || (uint64_t)offset < m->offset ||
		    (uint64_t)offset - m->offset + count > m->len)
			return done ? done : (size_t)rs_fail(EINVAL);
		while (done < count && s->nsfree && s->sq_busy < RS_SQ) {
			uint32_t n = count - done > RS_BUF ? RS_BUF : (uint32_t)(count - done);

			/*
			 * The last byte goes alone, once every write before it is
			 * acknowledged (placed): packets are placed as they come,
			 * and a peer that watches that byte (riostream) must find
			 * the rest in place when it sees it.
			 */
			if (done + n == count && n > 1)
				n--;
			else if (done + n == count && s->sq_busy)
				break;
			if (!post_staged(s, (const uint8_t *)buf + done, n, 0, IBV_WR_RDMA_WRITE,
					 m->addr + ((uint64_t)offset - m->offset) + done, m->rkey))
				break;
			done += n;
		}
		if (done == count || (done && nonblocking(s, flags)))
			return done;
		if (nonblocking(s, flags))
			return (size_t)rs_fail(EAGAIN);
		wait_for(s, -1);
	}
}

/* ---- poll, select ---- */

static short rs_revents(struct rs *s, short events)
{
	short r = 0;

	if (s->state == RS_LISTEN) {
		if ((events & POLLIN) && !take_request(s, false))
			r |= POLLIN;
		return r;
	}
	if (s->state != RS_CONNECTED)
		return s->state == RS_CLOSED ? POLLHUP : 0;
	progress(s);
	cm_events(s);
	if ((events & POLLIN) && readable(s))
		r |= POLLIN;
	if ((events & POLLOUT) && writable(s))
		r |= POLLOUT;
	/*
	 * A hang-up once what arrived is read: the peer's disconnect can
	 * overtake a reader that has not taken the last messages yet, and a
	 * caller that stops at POLLHUP (rstream) must first see them (TCP
	 * reports the peer's FIN as readable, not as a hang-up, too).
	 */
	if (s->broken && !s->rq_count)
		r |= POLLHUP;
	return r;
}

EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *w;
	nfds_t i, k;
	int ready;

	w = calloc(nfds * 2 + 1, sizeof(*w));
	if (!w)
		return rs_fail(ENOMEM);
	for (;;) {
		ready = 0;
		k = 0;
		for (i = 0; i < nfds; i++) {
			struct rs *s = rs_get(fds[i].fd);

			fds[i].revents = 0;
			if (!s) {
				struct pollfd one = fds[i];

				if (poll(&one, 1, 0) < 0) {
					free(w);
					return -1;
				}
				fds[i].revents = one.revents;
			} else {
				fds[i].revents = rs_revents(s, fds[i].events);
			}
			if (fds[i].revents)
				ready++;
		}
		if (ready || !timeout)
			break;
		/* nothing yet: arm, look once more, then sleep on the real fds */
		for (i = 0; i < nfds; i++) {
			struct rs *s = rs_get(fds[i].fd);

			if (!s) {
				w[k++] = fds[i];
			} else if (s->state == RS_LISTEN) {
				w[k++] = (struct pollfd){ .fd = s->ch->fd, .events = POLLIN };
			} else if (s->state == RS_CONNECTED) {
				ibv_req_notify_cq(s->cq, 0);
				if (rs_revents(s, fds[i].events)) {
					k = 0;
					break;
				}
				w[k++] = (struct pollfd){ .fd = s->cc->fd, .events = POLLIN };
				w[k++] = (struct pollfd){ .fd = s->ch->fd, .events = POLLIN };
			}
		}
		if (!k)
			continue;
		if (poll(w, k, timeout) == 0) {
			ready = 0;
			break;
		}
		for (i = 0; i < nfds; i++) {
			struct rs *s = rs_get(fds[i].fd);
			struct ibv_cq *cq;
			void *ctx;

			if (s && s->state == RS_CONNECTED && !ibv_get_cq_event(s->cc, &cq, &ctx))
				ibv_ack_cq_events(cq, 1);
		}
		timeout = timeout < 0 ? -1 : 0; /* one sleep per call: look, then return */
	}
	free(w);
	return ready;
}

EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		   struct timeval *timeout)
{
	struct pollfd *p = calloc((size_t)(nfds > 0 ? nfds : 1), sizeof(*p));
	int i, n = 0, ret, to = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;

	if (!p)
		return rs_fail(ENOMEM);
	for (i = 0; i < nfds; i++) {
		short ev = (readfds && FD_ISSET(i, readfds) ? POLLIN : 0) |
			(writefds && FD_ISSET(i, writefds) ? POLLOUT : 0);

		if (ev || (exceptfds && FD_ISSET(i, exceptfds)))
			p[n++] = (struct pollfd){ .fd = i, .events = ev };
	}
	ret = rpoll(p, (nfds_t)n, to);
	if (ret >= 0) {
		ret = 0;
		if (readfds)
			FD_ZERO(readfds);
		if (writefds)
			FD_ZERO(writefds);
		if (exceptfds)
			FD_ZERO(exceptfds);
		for (i = 0; i < n; i++) {
			if (readfds && (p[i].revents & (POLLIN | POLLHUP))) {
				FD_SET(p[i].fd, readfds);
				ret++;
			}
			if (writefds && (p[i].revents & POLLOUT)) {
				FD_SET(p[i].fd, writefds);
				ret++;
			}
			if (exceptfds && (p[i].revents & POLLERR)) {
				FD_SET(p[i].fd, exceptfds);
				ret++;
			}
		}
	}
	free(p);
	return ret;
}

/* ---- shutdown, close, options, names ---- */

static void send_fin(struct rs *s)
{
	if (s->state != RS_CONNECTED || s->fin_sent || s->broken)
		return;
	while (s->sq_busy >= RS_SQ && !s->broken)
		wait_for(s, 1000);
	if (!s->broken && !post_send(s, UINT32_MAX, 0, RS_IMM(RS_K_FIN, s->unreported),
				     IBV_WR_SEND_WITH_IMM, 0, 0))
		s->unreported = 0;
	s->fin_sent = true;
}

EXPORT int rshutdown(int socket, int how)
{
	struct rs *s = rs_connected(socket);

	if (!s)
		return -1;
	if (how == SHUT_WR || how == SHUT_RDWR)
		send_fin(s);
	return 0;
}

EXPORT int rclose(int socket)
{
	struct rs *s = rs_get(socket);

	if (!s)
		return rs_fail(EBADF);
	if (s->state == RS_CONNECTED) {
		send_fin(s);
		/* what was posted is delivered before the disconnect flushes the QP */
		while (s->sq_busy && !s->broken)
			wait_for(s, 1000);
		rdma_disconnect(s->id);
	}
	rs_destroy(s);
	return 0;
}

EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	struct rs *s = rs_get(socket);

	(void)optname;
	(void)optval;
	(void)optlen;
	if (!s)
		return rs_fail(EBADF);
	/* buffer sizes, TCP_NODELAY, keepalive, inline and iomap sizes: fixed here */
	if (level == SOL_SOCKET || level == IPPROTO_TCP || level == SOL_RDMA)
		return 0;
	return rs_fail(ENOPROTOOPT);
}

EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rs *s = rs_get(socket);
	int v = 0;

	if (!s)
		return rs_fail(EBADF);
	if (!optval || !optlen || *optlen < sizeof(int))
		return rs_fail(EINVAL);
	if (level == SOL_SOCKET && optname == SO_ERROR) {
		v = s->so_error;
		s->so_error = 0;
	} else if (level == SOL_SOCKET && (optname == SO_SNDBUF || optname == SO_RCVBUF)) {
		v = (int)(optname == SO_SNDBUF ? RS_SBUFS : RS_RBUFS) * (int)RS_BUF;
	} else if (level == IPPROTO_TCP && optname == TCP_NODELAY) {
		v = 1;
	} else if (level != SOL_SOCKET && level != IPPROTO_TCP && level != SOL_RDMA) {
		return rs_fail(ENOPROTOOPT);
	}
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(v);
	return 0;
}

EXPORT int rfcntl(int socket, int cmd, ... /* arg */)
{
	struct rs *s = rs_get(socket);
	va_list ap;
	int arg;

	if (!s)
		return rs_fail(EBADF);
	switch (cmd) {
	case F_GETFL:
		return O_RDWR | (s->nonblock ? O_NONBLOCK : 0);
	case F_SETFL:
		va_start(ap, cmd);
		arg = va_arg(ap, int);
		va_end(ap);
		s->nonblock = arg & O_NONBLOCK;
		return 0;
	default:
		return rs_fail(ENOSYS);
	}
}

static int name_of(int socket, struct sockaddr *addr, socklen_t *addrlen, bool peer)
{
	struct rs *s = rs_get(socket);
	socklen_t n;

	if (!s)
		return rs_fail(EBADF);
	if (!addr || !addrlen)
		return rs_fail(EFAULT);
	if (peer && s->state != RS_CONNECTED)
		return rs_fail(ENOTCONN);
	{
		struct sockaddr *a = peer ? rdma_get_peer_addr(s->id) : rdma_get_local_addr(s->id);
		socklen_t len = rc_addr_len(a) ? rc_addr_len(a) : sizeof(struct sockaddr_in);

		n = *addrlen < len ? *addrlen : len;
		memcpy(addr, a, n);
		*addrlen = len;
	}
	return 0;
}

EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return name_of(socket, addr, addrlen, true);
}

EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return name_of(socket, addr, addrlen, false);
}
