// SPDX-License-Identifier: Apache-2.0
/*
 * A daemon control connection for the rdma_cm library (rdmacm.c): unlike the
 * provider's one-call-at-a-time mrce_conn, requests are pipelined (the CM
 * service's CM_CONNECT and CM_GET_REQUEST are long polls) and a reader
 * thread matches each response to its request by seq. A request either
 * waits for its answer (rc_conn_call) or names a callback that the reader
 * thread runs (rc_conn_send).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mrce.h"
#include "rdmacm.h"

struct rc_pend {
	uint32_t seq;
	rc_cb cb;       /* NULL: a waiting rc_conn_call */
	void *ctx;      /* NULL once forgotten */
	bool done;
	int status;
	uint32_t len;
	uint8_t resp[MRCE_CTRL_MAX_FRAME];
	struct rc_pend *next;
};

static void *reader_main(void *arg);

int rc_conn_open(struct rc_conn **out, struct mrce_hello_resp *hello,
		 void (*on_dead)(void *), void *owner)
{
	struct mrce_conn sync;
	struct mrce_hello_resp h;
	struct timeval none = { 0, 0 };
	struct rc_conn *c;
	int fds[2], ret;

	ret = mrce_conn_open(&sync, 10000);
	if (ret)
		return ret;
	ret = mrce_hello(&sync, &h, fds, 0);
	if (ret) {
		mrce_conn_close(&sync);
		return ret;
	}
	close(fds[0]);
	close(fds[1]);
	/* long polls from here on: no receive timeout */
	setsockopt(sync.fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	c = calloc(1, sizeof(*c));
	if (!c) {
		mrce_conn_close(&sync);
		return ENOMEM;
	}
	c->fd = sync.fd;
	c->seq = sync.seq;
	sync.fd = -1;
	mrce_conn_close(&sync);
	c->refs = 1;
	c->on_dead = on_dead;
	c->owner = owner;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	ret = pthread_create(&c->reader, NULL, reader_main, c);
	if (ret) {
		close(c->fd);
		free(c);
		return ret;
	}
	if (hello)
		*hello = h;
	*out = c;
	return 0;
}

static int send_frame(struct rc_conn *c, uint16_t op, uint32_t seq,
		      const void *req, uint32_t len)
{
	uint8_t frame[MRCE_CTRL_MAX_FRAME];
	struct mrce_ctrl_hdr *hdr = (struct mrce_ctrl_hdr *)frame;

	memset(hdr, 0, sizeof(*hdr));
	hdr->len = (uint32_t)sizeof(*hdr) + len;
	hdr->op = op;
	hdr->seq = seq;
	memcpy(frame + sizeof(*hdr), req, len);
	return mrce_send_all(c->fd, frame, hdr->len);
}

/* Queues P and sends its request; the lock is held. */
static int submit(struct rc_conn *c, struct rc_pend *p, uint16_t op,
		  const void *req, uint32_t len)
{
	int ret;

	if (c->dead)
		return EIO;
	if (len > MRCE_CTRL_MAX_FRAME - sizeof(struct mrce_ctrl_hdr))
		return EINVAL;
	p->seq = ++c->seq;
	p->next = c->pending;
	c->pending = p;
	ret = send_frame(c, op, p->seq, req, len);
	if (ret) {
		c->pending = p->next;
		shutdown(c->fd, SHUT_RDWR); /* the reader sees the end */
	}
	return ret;
}

int rc_conn_call(struct rc_conn *c, uint16_t op, const void *req, uint32_t len,
		 void *resp, uint32_t resp_len)
{
	struct rc_pend *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return ENOMEM;
	pthread_mutex_lock(&c->lock);
	ret = submit(c, p, op, req, len);
	if (!ret) {
		while (!p->done)
			pthread_cond_wait(&c->cond, &c->lock);
		ret = p->status;
		if (!ret && p->len < resp_len)
			ret = EPROTO;
		if (!ret && resp_len)
			memcpy(resp, p->resp, resp_len);
	}
	pthread_mutex_unlock(&c->lock);
	free(p);
	return ret;
}

int rc_conn_send(struct rc_conn *c, uint16_t op, const void *req, uint32_t len,
		 rc_cb cb, void *ctx)
{
	struct rc_pend *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return ENOMEM;
	p->cb = cb;
	p->ctx = ctx;
	pthread_mutex_lock(&c->lock);
	ret = submit(c, p, op, req, len);
	pthread_mutex_unlock(&c->lock);
	if (ret)
		free(p);
	return ret;
}

void rc_conn_forget(struct rc_conn *c, void *ctx)
{
	struct rc_pend *p;

	pthread_mutex_lock(&c->lock);
	for (p = c->pending; p; p = p->next)
		if (p->ctx == ctx)
			p->ctx = NULL;
	if (c->owner == ctx)
		c->on_dead = NULL;
	while (c->running_ctx == ctx)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

/* Runs P's callback (or wakes its waiter); the lock is held, and dropped around a callback. */
static void complete(struct rc_conn *c, struct rc_pend *p)
{
	if (!p->cb) {
		p->done = true;
		pthread_cond_broadcast(&c->cond);
		return;
	}
	if (p->ctx) {
		c->running_ctx = p->ctx;
		pthread_mutex_unlock(&c->lock);
		p->cb(p->ctx, p->status, p->resp, p->len);
		pthread_mutex_lock(&c->lock);
		c->running_ctx = NULL;
		pthread_cond_broadcast(&c->cond);
	}
	free(p);
}

/* No CM op passes descriptors: any that come are closed (max 0). */
static int recv_all(int fd, void *buf, size_t len)
{
	unsigned int none = 0;

	return mrce_recv_exact(fd, buf, len, NULL, 0, &none);
}

static void *reader_main(void *arg)
{
	struct rc_conn *c = arg;
	struct mrce_ctrl_hdr hdr;
	uint8_t payload[MRCE_CTRL_MAX_FRAME];
	struct rc_pend *p, **pp;
	void (*on_dead)(void *);
	void *owner;
	bool closing;

	for (;;) {
		uint32_t len;

		if (recv_all(c->fd, &hdr, sizeof(hdr)))
			break;
		if (hdr.len < sizeof(hdr) || hdr.len > MRCE_CTRL_MAX_FRAME || hdr.nfds > 4)
			break;
		len = hdr.len - (uint32_t)sizeof(hdr);
		if (recv_all(c->fd, payload, len))
			break;
		if (hdr.nfds) {
			uint8_t zeros[4];

			if (recv_all(c->fd, zeros, hdr.nfds))
				break;
		}
		pthread_mutex_lock(&c->lock);
		for (pp = &c->pending; *pp && (*pp)->seq != hdr.seq; pp = &(*pp)->next)
			;
		p = *pp;
		if (p) {
			*pp = p->next;
			p->status = hdr.status;
			p->len = len;
			memcpy(p->resp, payload, len);
			complete(c, p);
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_lock(&c->lock);
	c->dead = true;
	closing = c->closing;
	while ((p = c->pending)) {
		c->pending = p->next;
		p->status = EIO;
		p->len = 0;
		complete(c, p);
	}
	on_dead = c->on_dead;
	owner = c->owner;
	pthread_mutex_unlock(&c->lock);
	if (!closing && on_dead)
		on_dead(owner);
	return NULL;
}

void rc_conn_get(struct rc_conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

/*
 * Drops a reference; the last one closes the connection, which makes the
 * daemon drop all that was set up on it (listens, outstanding connects).
 * Never called on the connection's own reader thread.
 */
void rc_conn_put(struct rc_conn *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	pthread_mutex_unlock(&c->lock);
	shutdown(c->fd, SHUT_RDWR);
	pthread_join(c->reader, NULL);
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}
