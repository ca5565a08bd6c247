// SPDX-License-Identifier: Apache-2.0
/*
 * libmetaroce-rdmacm.so: librdmacm's rdma_* functions for ids on mrce0,
 * preloaded next to libmetaroce.so by bin/mrce-run, so that unmodified
 * rdma_cm applications (rping, ucmatose, udaddy, rdma_server/rdma_client,
 * perftest -R ...) connect through the daemons' connection service
 * (docs/spec/connection-manager.md section 6) instead of the kernel's
 * /dev/infiniband/rdma_cm, which MetaRoCE hosts do not have.
 *
 * Design (provider-c/README.md, "rdma_cm"):
 * - An event channel is an EFD_SEMAPHORE eventfd (pollable, blocking or not
 *   as the application sets it) and a queue of events; one count per event.
 * - Every listening or connected id has its own control connection to the
 *   local daemon (rdmacm_conn.c); closing it makes the daemon drop all that
 *   was set up on it. A listener long-polls CM_GET_REQUEST; each request
 *   becomes a child id and a CONNECT_REQUEST event; its CM_ACCEPT/CM_REJECT
 *   go on the listener's connection (request handles are per connection).
 * - Connection parameters and the source port travel in a header in front
 *   of the application's private data (struct rc_hdr).
 * - Disconnection: each side of an RC connection listens on a random
 *   "watch" service id and, once established, sends a CM_CONNECT to the
 *   peer's watch service that nobody answers. When the peer disconnects
 *   (CM_UNLISTEN), or its process or daemon dies (the listen goes with its
 *   connection), the daemons end that connect (LISTENER_GONE, ECONNRESET):
 *   that is the DISCONNECTED event.
 * - The CM moves a QP through INIT (rdma_create_qp), RTR and RTS (connect
 *   answered, accept) with the QPN, PSN and GID exchanged, as the kernel's
 *   rdma_cm does; UD QPs go to RTS at once.
 *
 * Long because all rdma_* calls share one private id table and event queue.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdmacm.h"

#define EXPORT __attribute__((visibility("default")))
#define RC_WATCH_TIMEOUT_MS 0x7fffffffu
#define RC_GET_REQUEST_MS 60000u
#define IB_CM_REJ_INVALID_SERVICE_ID 8
#define IB_CM_REJ_CONSUMER_DEFINED 28

enum rc_state {
	RC_IDLE, RC_BOUND, RC_ADDR, RC_ROUTE, RC_LISTEN, RC_CONNECTING,
	RC_REQ, RC_ACCEPTING, RC_CONNECTED, RC_DISCONNECTED, RC_DONE,
};

struct rc_event {
	struct rdma_cm_event ev;
	struct rc_event *next;
	uint8_t pdata[MRCE_CM_PRIVATE_DATA_MAX];
};

struct rc_chan {
	struct rdma_event_channel ch;
	struct rc_event *head, *tail;
};

struct rc_id {
	struct rdma_cm_id id;
	bool sync;             /* created without a channel: calls wait for their event */
	bool destroying, device_lost, own_cqs;
	enum rc_state st;
	struct rc_conn *conn;  /* own control connection (listen, connect, watch) */
	struct rc_conn *lconn; /* a child's listener's connection (accept, reject) */
	struct rc_id *listener;
	uint32_t request;      /* a child's request handle on lconn */
	uint32_t watch_sid;    /* our watch listen, 0: none */
	uint8_t peer_addr[16]; /* the peer daemon: IPv6, or ::ffff:a.b.c.d */
	uint32_t peer_qpn, peer_psn, peer_watch;
	uint8_t peer_gid[16];
	uint32_t psn, qkey;
	uint8_t resp_res, init_depth, retry, rnr_retry;
	struct ibv_sa_path_rec path;
	struct ibv_qp_init_attr *ep_attr; /* rdma_create_ep on a passive id: for rdma_get_request */
	unsigned int events_out; /* handed out by rdma_get_cm_event, not acked yet */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_acked = PTHREAD_COND_INITIALIZER; /* an event was acked */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct ibv_context *g_ctx;
static struct ibv_pd *g_pd;
static uint8_t g_gid[16]; /* GID index 0: the served address, IPv6 or ::ffff:a.b.c.d */
static int g_family = AF_INET; /* the served address's */
static enum ibv_mtu g_mtu = IBV_MTU_1024;
static uint8_t g_max_rd = 16;

static void open_device(void)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	union ibv_gid gid;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), "mrce0"))
			continue;
		g_ctx = ibv_open_device(list[i]);
		break;
	}
	if (list)
		ibv_free_device_list(list);
	if (!g_ctx) {
		fprintf(stderr, "metaroce rdmacm: device mrce0 is not available (is "
			"the MetaRoCE daemon running and libmetaroce.so preloaded? "
			"bin/mrce-run does both); this rdma_cm serves only mrce0\n");
		return;
	}
	if (!ibv_query_gid(g_ctx, 1, 0, &gid)) {
		memcpy(g_gid, gid.raw, 16);
		g_family = rc_addr_is_v4mapped(g_gid) ? AF_INET : AF_INET6;
	}
	if (!ibv_query_port(g_ctx, 1, &pa))
		g_mtu = pa.active_mtu;
	if (!ibv_query_device(g_ctx, &da) && da.max_qp_rd_atom > 0)
		g_max_rd = (uint8_t)(da.max_qp_rd_atom > 255 ? 255 : da.max_qp_rd_atom);
	g_pd = ibv_alloc_pd(g_ctx);
}

static int device(void)
{
	pthread_once(&g_once, open_device);
	return g_ctx ? 0 : ENODEV;
}

static FILE *g_dbg;
static pthread_once_t g_dbg_once = PTHREAD_ONCE_INIT;

/* MRCE_RDMACM_DEBUG=1: what the library does, on stderr; =PATH: appended to that file */
static void dbg_open(void)
{
	const char *v = getenv("MRCE_RDMACM_DEBUG");

	if (!v || !*v || !strcmp(v, "0"))
		return;
	g_dbg = strcmp(v, "1") ? fopen(v, "ae") : stderr;
	if (g_dbg)
		setvbuf(g_dbg, NULL, _IOLBF, 0);
}

#define DBG(...)                                                              \
	do {                                                                  \
		pthread_once(&g_dbg_once, dbg_open);                          \
		if (g_dbg)                                                    \
			fprintf(g_dbg, "metaroce rdmacm: " __VA_ARGS__);      \
	} while (0)

static int fail(int err)
{
	errno = err;
	return -1;
}

static uint32_t random32(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)rand();
	return v;
}

static uint16_t ephemeral_port(void)
{
	return (uint16_t)(32768 + random32() % (60999 - 32768 + 1));
}

static struct rc_id *rc(struct rdma_cm_id *id)
{
	return (struct rc_id *)id;
}

static uint32_t sid_of(enum rdma_port_space ps, uint16_t port_host)
{
	return ((uint32_t)(ps & 0xffff) << 16) | port_host;
}

/* ---- addresses (rdmacm.h) ---- */

bool rc_addr_is_v4mapped(const uint8_t a[16])
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(a, pfx, 12);
}

int rc_addr_check_family(const struct sockaddr *sa)
{
	if (!sa)
		return EINVAL;
	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		return 0;
	fprintf(stderr, "metaroce rdmacm: address family %d is not served: MetaRoCE's "
		"rdma_cm serves IPv4 and IPv6 addresses (AF_INET, AF_INET6), not AF_IB\n",
		sa->sa_family);
	return EAFNOSUPPORT;
}

bool rc_addr_get(const struct sockaddr *sa, uint8_t a[16])
{
	memset(a, 0, 16);
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

unsigned int rc_addr_set(struct sockaddr *sa, const uint8_t a[16], uint16_t port_be)
{
	if (rc_addr_is_v4mapped(a)) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		memset(in, 0, sizeof(*in));
		in->sin_family = AF_INET;
		in->sin_port = port_be;
		memcpy(&in->sin_addr, a + 12, 4);
		return sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

		memset(in6, 0, sizeof(*in6));
		in6->sin6_family = AF_INET6;
		in6->sin6_port = port_be;
		memcpy(&in6->sin6_addr, a, 16);
		return sizeof(*in6);
	}
}

unsigned int rc_addr_len(const struct sockaddr *sa)
{
	return sa && sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		sa && sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : 0;
}

bool rc_addr_is_any(const struct sockaddr *sa)
{
	uint8_t a[16];

	if (!rc_addr_get(sa, a))
		return false;
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED((const struct in6_addr *)a) ||
	       (rc_addr_is_v4mapped(a) && !a[12] && !a[13] && !a[14] && !a[15]);
}

bool rc_addr_is_loopback(const uint8_t a[16], const uint8_t served[16])
{
	if (!memcmp(a, served, 16))
		return false;
	if (rc_addr_is_v4mapped(a))
		return a[12] == 127;
	return IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)a);
}

const char *rc_addr_str(const uint8_t a[16], char *buf, size_t len)
{
	if (rc_addr_is_v4mapped(a))
		return inet_ntop(AF_INET, a + 12, buf, (socklen_t)len);
	return inet_ntop(AF_INET6, a, buf, (socklen_t)len);
}

/* ---- event channels ---- */

EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rc_chan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	return &c->ch;
}

EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct rc_chan *c = (struct rc_chan *)channel;
	struct rc_event *e;

	if (!c)
		return;
	while ((e = c->head)) {
		c->head = e->next;
		free(e);
	}
	close(c->ch.fd);
	free(c);
}

static struct rc_event *ev_new(struct rc_id *id, enum rdma_cm_event_type type,
			       int status, const void *pdata, size_t len)
{
	struct rc_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	if (len > sizeof(e->pdata))
		len = sizeof(e->pdata);
	if (len) {
		memcpy(e->pdata, pdata, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
	return e;
}

/* Queues E on CHANNEL; g_lock is held. */
static void ev_push(struct rdma_event_channel *channel, struct rc_event *e)
{
	struct rc_chan *c = (struct rc_chan *)channel;
	uint64_t one = 1;

	if (!e)
		return;
	e->next = NULL;
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one))
		fprintf(stderr, "metaroce rdmacm: event channel write: %s\n", strerror(errno));
}

static void ev_post(struct rc_id *id, enum rdma_cm_event_type type, int status,
		    const void *pdata, size_t len)
{
	ev_push(id->id.channel, ev_new(id, type, status, pdata, len));
}

/* Takes the events of ID (or, with LISTEN, the requests of that listener) off CHANNEL; g_lock is held. */
static struct rc_event *ev_take(struct rdma_event_channel *channel, struct rc_id *id, bool listen)
{
	struct rc_chan *c = (struct rc_chan *)channel;
	struct rc_event **pp = &c->head, *e, *taken = NULL, *last = NULL;

	c->tail = NULL;
	while ((e = *pp)) {
		bool match = listen ? e->ev.listen_id == &id->id : e->ev.id == &id->id;

		if (!match) {
			c->tail = e;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		if (last)
			last->next = e;
		else
			taken = e;
		last = e;
		/* one count per event: take it back without blocking */
		{
			struct pollfd pfd = { .fd = c->ch.fd, .events = POLLIN };
			uint64_t v;

			if (poll(&pfd, 1, 0) == 1 && read(c->ch.fd, &v, sizeof(v)) < 0)
				(void)0;
		}
	}
	return taken;
}

/* The id an event counts against until acked: a request's listener, as in librdmacm. */
static struct rc_id *ev_owner(struct rdma_cm_event *ev)
{
	return (struct rc_id *)(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->listen_id ?
				ev->listen_id : ev->id);
}

EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct rc_chan *c = (struct rc_chan *)channel;
	struct rc_event *e;
	uint64_t v;
	int fd, fl;

	if (!c || !event)
		return fail(EINVAL);
	for (;;) {
		/*
		 * Take the count and the event together under the lock (the count
		 * is then at least 1: no blocking), so that an event dropped by
		 * rdma_destroy_id or moved by rdma_migrate_id meanwhile never
		 * leaves us reading a channel the application has destroyed.
		 */
		pthread_mutex_lock(&g_lock);
		e = c->head;
		if (e) {
			if (read(c->ch.fd, &v, sizeof(v)) != sizeof(v))
				(void)0; /* the count is ours: it cannot be 0 */
			c->head = e->next;
			if (!c->head)
				c->tail = NULL;
			ev_owner(&e->ev)->events_out++;
		}
		fd = c->ch.fd;
		pthread_mutex_unlock(&g_lock);
		if (e) {
			*event = &e->ev;
			return 0;
		}
		fl = fcntl(fd, F_GETFL);
		if (fl < 0)
			return -1;
		if (fl & O_NONBLOCK)
			return fail(EAGAIN);
		{
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -1;
			if (p.revents & POLLNVAL)
				return fail(EBADF);
		}
	}
}

EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return fail(EINVAL);
	pthread_mutex_lock(&g_lock);
	ev_owner(event)->events_out--;
	pthread_cond_broadcast(&g_acked);
	pthread_mutex_unlock(&g_lock);
	free(event);
	return 0;
}

EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

/*
 * A synchronous id's call waits for its own event (librdmacm's behaviour for
 * ids made without a channel); the event stays in id->event until the next.
 */
static int sync_wait(struct rc_id *id)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(id->id.channel, &ev))
		return -1;
	if (id->id.event)
		rdma_ack_cm_event(id->id.event);
	id->id.event = ev;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
	case RDMA_CM_EVENT_ESTABLISHED:
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		return fail(ECONNREFUSED);
	default:
		return fail(ev->status < 0 ? -ev->status : ev->status ? ev->status : ECONNABORTED);
	}
}

/* ---- ids ---- */

static struct rc_id *id_alloc(struct rdma_event_channel *channel, void *context,
			      enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct rc_id *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (!channel) {
		channel = rdma_create_event_channel();
		if (!channel) {
			free(r);
			return NULL;
		}
		r->sync = true;
	}
	r->id.channel = channel;
	r->id.context = context;
	r->id.ps = ps;
	r->id.qp_type = qp_type;
	r->id.route.addr.src_sin.sin_family = AF_INET;
	r->id.route.addr.dst_sin.sin_family = AF_INET;
	r->qkey = RDMA_UDP_QKEY;
	r->retry = 7;
	r->rnr_retry = 7;
	return r;
}

EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			  void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type t;
	struct rc_id *r;

	if (!id)
		return fail(EINVAL);
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		t = IBV_QPT_RC;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		t = IBV_QPT_UD;
		break;
	default:
		return fail(EINVAL);
	}
	r = id_alloc(channel, context, ps, t);
	if (!r)
		return fail(ENOMEM);
	*id = &r->id;
	return 0;
}

static void set_device(struct rc_id *r)
{
	r->id.verbs = g_ctx;
	r->id.port_num = 1;
	memcpy(r->id.route.addr.addr.ibaddr.sgid.raw, g_gid, 16);
	r->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
}

/*
 * A loopback address that is not the one mrce0 serves (a daemon may serve
 * 127.0.0.x with --addr: that one is mrce0's like any other).
 */
static bool is_loopback(const struct sockaddr *sa)
{
	uint8_t a[16];

	return rc_addr_get(sa, a) && rc_addr_is_loopback(a, g_gid);
}

/*
 * An address the id may use: the served one (IPv4, IPv4-mapped IPv6 or
 * IPv6, as the daemon serves it), or a wildcard of either family.
 */
static int check_local(const struct sockaddr *sa)
{
	char x[INET6_ADDRSTRLEN], y[INET6_ADDRSTRLEN];
	uint8_t a[16];

	if (!rc_addr_get(sa, a))
		return EAFNOSUPPORT;
	if (rc_addr_is_any(sa) || !memcmp(a, g_gid, 16))
		return 0;
	fprintf(stderr, "metaroce rdmacm: %s is not the address of mrce0 (%s): "
		"this rdma_cm serves only the interface of the MetaRoCE daemon\n",
		rc_addr_str(a, x, sizeof(x)), rc_addr_str(g_gid, y, sizeof(y)));
	return EADDRNOTAVAIL;
}

/* The id's source address: the served one, of its family, with PORT (network order). */
static void set_src_served(struct rc_id *r, uint16_t port)
{
	rc_addr_set(&r->id.route.addr.src_addr, g_gid, port);
}

/* An id bound to a loopback address has no device to listen or connect on. */
static int loopback_refused(const char *what)
{
	fprintf(stderr, "metaroce rdmacm: cannot %s on an id bound to a loopback "
		"address: mrce0 carries no loopback traffic (bind mrce0's address "
		"or the wildcard)\n", what);
	return EADDRNOTAVAIL;
}

/*
 * Reserves the id's port at the daemon (CM_BIND on the id's own connection),
 * as the kernel's bind does: another bind of the port on this host is
 * EADDRINUSE. Beyond the kernel, connect requests that arrive before
 * rdma_listen are held for it, not rejected (qperf 0.4.11 sends its port to
 * the client before it listens). Port 0 picks a free port in 32768..60999.
 * The reservation goes with the id's connection (rdma_destroy_id, the
 * process's exit), which refuses what was held. A daemon without the service
 * (--cm-port 0) reserves nothing: the id binds, and listen and connect fail
 * there as before.
 */
static int own_conn(struct rc_id *r);

static int reserve_port(struct rc_id *r, uint16_t port)
{
	struct mrce_cm_listen_req req = { 0 };
	int i, ret = own_conn(r);

	for (i = 0; !ret && i < 64; i++) {
		uint16_t p = port ? port : ephemeral_port();

		req.service_id = sid_of(r->id.ps, p);
		ret = rc_conn_call(r->conn, MRCE_OP_CM_BIND, &req, sizeof(req), NULL, 0);
		if (!ret)
			r->id.route.addr.src_sin.sin_port = htons(p);
		if (ret != EADDRINUSE || port)
			break;
	}
	DBG("id %p: bind service 0x%x: %s\n", (void *)r, req.service_id, strerror(ret));
	return ret == EOPNOTSUPP ? 0 : ret;
}

EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct rc_id *r = rc(id);
	int ret;

	if (!r || r->st != RC_IDLE)
		return fail(EINVAL);
	ret = rc_addr_check_family(addr);
	if (!ret)
		ret = device();
	/*
	 * A loopback address (not mrce0's own) is accepted as the kernel
	 * accepts it, but it attaches no device (verbs NULL): middleware binds 127.0.0.1 once to
	 * find a default source (libfabric's verbs provider). mrce0 carries no
	 * loopback traffic, so listening or resolving from it is refused.
	 */
	if (!ret && !is_loopback(addr))
		ret = check_local(addr);
	if (ret)
		return fail(ret);
	/*
	 * The address is kept as given (its family too). Service ids name only
	 * the port, so a listener on either wildcard (0.0.0.0 or ::) or on the
	 * served address takes requests from IPv4 and IPv6 peers alike.
	 */
	memset(&r->id.route.addr.src_storage, 0, sizeof(r->id.route.addr.src_storage));
	memcpy(&r->id.route.addr.src_addr, addr, rc_addr_len(addr));
	if (is_loopback(addr)) {
		/* nothing can listen or connect from it: no reservation */
		if (!r->id.route.addr.src_sin.sin_port)
			r->id.route.addr.src_sin.sin_port = htons(ephemeral_port());
	} else {
		/* the kernel picks port 0's port at bind time: rdma_get_src_port tells it */
		ret = reserve_port(r, ntohs(r->id.route.addr.src_sin.sin_port));
		if (ret) {
			memset(&r->id.route.addr.src_storage, 0,
			       sizeof(r->id.route.addr.src_storage));
			r->id.route.addr.src_sin.sin_family = AF_INET;
			return fail(ret);
		}
		if (!r->id.route.addr.src_sin.sin_port)
			r->id.route.addr.src_sin.sin_port = htons(ephemeral_port());
	}
	/* A wildcard (or loopback) bind leaves verbs NULL, as the kernel does for a wildcard. */
	if (!rc_addr_is_any(addr) && !is_loopback(addr))
		set_device(r);
	r->st = RC_BOUND;
	return 0;
}

/*
 * Whether the kernel's routes reach DST (16 bytes) from mrce0's address, as a
 * UDP socket bound to it and connected finds out; 0 or -errno. SCOPE: the
 * destination's IPv6 scope id (link-local addresses).
 */
static int route_probe(const uint8_t dst[16], uint32_t scope)
{
	struct sockaddr_storage local, probe;
	socklen_t len;
	int s, status = 0;

	if (rc_addr_is_v4mapped(dst) != rc_addr_is_v4mapped(g_gid))
		return -EAFNOSUPPORT;
	len = rc_addr_set((struct sockaddr *)&local, g_gid, 0);
	rc_addr_set((struct sockaddr *)&probe, dst, htons(9));
	if (g_family == AF_INET6)
		((struct sockaddr_in6 *)&probe)->sin6_scope_id = scope;
	s = socket(g_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&local, len))
		status = -errno;
	if (!status && connect(s, (struct sockaddr *)&probe, len))
		status = -errno;
	close(s);
	return status;
}

EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
			     struct sockaddr *dst_addr, int timeout_ms)
{
	struct rc_id *r = rc(id);
	char x[INET6_ADDRSTRLEN], y[INET6_ADDRSTRLEN];
	uint8_t dst[16];
	uint32_t scope = 0;
	int ret, status;

	(void)timeout_ms;
	if (!r || (r->st != RC_IDLE && r->st != RC_BOUND))
		return fail(EINVAL);
	if (r->st == RC_BOUND && (!src_addr || src_addr->sa_family == AF_UNSPEC) &&
	    is_loopback(&r->id.route.addr.src_addr))
		return fail(loopback_refused("resolve an address"));
	ret = rc_addr_check_family(dst_addr);
	if (!ret && src_addr && src_addr->sa_family != AF_UNSPEC)
		ret = rc_addr_check_family(src_addr);
	if (!ret)
		ret = device();
	if (!ret && src_addr && src_addr->sa_family != AF_UNSPEC)
		ret = check_local(src_addr);
	if (ret)
		return fail(ret);
	rc_addr_get(dst_addr, dst);
	if (dst_addr->sa_family == AF_INET6)
		scope = ((const struct sockaddr_in6 *)dst_addr)->sin6_scope_id;
	/*
	 * The source is always mrce0's address (the daemon binds every socket
	 * toward a peer to it): the kernel's routes must reach the destination
	 * from there. A daemon serves one family: an IPv6 destination from an
	 * IPv4 daemon (or the reverse) is an ADDR_ERROR.
	 */
	status = route_probe(dst, scope);
	if (status == -EAFNOSUPPORT)
		fprintf(stderr, "metaroce rdmacm: %s is not reachable from mrce0's address %s: "
			"the daemon serves one address family\n",
			rc_addr_str(dst, x, sizeof(x)), rc_addr_str(g_gid, y, sizeof(y)));
	else if (status)
		fprintf(stderr, "metaroce rdmacm: no route to %s from mrce0's address %s: %s\n",
			rc_addr_str(dst, x, sizeof(x)), rc_addr_str(g_gid, y, sizeof(y)),
			strerror(-status));
	pthread_mutex_lock(&g_lock);
	if (status) {
		ev_post(r, RDMA_CM_EVENT_ADDR_ERROR, status, NULL, 0);
	} else {
		uint16_t port = r->id.route.addr.src_sin.sin_port;

		if (src_addr && src_addr->sa_family != AF_UNSPEC && !port)
			port = ((const struct sockaddr_in *)src_addr)->sin_port;
		set_src_served(r, port ? port : htons(ephemeral_port()));
		memset(&r->id.route.addr.dst_storage, 0, sizeof(r->id.route.addr.dst_storage));
		memcpy(&r->id.route.addr.dst_addr, dst_addr, rc_addr_len(dst_addr));
		set_device(r);
		memcpy(r->id.route.addr.addr.ibaddr.dgid.raw, dst, 16);
		r->st = RC_ADDR;
		ev_post(r, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
	}
	pthread_mutex_unlock(&g_lock);
	return r->sync ? sync_wait(r) : 0;
}

EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct rc_id *r = rc(id);
	struct ibv_sa_path_rec *p;

	(void)timeout_ms;
	if (!r || r->st != RC_ADDR)
		return fail(EINVAL);
	p = &r->path;
	memset(p, 0, sizeof(*p));
	p->sgid = r->id.route.addr.addr.ibaddr.sgid;
	p->dgid = r->id.route.addr.addr.ibaddr.dgid;
	p->pkey = htobe16(0xffff);
	p->hop_limit = 64;
	p->reversible = 1;
	p->numb_path = 1;
	p->mtu_selector = 2;
	p->mtu = (uint8_t)g_mtu;
	p->packet_life_time = 14;
	pthread_mutex_lock(&g_lock);
	r->id.route.path_rec = p;
	r->id.route.num_paths = 1;
	r->st = RC_ROUTE;
	ev_post(r, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0);
	pthread_mutex_unlock(&g_lock);
	return r->sync ? sync_wait(r) : 0;
}

/* ---- the connection to the daemon ---- */

static void id_dead(void *owner)
{
	struct rc_id *r = owner;

	pthread_mutex_lock(&g_lock);
	if (!r->destroying && !r->device_lost) {
		r->device_lost = true;
		fprintf(stderr, "metaroce rdmacm: the MetaRoCE daemon went away\n");
		ev_post(r, RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0);
	}
	pthread_mutex_unlock(&g_lock);
}

static int own_conn(struct rc_id *r)
{
	if (r->conn)
		return 0;
	return rc_conn_open(&r->conn, NULL, id_dead, r);
}

static void noop_cb(void *ctx, int status, const void *resp, uint32_t len)
{
	(void)ctx, (void)status, (void)resp, (void)len;
}

/* Listens on a fresh random watch service id (RC connections). */
static int watch_listen(struct rc_id *r)
{
	struct mrce_cm_listen_req req = { .backlog = 4 };
	int i, ret = EADDRINUSE;

	for (i = 0; i < 16 && ret == EADDRINUSE; i++) {
		req.service_id = 0x80000000u | (random32() & 0x7fffffffu);
		ret = rc_conn_call(r->conn, MRCE_OP_CM_LISTEN, &req, sizeof(req), NULL, 0);
	}
	if (!ret)
		r->watch_sid = req.service_id;
	return ret;
}

/* Drops the watch listen, which tells the peer (its watch connect ends); g_lock may be held. */
static void watch_drop(struct rc_id *r)
{
	struct mrce_cm_listen_req req = { .service_id = r->watch_sid };

	if (!r->watch_sid || !r->conn)
		return;
	r->watch_sid = 0;
	rc_conn_send(r->conn, MRCE_OP_CM_UNLISTEN, &req, sizeof(req), noop_cb, r);
}

static void qp_to_err(struct rc_id *r)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (r->id.qp)
		ibv_modify_qp(r->id.qp, &a, IBV_QP_STATE);
}

/* The peer's watch connect ended: the peer disconnected or went away. */
static void watch_end(void *ctx, int status, const void *resp, uint32_t len)
{
	struct rc_id *r = ctx;

	(void)resp, (void)len;
	DBG("id %p: the peer's watch connect ended: %s\n", (void *)r, strerror(status));
	pthread_mutex_lock(&g_lock);
	if (!r->destroying && r->st == RC_CONNECTED && status != EIO) {
		/* the QP stays as it is (the application may be destroying it),
		 * as with librdmacm: rdma_disconnect moves it to ERR */
		r->st = RC_DISCONNECTED;
		watch_drop(r);
		ev_post(r, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	}
	pthread_mutex_unlock(&g_lock);
}

/* The peer daemon's address in a CM_CONNECT: peer_ipv4, or peer_ipv6 for IPv6. */
static void peer_to_req(const struct rc_id *r, struct mrce_cm_connect_req *req)
{
	req->peer_ipv4 = 0;
	if (rc_addr_is_v4mapped(r->peer_addr))
		memcpy(&req->peer_ipv4, r->peer_addr + 12, 4);
	else
		memcpy(req->peer_ipv6, r->peer_addr, 16);
}

static void watch_start(struct rc_id *r)
{
	struct mrce_cm_connect_req req = { 0 };

	if (!r->peer_watch)
		return;
	peer_to_req(r, &req);
	req.service_id = r->peer_watch;
	req.qpn = r->id.qp ? r->id.qp->qp_num & 0xffffff : 0;
	memcpy(req.gid, g_gid, 16);
	req.timeout_ms = RC_WATCH_TIMEOUT_MS;
	if (rc_conn_send(r->conn, MRCE_OP_CM_CONNECT, &req, sizeof(req), watch_end, r))
		watch_end(r, ECONNRESET, NULL, 0);
}

/* ---- QPs ---- */

static void ah_of(struct rc_id *r, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, r->peer_gid, 16);
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = 64;
	ah->port_num = 1;
}

static uint8_t clamp_rd(uint8_t v)
{
	if (!v)
		v = 1;
	return v > g_max_rd ? g_max_rd : v;
}

static int init_attr(struct rc_id *r, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state want = a->qp_state;

	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (r->id.qp_type == IBV_QPT_UD) {
			a->qkey = r->qkey;
			*mask |= IBV_QP_QKEY;
		} else {
			a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (r->id.qp_type == IBV_QPT_UD)
			return 0;
		if (!r->peer_qpn && !r->peer_gid[15])
			return EINVAL;
		a->path_mtu = g_mtu;
		a->dest_qp_num = r->peer_qpn;
		a->rq_psn = r->peer_psn;
		a->max_dest_rd_atomic = clamp_rd(r->resp_res);
		a->min_rnr_timer = 12;
		ah_of(r, &a->ah_attr);
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = r->psn;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (r->id.qp_type == IBV_QPT_UD)
			return 0;
		a->timeout = 14;
		a->retry_cnt = r->retry > 7 ? 7 : r->retry;
		a->rnr_retry = r->rnr_retry > 7 ? 7 : r->rnr_retry;
		a->max_rd_atomic = clamp_rd(r->init_depth);
		*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	case IBV_QPS_ERR:
	case IBV_QPS_RESET:
		*mask = IBV_QP_STATE;
		return 0;
	default:
		return EINVAL;
	}
}

EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
			     int *qp_attr_mask)
{
	int ret;

	if (!id || !qp_attr || !qp_attr_mask)
		return fail(EINVAL);
	ret = init_attr(rc(id), qp_attr, qp_attr_mask);
	return ret ? fail(ret) : 0;
}

static int move_qp(struct rc_id *r, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };
	int mask, ret;

	if (!r->id.qp)
		return 0;
	ret = init_attr(r, &a, &mask);
	if (!ret)
		ret = ibv_modify_qp(r->id.qp, &a, mask);
	return ret;
}

static int connect_qp(struct rc_id *r)
{
	int ret = move_qp(r, IBV_QPS_RTR);

	return ret ? ret : move_qp(r, IBV_QPS_RTS);
}

EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			  struct ibv_qp_init_attr *qp_init_attr)
{
	struct rc_id *r = rc(id);
	struct ibv_qp_init_attr attr;
	struct ibv_qp *qp;
	int ret;

	if (!r || !qp_init_attr || !r->id.verbs || r->id.qp)
		return fail(EINVAL);
	if (!pd)
		pd = r->id.pd ? r->id.pd : g_pd;
	if (!pd || pd->context != r->id.verbs)
		return fail(EINVAL);
	attr = *qp_init_attr;
	if (!attr.qp_type)
		attr.qp_type = r->id.qp_type; /* rdma_create_ep callers often leave it 0 */
	if (!attr.srq)
		attr.srq = r->id.srq;
	if (!attr.send_cq || !attr.recv_cq) {
		/* as librdmacm does: the id's own completion channels and CQs */
		struct ibv_context *v = r->id.verbs;
		int rcqe = attr.cap.max_recv_wr ? (int)attr.cap.max_recv_wr : 1;
		int scqe = attr.cap.max_send_wr ? (int)attr.cap.max_send_wr : 1;

		if (!attr.recv_cq) {
			r->id.recv_cq_channel = ibv_create_comp_channel(v);
			r->id.recv_cq = r->id.recv_cq_channel ?
				ibv_create_cq(v, rcqe, r, r->id.recv_cq_channel, 0) : NULL;
			if (!r->id.recv_cq)
				goto err_cqs;
			attr.recv_cq = r->id.recv_cq;
		}
		if (!attr.send_cq) {
			r->id.send_cq_channel = ibv_create_comp_channel(v);
			r->id.send_cq = r->id.send_cq_channel ?
				ibv_create_cq(v, scqe, r, r->id.send_cq_channel, 0) : NULL;
			if (!r->id.send_cq)
				goto err_cqs;
			attr.send_cq = r->id.send_cq;
		}
		r->own_cqs = true;
	} else {
		r->id.send_cq = attr.send_cq;
		r->id.recv_cq = attr.recv_cq;
	}
	qp = ibv_create_qp(pd, &attr);
	if (!qp)
		goto err_cqs;
	pthread_mutex_lock(&g_lock);
	r->id.qp = qp;
	if (!r->id.pd)
		r->id.pd = pd;
	ret = move_qp(r, IBV_QPS_INIT);
	if (!ret && r->id.qp_type == IBV_QPT_UD) {
		ret = move_qp(r, IBV_QPS_RTR);
		if (!ret)
			ret = move_qp(r, IBV_QPS_RTS);
	}
	if (ret)
		r->id.qp = NULL;
	pthread_mutex_unlock(&g_lock);
	if (ret) {
		ibv_destroy_qp(qp);
		errno = ret;
		goto err_cqs;
	}
	qp_init_attr->cap = attr.cap;
	return 0;

err_cqs:
	ret = errno ? errno : ENOMEM;
	if (r->own_cqs || !qp_init_attr->send_cq || !qp_init_attr->recv_cq) {
		if (r->id.send_cq && r->id.send_cq != qp_init_attr->send_cq)
			ibv_destroy_cq(r->id.send_cq);
		if (r->id.recv_cq && r->id.recv_cq != qp_init_attr->recv_cq)
			ibv_destroy_cq(r->id.recv_cq);
		if (r->id.send_cq_channel)
			ibv_destroy_comp_channel(r->id.send_cq_channel);
		if (r->id.recv_cq_channel)
			ibv_destroy_comp_channel(r->id.recv_cq_channel);
	}
	r->id.send_cq = r->id.recv_cq = NULL;
	r->id.send_cq_channel = r->id.recv_cq_channel = NULL;
	r->own_cqs = false;
	return fail(ret);
}

EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr)
{
	struct ibv_qp_init_attr a;
	int ret;

	if (!id || !qp_init_attr)
		return fail(EINVAL);
	if (qp_init_attr->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD)
		return fail(EOPNOTSUPP);
	memset(&a, 0, sizeof(a));
	a.qp_context = qp_init_attr->qp_context;
	a.send_cq = qp_init_attr->send_cq;
	a.recv_cq = qp_init_attr->recv_cq;
	a.srq = qp_init_attr->srq;
	a.cap = qp_init_attr->cap;
	a.qp_type = qp_init_attr->qp_type;
	a.sq_sig_all = qp_init_attr->sq_sig_all;
	ret = rdma_create_qp(id, qp_init_attr->comp_mask & IBV_QP_INIT_ATTR_PD ?
			     qp_init_attr->pd : NULL, &a);
	if (!ret)
		qp_init_attr->cap = a.cap;
	return ret;
}

EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct rc_id *r = rc(id);
	struct ibv_qp *qp;

	if (!r)
		return;
	pthread_mutex_lock(&g_lock);
	qp = r->id.qp;
	r->id.qp = NULL;
	pthread_mutex_unlock(&g_lock);
	if (qp)
		ibv_destroy_qp(qp);
	if (r->own_cqs) {
		if (r->id.send_cq)
			ibv_destroy_cq(r->id.send_cq);
		if (r->id.recv_cq)
			ibv_destroy_cq(r->id.recv_cq);
		if (r->id.send_cq_channel)
			ibv_destroy_comp_channel(r->id.send_cq_channel);
		if (r->id.recv_cq_channel)
			ibv_destroy_comp_channel(r->id.recv_cq_channel);
		r->id.send_cq = r->id.recv_cq = NULL;
		r->id.send_cq_channel = r->id.recv_cq_channel = NULL;
		r->own_cqs = false;
	}
}

EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			   struct ibv_srq_init_attr *attr)
{
	struct rc_id *r = rc(id);
	struct ibv_srq *srq;

	if (!r || !attr || !r->id.verbs)
		return fail(EINVAL);
	if (!pd)
		pd = r->id.pd ? r->id.pd : g_pd;
	srq = ibv_create_srq(pd, attr);
	if (!srq)
		return -1;
	r->id.srq = srq;
	return 0;
}

EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	(void)id, (void)attr;
	return fail(EOPNOTSUPP);
}

EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id && id->srq) {
		ibv_destroy_srq(id->srq);
		id->srq = NULL;
	}
}

/* ---- listen side ---- */

static void on_request(void *ctx, int status, const void *resp, uint32_t len);

static int get_request(struct rc_id *l)
{
	struct mrce_cm_get_request_req req = { .timeout_ms = RC_GET_REQUEST_MS };

	return rc_conn_send(l->conn, MRCE_OP_CM_GET_REQUEST, &req, sizeof(req), on_request, l);
}

static const struct rc_hdr *hdr_of(const uint8_t *pdata, uint32_t len)
{
	const struct rc_hdr *h = (const struct rc_hdr *)pdata;

	if (len < sizeof(*h) || h->magic != RC_HDR_MAGIC || h->version != 1)
		return NULL;
	return h;
}

static void on_request(void *ctx, int status, const void *resp, uint32_t len)
{
	struct rc_id *l = ctx, *c;
	struct mrce_cm_request q;
	const struct rc_hdr *h;
	struct rc_event *e;
	uint32_t plen;

	pthread_mutex_lock(&g_lock);
	if (l->destroying || l->st != RC_LISTEN) {
		pthread_mutex_unlock(&g_lock);
		return;
	}
	if (status == EAGAIN) {
		get_request(l);
		pthread_mutex_unlock(&g_lock);
		return;
	}
	if (status || len < sizeof(q)) {
		if (status != EIO)
			fprintf(stderr, "metaroce rdmacm: waiting for connection requests: %s\n",
				strerror(status ? status : EPROTO));
		pthread_mutex_unlock(&g_lock);
		return;
	}
	memcpy(&q, resp, sizeof(q));
	plen = q.private_data_len > MRCE_CM_PRIVATE_DATA_MAX ? 0 : q.private_data_len;
	h = hdr_of(q.private_data, plen);
	c = id_alloc(l->sync ? NULL : l->id.channel, l->id.context, l->id.ps, l->id.qp_type);
	if (!c) {
		struct mrce_cm_reject_req rej = { .request = q.request };

		rc_conn_send(l->conn, MRCE_OP_CM_REJECT, &rej, sizeof(rej), noop_cb, l);
		get_request(l);
		pthread_mutex_unlock(&g_lock);
		return;
	}
	set_device(c);
	c->id.pd = l->id.pd;
	c->listener = l;
	c->lconn = l->conn;
	rc_conn_get(c->lconn);
	c->request = q.request;
	/* the daemon names the requester's daemon in peer_ipv6 (IPv4 as ::ffff:a.b.c.d) */
	memcpy(c->peer_addr, q.peer_ipv6, 16);
	c->peer_qpn = q.qpn;
	c->peer_psn = q.psn;
	memcpy(c->peer_gid, q.gid, 16);
	set_src_served(c, l->id.route.addr.src_sin.sin_port);
	rc_addr_set(&c->id.route.addr.dst_addr, c->peer_addr, 0);
	memcpy(c->id.route.addr.addr.ibaddr.dgid.raw, q.gid, 16);
	c->path.sgid = c->id.route.addr.addr.ibaddr.sgid;
	c->path.dgid = c->id.route.addr.addr.ibaddr.dgid;
	c->path.pkey = htobe16(0xffff);
	c->path.mtu = (uint8_t)g_mtu;
	c->path.numb_path = 1;
	c->id.route.path_rec = &c->path;
	c->id.route.num_paths = 1;
	if (h) {
		c->id.route.addr.dst_sin.sin_port = h->src_port;
		c->peer_watch = h->watch_sid;
		/* the requester's depth is our responder resources, and back */
		c->resp_res = h->initiator_depth;
		c->init_depth = h->responder_resources;
		c->retry = h->retry_count;
		c->rnr_retry = h->rnr_retry_count;
		if (h->qkey)
			c->qkey = h->qkey;
		e = ev_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, q.private_data + sizeof(*h),
			   plen - sizeof(*h));
	} else {
		e = ev_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, q.private_data, plen);
	}
	c->st = RC_REQ;
	if (e) {
		e->ev.listen_id = &l->id;
		if (c->id.qp_type == IBV_QPT_UD) {
			ah_of(c, &e->ev.param.ud.ah_attr);
			e->ev.param.ud.qp_num = q.qpn;
			e->ev.param.ud.qkey = c->qkey;
		} else {
			e->ev.param.conn.responder_resources = c->resp_res;
			e->ev.param.conn.initiator_depth = c->init_depth;
			e->ev.param.conn.flow_control = h ? h->flow_control : 1;
			e->ev.param.conn.retry_count = c->retry;
			e->ev.param.conn.rnr_retry_count = c->rnr_retry;
			e->ev.param.conn.srq = h ? h->srq : 0;
			e->ev.param.conn.qp_num = q.qpn;
		}
		ev_push(l->id.channel, e);
	}
	get_request(l);
	pthread_mutex_unlock(&g_lock);
}

EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct rc_id *r = rc(id);
	struct mrce_cm_listen_req req = { 0 };
	int ret;

	if (!r)
		return fail(EINVAL);
	if (r->st == RC_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		/* the wildcard: its listener takes IPv4 and IPv6 requests (service ids name the port) */
		if (rdma_bind_addr(id, (struct sockaddr *)&any))
			return -1;
	}
	if (r->st != RC_BOUND)
		return fail(EINVAL);
	if (is_loopback(&r->id.route.addr.src_addr))
		return fail(loopback_refused("listen"));
	ret = device();
	if (!ret)
		ret = own_conn(r);
	if (ret)
		return fail(ret);
	req.backlog = backlog <= 0 ? 0 : backlog > MRCE_CM_MAX_BACKLOG ?
		MRCE_CM_MAX_BACKLOG : (uint32_t)backlog;
	/*
	 * The bind reserved the port (CM_BIND): listening on it takes the
	 * requests the daemon held since then, in arrival order.
	 */
	req.service_id = sid_of(r->id.ps, ntohs(r->id.route.addr.src_sin.sin_port));
	ret = rc_conn_call(r->conn, MRCE_OP_CM_LISTEN, &req, sizeof(req), NULL, 0);
	DBG("id %p: listen on service 0x%x: %s\n", (void *)r, req.service_id, strerror(ret));
	if (ret)
		return fail(ret);
	pthread_mutex_lock(&g_lock);
	r->st = RC_LISTEN;
	ret = get_request(r);
	pthread_mutex_unlock(&g_lock);
	return ret ? fail(ret) : 0;
}

EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rc_id *l = rc(listen), *c;
	struct rdma_cm_event *ev;

	if (!l || !id || !l->sync || l->st != RC_LISTEN)
		return fail(EINVAL);
	for (;;) {
		if (rdma_get_cm_event(l->id.channel, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		if (ev->status) {
			int err = ev->status < 0 ? -ev->status : ev->status;

			rdma_ack_cm_event(ev);
			return fail(err);
		}
		rdma_ack_cm_event(ev);
	}
	c = rc(ev->id);
	c->id.event = ev;
	if (l->ep_attr) {
		struct ibv_qp_init_attr a = *l->ep_attr;

		if (rdma_create_qp(&c->id, l->id.pd, &a)) {
			int err = errno;

			rdma_reject(&c->id, NULL, 0);
			rdma_destroy_id(&c->id);
			return fail(err);
		}
	}
	*id = &c->id;
	return 0;
}

/* ---- connect side ---- */

static void fill_hdr(struct rc_id *r, struct rc_hdr *h, const struct rdma_conn_param *p)
{
	memset(h, 0, sizeof(*h));
	h->magic = RC_HDR_MAGIC;
	h->version = 1;
	h->responder_resources = r->resp_res;
	h->initiator_depth = r->init_depth;
	h->flow_control = p ? p->flow_control : 1;
	h->retry_count = r->retry;
	h->rnr_retry_count = r->rnr_retry;
	h->srq = p ? p->srq : 0;
	h->src_port = r->id.route.addr.src_sin.sin_port;
	h->watch_sid = r->watch_sid;
	h->qkey = r->qkey;
}

static void take_params(struct rc_id *r, const struct rdma_conn_param *p)
{
	if (!p)
		return;
	r->resp_res = p->responder_resources;
	r->init_depth = p->initiator_depth;
	r->retry = p->retry_count;
	r->rnr_retry = p->rnr_retry_count;
}

static void connect_failed(struct rc_id *r, enum rdma_cm_event_type type, int status)
{
	r->st = RC_ROUTE;
	watch_drop(r);
	ev_post(r, type, status, NULL, 0);
}

static void on_connect(void *ctx, int status, const void *resp, uint32_t len)
{
	struct rc_id *r = ctx;
	struct mrce_cm_connect_resp a;
	const struct rc_hdr *h;
	struct rc_event *e;
	uint32_t plen;
	int ret;

	DBG("id %p: connect answered: %s, result %u\n", (void *)r, strerror(status),
	    status || len < sizeof(a) ? 0 : ((const struct mrce_cm_connect_resp *)resp)->result);
	pthread_mutex_lock(&g_lock);
	if (r->destroying || r->st != RC_CONNECTING || status == EIO) {
		pthread_mutex_unlock(&g_lock);
		return;
	}
	switch (status) {
	case 0:
		break;
	case ECONNREFUSED: /* nobody listens there: the IB CM's REJ "invalid service id" */
		connect_failed(r, RDMA_CM_EVENT_REJECTED, IB_CM_REJ_INVALID_SERVICE_ID);
		goto out;
	case ETIMEDOUT:
	case ECONNRESET:
	case ENOBUFS:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ECONNABORTED:
		connect_failed(r, RDMA_CM_EVENT_UNREACHABLE, -status);
		goto out;
	default:
		connect_failed(r, RDMA_CM_EVENT_CONNECT_ERROR, -status);
		goto out;
	}
	if (len < sizeof(a)) {
		connect_failed(r, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
		goto out;
	}
	memcpy(&a, resp, sizeof(a));
	plen = a.private_data_len > MRCE_CM_PRIVATE_DATA_MAX ? 0 : a.private_data_len;
	if (a.result != MRCE_CM_ACCEPTED) {
		r->st = RC_ROUTE;
		watch_drop(r);
		ev_post(r, RDMA_CM_EVENT_REJECTED, IB_CM_REJ_CONSUMER_DEFINED, a.private_data, plen);
		goto out;
	}
	h = hdr_of(a.private_data, plen);
	r->peer_qpn = a.qpn;
	r->peer_psn = a.psn;
	memcpy(r->peer_gid, a.gid, 16);
	if (h) {
		r->peer_watch = h->watch_sid;
		if (h->qkey)
			r->qkey = h->qkey;
	}
	if (r->id.qp_type == IBV_QPT_UD) {
		e = ev_new(r, RDMA_CM_EVENT_ESTABLISHED, 0, h ? a.private_data + sizeof(*h) :
			   a.private_data, h ? plen - sizeof(*h) : plen);
		if (e) {
			ah_of(r, &e->ev.param.ud.ah_attr);
			e->ev.param.ud.qp_num = a.qpn;
			e->ev.param.ud.qkey = r->qkey;
		}
		r->st = RC_CONNECTED;
		ev_push(r->id.channel, e);
		goto out;
	}
	ret = connect_qp(r);
	if (ret) {
		connect_failed(r, RDMA_CM_EVENT_CONNECT_ERROR, -ret);
		goto out;
	}
	e = ev_new(r, r->id.qp ? RDMA_CM_EVENT_ESTABLISHED : RDMA_CM_EVENT_CONNECT_RESPONSE, 0,
		   h ? a.private_data + sizeof(*h) : a.private_data, h ? plen - sizeof(*h) : plen);
	if (e) {
		e->ev.param.conn.responder_resources = h ? h->initiator_depth : 0;
		e->ev.param.conn.initiator_depth = h ? h->responder_resources : 0;
		e->ev.param.conn.flow_control = h ? h->flow_control : 1;
		e->ev.param.conn.rnr_retry_count = h ? h->rnr_retry_count : 7;
		e->ev.param.conn.srq = h ? h->srq : 0;
		e->ev.param.conn.qp_num = a.qpn;
	}
	r->st = RC_CONNECTED;
	ev_push(r->id.channel, e);
	watch_start(r);
out:
	pthread_mutex_unlock(&g_lock);
}

EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct rc_id *r = rc(id);
	struct mrce_cm_connect_req req = { 0 };
	struct rc_hdr h;
	const struct rdma_conn_param *p = conn_param;
	size_t plen = p && p->private_data ? p->private_data_len : 0;
	int ret;

	if (!r || (r->st != RC_ROUTE && !(r->st == RC_ADDR && r->id.qp_type == IBV_QPT_UD)))
		return fail(EINVAL);
	if (plen > RC_PDATA_MAX)
		return fail(EINVAL);
	take_params(r, p);
	ret = own_conn(r);
	if (!ret && r->id.qp_type != IBV_QPT_UD)
		ret = watch_listen(r);
	if (ret)
		return fail(ret);
	r->psn = random32() & 0xffffff;
	fill_hdr(r, &h, p);
	rc_addr_get(&r->id.route.addr.dst_addr, r->peer_addr);
	peer_to_req(r, &req);
	req.service_id = sid_of(r->id.ps, ntohs(r->id.route.addr.dst_sin.sin_port));
	req.qpn = (r->id.qp ? r->id.qp->qp_num : p ? p->qp_num : 0) & 0xffffff;
	req.psn = r->psn;
	memcpy(req.gid, g_gid, 16);
	req.private_data_len = (uint32_t)(sizeof(h) + plen);
	memcpy(req.private_data, &h, sizeof(h));
	if (plen)
		memcpy(req.private_data + sizeof(h), p->private_data, plen);
	{
		char a[INET6_ADDRSTRLEN];

		DBG("id %p: connect to service 0x%x at %s\n", (void *)r, req.service_id,
		    rc_addr_str(r->peer_addr, a, sizeof(a)));
	}
	pthread_mutex_lock(&g_lock);
	r->st = RC_CONNECTING;
	ret = rc_conn_send(r->conn, MRCE_OP_CM_CONNECT, &req, sizeof(req), on_connect, r);
	if (ret)
		r->st = RC_ROUTE;
	pthread_mutex_unlock(&g_lock);
	if (ret)
		return fail(ret);
	return r->sync ? sync_wait(r) : 0;
}

EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	/* the daemon confirmed the reply (the IB CM's RTU) when CM_CONNECT completed */
	if (!id || rc(id)->st != RC_CONNECTED)
		return fail(EINVAL);
	return 0;
}

static void on_accept(void *ctx, int status, const void *resp, uint32_t len)
{
	struct rc_id *r = ctx;

	(void)resp, (void)len;
	pthread_mutex_lock(&g_lock);
	if (r->destroying || r->st != RC_ACCEPTING || status == EIO) {
		pthread_mutex_unlock(&g_lock);
		return;
	}
	if (r->id.qp_type == IBV_QPT_UD) {
		r->st = RC_CONNECTED; /* SIDR: no event on the accepting side */
	} else if (status) {
		r->st = RC_DONE;
		watch_drop(r);
		ev_post(r, RDMA_CM_EVENT_CONNECT_ERROR, -status, NULL, 0);
	} else {
		r->st = RC_CONNECTED;
		ev_post(r, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
		watch_start(r);
	}
	pthread_mutex_unlock(&g_lock);
}

EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct rc_id *r = rc(id);
	struct mrce_cm_accept_req req = { 0 };
	const struct rdma_conn_param *p = conn_param;
	size_t plen = p && p->private_data ? p->private_data_len : 0;
	bool ud;
	struct rc_hdr h;
	int ret;

	if (!r || r->st != RC_REQ || !r->lconn)
		return fail(EINVAL);
	if (plen > RC_PDATA_MAX)
		return fail(EINVAL);
	ud = r->id.qp_type == IBV_QPT_UD;
	if (p) {
		/* what we accept as responder: at most what the requester asked for */
		r->resp_res = p->responder_resources;
		r->init_depth = p->initiator_depth;
		r->rnr_retry = p->rnr_retry_count;
	}
	ret = ud ? 0 : own_conn(r);
	if (!ret && !ud)
		ret = watch_listen(r);
	if (ret)
		return fail(ret);
	r->psn = random32() & 0xffffff;
	pthread_mutex_lock(&g_lock);
	ret = ud ? 0 : connect_qp(r); /* the listener's QP is at RTS before the reply */
	pthread_mutex_unlock(&g_lock);
	if (ret)
		return fail(ret);
	fill_hdr(r, &h, p);
	req.request = r->request;
	req.qpn = (r->id.qp ? r->id.qp->qp_num : p ? p->qp_num : 0) & 0xffffff;
	req.psn = r->psn;
	memcpy(req.gid, g_gid, 16);
	req.private_data_len = (uint32_t)(sizeof(h) + plen);
	memcpy(req.private_data, &h, sizeof(h));
	if (plen)
		memcpy(req.private_data + sizeof(h), p->private_data, plen);
	pthread_mutex_lock(&g_lock);
	r->st = RC_ACCEPTING;
	ret = rc_conn_send(r->lconn, MRCE_OP_CM_ACCEPT, &req, sizeof(req), on_accept, r);
	if (ret)
		r->st = RC_REQ;
	pthread_mutex_unlock(&g_lock);
	if (ret)
		return fail(ret);
	return r->sync && !ud ? sync_wait(r) : 0;
}

EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	struct rc_id *r = rc(id);
	struct mrce_cm_reject_req req = { 0 };
	int ret;

	if (!r || r->st != RC_REQ || !r->lconn)
		return fail(EINVAL);
	if (private_data_len > MRCE_CM_PRIVATE_DATA_MAX)
		return fail(EINVAL);
	req.request = r->request;
	if (private_data && private_data_len) {
		req.private_data_len = private_data_len;
		memcpy(req.private_data, private_data, private_data_len);
	}
	ret = rc_conn_call(r->lconn, MRCE_OP_CM_REJECT, &req, sizeof(req), NULL, 0);
	r->st = RC_DONE;
	return ret ? fail(ret) : 0;
}

EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			   uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}

EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct rc_id *r = rc(id);
	int ret = 0;

	if (!r)
		return fail(EINVAL);
	pthread_mutex_lock(&g_lock);
	if (r->st == RC_CONNECTED && r->id.qp_type != IBV_QPT_UD) {
		r->st = RC_DISCONNECTED;
		qp_to_err(r);
		watch_drop(r);
		ev_post(r, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	} else if (r->st == RC_DISCONNECTED || r->st == RC_CONNECTED) {
		qp_to_err(r);
	} else {
		ret = EINVAL;
	}
	pthread_mutex_unlock(&g_lock);
	return ret ? fail(ret) : 0;
}

EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	return id ? 0 : fail(EINVAL);
}

/* ---- destroy, migrate, options ---- */

/* Frees a child whose CONNECT_REQUEST the application never took; g_lock is not held. */
static void drop_unclaimed(struct rc_id *c)
{
	struct mrce_cm_reject_req rej = { .request = c->request };

	rc_conn_call(c->lconn, MRCE_OP_CM_REJECT, &rej, sizeof(rej), NULL, 0);
	rc_conn_put(c->lconn);
	if (c->sync)
		rdma_destroy_event_channel(c->id.channel);
	free(c);
}

EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct rc_id *r = rc(id), *c;
	struct rc_event *e, *unclaimed = NULL;

	if (!r)
		return fail(EINVAL);
	if (r->id.event) {
		rdma_ack_cm_event(r->id.event);
		r->id.event = NULL;
	}
	pthread_mutex_lock(&g_lock);
	/* as librdmacm: wait until every event handed out for the id is acked */
	while (r->events_out)
		pthread_cond_wait(&g_acked, &g_lock);
	r->destroying = true;
	e = ev_take(r->id.channel, r, false);
	if (r->st == RC_LISTEN)
		unclaimed = ev_take(r->id.channel, r, true);
	pthread_mutex_unlock(&g_lock);
	while (e) {
		struct rc_event *n = e->next;

		free(e);
		e = n;
	}
	if (r->st == RC_LISTEN && r->conn) {
		struct mrce_cm_listen_req req = {
			.service_id = sid_of(r->id.ps, ntohs(r->id.route.addr.src_sin.sin_port)) };

		rc_conn_forget(r->conn, r);
		/* children may keep the connection open: stop listening now */
		rc_conn_call(r->conn, MRCE_OP_CM_UNLISTEN, &req, sizeof(req), NULL, 0);
	}
	while (unclaimed) {
		struct rc_event *n = unclaimed->next;

		c = rc(unclaimed->ev.id);
		free(unclaimed);
		drop_unclaimed(c);
		unclaimed = n;
	}
	if (r->st == RC_REQ && r->lconn) {
		struct mrce_cm_reject_req rej = { .request = r->request };

		rc_conn_call(r->lconn, MRCE_OP_CM_REJECT, &rej, sizeof(rej), NULL, 0);
	}
	if (r->lconn) {
		rc_conn_forget(r->lconn, r);
		rc_conn_put(r->lconn);
	}
	if (r->conn) {
		rc_conn_forget(r->conn, r);
		rc_conn_put(r->conn); /* the daemon drops our listens and connects: the peer learns */
	}
	if (r->sync)
		rdma_destroy_event_channel(r->id.channel);
	free(r->ep_attr);
	free(r);
	return 0;
}

EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct rc_id *r = rc(id);
	struct rdma_event_channel *old, *own = NULL;
	struct rc_event *e;

	if (!r)
		return fail(EINVAL);
	if (!channel) {
		own = channel = rdma_create_event_channel();
		if (!channel)
			return -1;
	}
	pthread_mutex_lock(&g_lock);
	old = r->id.channel;
	e = ev_take(old, r, false);
	while (e) {
		struct rc_event *n = e->next;

		ev_push(channel, e);
		e = n;
	}
	r->id.channel = channel;
	pthread_mutex_unlock(&g_lock);
	if (r->sync)
		rdma_destroy_event_channel(old);
	r->sync = own != NULL;
	return 0;
}

EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			   size_t optlen)
{
	(void)optval, (void)optlen;
	if (!id)
		return fail(EINVAL);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
		case RDMA_OPTION_ID_REUSEADDR:
		case RDMA_OPTION_ID_AFONLY:
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			return 0; /* accepted; the daemon's transport has its own timers and classes */
		}
	}
	return fail(ENOSYS);
}

EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id, (void)addr, (void)context;
	return fail(EOPNOTSUPP);
}

EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
				  void *context)
{
	(void)id, (void)mc_join_attr, (void)context;
	return fail(EOPNOTSUPP);
}

EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id, (void)addr;
	return fail(EOPNOTSUPP);
}

EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return fail(EOPNOTSUPP);
}

EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return fail(EOPNOTSUPP);
}

EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? id->route.addr.src_sin.sin_port : 0;
}

EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? id->route.addr.dst_sin.sin_port : 0;
}

/* ---- devices, endpoints, addrinfo ---- */

EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = calloc(2, sizeof(*list));

	if (!list)
		return NULL;
	if (!device())
		list[0] = g_ctx;
	if (num_devices)
		*num_devices = list[0] ? 1 : 0;
	return list;
}

EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			  struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	enum rdma_port_space ps;
	int ret;

	if (!id || !res)
		return fail(EINVAL);
	ps = res->ai_port_space ? (enum rdma_port_space)res->ai_port_space :
		res->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (rdma_create_id(NULL, &cid, NULL, ps))
		return -1;
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(cid, res->ai_src_addr);
		if (!ret && qp_init_attr) {
			rc(cid)->ep_attr = malloc(sizeof(*qp_init_attr));
			if (rc(cid)->ep_attr) {
				*rc(cid)->ep_attr = *qp_init_attr;
				if (res->ai_qp_type)
					rc(cid)->ep_attr->qp_type = res->ai_qp_type;
			}
			else
				ret = fail(ENOMEM);
		}
		if (!ret)
			cid->pd = pd;
	} else {
		ret = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000);
		if (!ret)
			ret = rdma_resolve_route(cid, 2000);
		if (!ret) {
			cid->pd = pd;
			if (qp_init_attr) {
				if (res->ai_qp_type)
					qp_init_attr->qp_type = res->ai_qp_type;
				ret = rdma_create_qp(cid, pd, qp_init_attr);
			}
		}
	}
	if (ret) {
		int err = errno;

		rdma_destroy_id(cid);
		return fail(err);
	}
	*id = cid;
	return 0;
}

EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

struct rc_ai {
	struct rdma_addrinfo ai;
	struct sockaddr_in6 src, dst; /* room for either family */
};

/* Copies SA (AF_INET or AF_INET6, LEN bytes at least) into SLOT as the answer's source or destination. */
static int ai_put(struct rc_ai *r, bool src, const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_in6 *slot = src ? &r->src : &r->dst;
	socklen_t n = rc_addr_len(sa);

	if (!n || len < n)
		return EAFNOSUPPORT;
	memcpy(slot, sa, n);
	if (src) {
		r->ai.ai_src_addr = (struct sockaddr *)slot;
		r->ai.ai_src_len = n;
	} else {
		r->ai.ai_dst_addr = (struct sockaddr *)slot;
		r->ai.ai_dst_len = n;
	}
	return 0;
}

static void ai_types(struct rc_ai *r, const struct rdma_addrinfo *hints)
{
	r->ai.ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type :
		hints && hints->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	r->ai.ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space :
		r->ai.ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
}

/*
 * No node and no service: the addresses come from the hints (as librdmacm
 * does; libfabric's verbs provider asks this way with a source address).
 */
static int addrinfo_from_hints(const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	struct rc_ai *r;
	int ret = 0;

	if (!hints || (!hints->ai_src_addr && !hints->ai_dst_addr))
		return fail(EINVAL);
	r = calloc(1, sizeof(*r));
	if (!r)
		return fail(ENOMEM);
	if (hints->ai_src_addr)
		ret = ai_put(r, true, hints->ai_src_addr, hints->ai_src_len);
	if (!ret && hints->ai_dst_addr)
		ret = ai_put(r, false, hints->ai_dst_addr, hints->ai_dst_len);
	if (ret) {
		free(r);
		return fail(ret);
	}
	r->ai.ai_flags = hints->ai_flags;
	r->ai.ai_family = (r->ai.ai_dst_addr ? r->ai.ai_dst_addr : r->ai.ai_src_addr)->sa_family;
	ai_types(r, hints);
	*res = &r->ai;
	return 0;
}

/*
 * Of getaddrinfo's answers, the first of the family mrce0 serves (a name
 * with A and AAAA records reaches the daemon in its own family); the first
 * one when none is, or when the device is not there to ask.
 */
static const struct addrinfo *pick_family(const struct addrinfo *ai)
{
	const struct addrinfo *a;
	bool mixed = false;

	for (a = ai; a; a = a->ai_next)
		mixed |= a->ai_family != ai->ai_family;
	/* one family: no need to open the device to choose */
	if (!mixed || device())
		return ai;
	for (a = ai; a; a = a->ai_next)
		if (a->ai_family == g_family)
			return a;
	return ai;
}

EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			    const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo h = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	const struct addrinfo *a;
	struct rc_ai *r;
	int ret, flags = hints ? hints->ai_flags : 0;

	if (!res)
		return fail(EINVAL);
	if (hints && hints->ai_family && hints->ai_family != AF_INET &&
	    hints->ai_family != AF_INET6) {
		fprintf(stderr, "metaroce rdmacm: address family %d is not served: MetaRoCE's "
			"rdma_cm serves IPv4 and IPv6 addresses (AF_INET, AF_INET6), not AF_IB\n",
			hints->ai_family);
		return fail(EAFNOSUPPORT);
	}
	if (!node && !service)
		return addrinfo_from_hints(hints, res);
	if (hints && hints->ai_family)
		h.ai_family = hints->ai_family;
	if (flags & RAI_PASSIVE)
		h.ai_flags |= AI_PASSIVE;
	if (flags & RAI_NUMERICHOST)
		h.ai_flags |= AI_NUMERICHOST;
	ret = getaddrinfo(node, service, &h, &ai);
	if (ret)
		return ret;
	a = pick_family(ai);
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return fail(ENOMEM);
	}
	r->ai.ai_flags = flags;
	r->ai.ai_family = a->ai_family;
	ai_types(r, hints);
	if (flags & RAI_PASSIVE) {
		ret = ai_put(r, true, a->ai_addr, a->ai_addrlen);
	} else {
		ret = ai_put(r, false, a->ai_addr, a->ai_addrlen);
		if (!ret && hints && hints->ai_src_addr &&
		    ai_put(r, true, hints->ai_src_addr, hints->ai_src_len))
			r->ai.ai_src_addr = NULL, r->ai.ai_src_len = 0;
	}
	freeaddrinfo(ai);
	if (ret) {
		free(r);
		return fail(ret);
	}
	*res = &r->ai;
	return 0;
}

EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *n = res->ai_next;

		free(res);
		res = n;
	}
}
