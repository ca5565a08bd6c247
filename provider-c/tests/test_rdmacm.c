// SPDX-License-Identifier: Apache-2.0
/*
 * Daemon-free unit tests of libmetaroce-rdmacm.so (src/rdmacm.c, included so
 * that its event queue can be driven directly): event channels (a count per
 * event, EAGAIN when non-blocking, order), rdma_migrate_id, events dropped by
 * rdma_destroy_id, argument checks, rdma_getaddrinfo (also from hints alone),
 * a loopback bind (accepted without a device, no listen or resolve from it), rdma_init_qp_attr,
 * rdma_event_str, and the clear failure without an mrce0 device; IPv6: the address helpers,
 * AF_INET6 in rdma_getaddrinfo, binds, rdma_resolve_addr (ADDR_RESOLVED with IPv6 addresses
 * and GID, ADDR_ERROR for another family or no route) and the CM_CONNECT's peer address.
 */
#include "../src/rdmacm.c"
#include <rdma/rsocket.h>


static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                            \
		}                                                              \
	} while (0)

static bool readable(struct rdma_event_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void post(struct rdma_cm_id *id, enum rdma_cm_event_type t, int status)
{
	pthread_mutex_lock(&g_lock);
	ev_post(rc(id), t, status, "pd", 3);
	pthread_mutex_unlock(&g_lock);
}

static void test_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch2;
	struct rdma_cm_id *a, *b;
	struct rdma_cm_event *ev;

	CHECK(ch && ch->fd >= 0);
	CHECK(fcntl(ch->fd, F_SETFL, O_NONBLOCK) == 0);
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);
	CHECK(!readable(ch));
	CHECK(rdma_create_id(ch, &a, (void *)0x1, RDMA_PS_TCP) == 0);
	CHECK(rdma_create_id(ch, &b, NULL, RDMA_PS_UDP) == 0);
	CHECK(a->qp_type == IBV_QPT_RC && b->qp_type == IBV_QPT_UD && a->context == (void *)0x1);

	/* in order, one count each */
	post(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	post(b, RDMA_CM_EVENT_ADDR_ERROR, -ENETUNREACH);
	post(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	CHECK(readable(ch));
	CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->id == a && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(ev->param.conn.private_data_len == 3 && !strcmp(ev->param.conn.private_data, "pd"));
	rdma_ack_cm_event(ev);

	/* migrate b (and its queued event) to another channel */
	ch2 = rdma_create_event_channel();
	CHECK(rdma_migrate_id(b, ch2) == 0 && b->channel == ch2);
	CHECK(readable(ch2));
	CHECK(rdma_get_cm_event(ch2, &ev) == 0 && ev->id == b && ev->status == -ENETUNREACH);
	rdma_ack_cm_event(ev);
	CHECK(!readable(ch2));

	/* destroying a drops its queued events and their counts */
	CHECK(readable(ch));
	CHECK(rdma_destroy_id(a) == 0);
	CHECK(!readable(ch));
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);

	/* migrating to no channel makes the id synchronous, with its own channel */
	CHECK(rdma_migrate_id(b, NULL) == 0 && b->channel && b->channel != ch2 && rc(b)->sync);
	CHECK(rdma_destroy_id(b) == 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
}

static void test_arguments(void)
{
	struct rdma_cm_id *id;
	struct sockaddr_in6 six = { .sin6_family = AF_INET6 };
	struct sockaddr_in four = { .sin_family = AF_INET, .sin_port = htons(7471) };
	struct sockaddr_storage ib = { .ss_family = AF_IB };

	CHECK(rdma_create_id(NULL, &id, NULL, (enum rdma_port_space)0x999) == -1 && errno == EINVAL);
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&ib) == -1 && errno == EAFNOSUPPORT);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ib, 100) == -1 && errno == EAFNOSUPPORT);
	/* no daemon, no mrce0: a clear failure, IPv4 and IPv6 alike */
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&four) == -1 && errno == ENODEV);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&six) == -1 && errno == ENODEV);
	CHECK(rdma_resolve_route(id, 100) == -1 && errno == EINVAL);
	CHECK(rdma_connect(id, NULL) == -1 && errno == EINVAL);
	CHECK(rdma_accept(id, NULL) == -1 && errno == EINVAL);
	CHECK(rdma_reject(id, NULL, 0) == -1 && errno == EINVAL);
	CHECK(rdma_disconnect(id) == -1 && errno == EINVAL);
	CHECK(rdma_establish(id) == -1 && errno == EINVAL);
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&four, NULL) == -1 && errno == EOPNOTSUPP);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &(uint8_t){ 0 }, 1) == 0);
	CHECK(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, NULL, 0) == -1);
	CHECK(rdma_get_src_port(id) == 0 && rdma_get_dst_port(id) == 0);
	CHECK(rdma_destroy_id(id) == 0);
	/* rsockets: AF_INET and AF_INET6 stream sockets only; calls on other numbers are EBADF */
	CHECK(rsocket(AF_IB, SOCK_STREAM, 0) == -1 && errno == EAFNOSUPPORT);
	{
		int s = rsocket(AF_INET6, SOCK_STREAM, 0);

		CHECK(s >= 0);
		/* a sockaddr_in6 needs its whole length */
		CHECK(rbind(s, (struct sockaddr *)&six, sizeof(struct sockaddr_in)) == -1 &&
		      errno == EINVAL);
		CHECK(rclose(s) == 0);
	}
	CHECK(rsocket(AF_INET, SOCK_DGRAM, 0) == -1 && errno == EPROTONOSUPPORT);
	CHECK(rsend(12345, "x", 1, 0) == -1 && errno == EBADF);
	CHECK(rclose(-1) == -1 && errno == EBADF);
	{
		int s = rsocket(AF_INET, SOCK_STREAM, 0);
		char b;

		CHECK(s >= 0);
		CHECK(rrecv(s, &b, 1, 0) == -1 && errno == ENOTCONN);
		CHECK(rlisten(s, 1) == -1 && errno == EINVAL); /* not bound */
		CHECK(rfcntl(s, F_SETFL, O_NONBLOCK) == 0 && (rfcntl(s, F_GETFL) & O_NONBLOCK));
		CHECK(rclose(s) == 0);
	}
	{
		int n = -1;
		struct ibv_context **list = rdma_get_devices(&n);

		CHECK(list && !list[0] && n == 0);
		rdma_free_devices(list);
	}
}

static void test_getaddrinfo(void)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE }, *res;
	const struct sockaddr_in *sin;

	CHECK(rdma_getaddrinfo(NULL, "7471", &hints, &res) == 0);
	sin = (const struct sockaddr_in *)res->ai_src_addr;
	CHECK(sin && sin->sin_addr.s_addr == htonl(INADDR_ANY) && ntohs(sin->sin_port) == 7471);
	CHECK(!res->ai_dst_addr && res->ai_port_space == RDMA_PS_TCP && res->ai_qp_type == IBV_QPT_RC);
	rdma_freeaddrinfo(res);

	hints = (struct rdma_addrinfo){ .ai_flags = RAI_NUMERICHOST, .ai_port_space = RDMA_PS_UDP };
	CHECK(rdma_getaddrinfo("198.18.0.9", "9", &hints, &res) == 0);
	sin = (const struct sockaddr_in *)res->ai_dst_addr;
	CHECK(sin && sin->sin_addr.s_addr == htonl(0xc6120009) && ntohs(sin->sin_port) == 9);
	CHECK(res->ai_qp_type == IBV_QPT_UD && res->ai_port_space == RDMA_PS_UDP);
	rdma_freeaddrinfo(res);

	/* IPv6: numeric, passive wildcard, and the family of the hints */
	hints = (struct rdma_addrinfo){ .ai_family = AF_INET6 };
	CHECK(rdma_getaddrinfo("2001:db8::5", "9", &hints, &res) == 0);
	{
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)res->ai_dst_addr;
		struct in6_addr want;

		inet_pton(AF_INET6, "2001:db8::5", &want);
		CHECK(res->ai_family == AF_INET6 && res->ai_dst_len == sizeof(*s6));
		CHECK(s6 && s6->sin6_family == AF_INET6 && ntohs(s6->sin6_port) == 9 &&
		      !memcmp(&s6->sin6_addr, &want, 16));
		CHECK(!res->ai_src_addr && res->ai_qp_type == IBV_QPT_RC);
	}
	rdma_freeaddrinfo(res);
	hints = (struct rdma_addrinfo){ .ai_flags = RAI_NUMERICHOST };
	CHECK(rdma_getaddrinfo("2001:db8::5", "9", &hints, &res) == 0);
	CHECK(res->ai_family == AF_INET6 && res->ai_dst_addr->sa_family == AF_INET6);
	rdma_freeaddrinfo(res);
	hints = (struct rdma_addrinfo){ .ai_flags = RAI_PASSIVE, .ai_family = AF_INET6 };
	CHECK(rdma_getaddrinfo(NULL, "7471", &hints, &res) == 0);
	CHECK(res->ai_src_addr && res->ai_src_addr->sa_family == AF_INET6 &&
	      rc_addr_is_any(res->ai_src_addr) && ntohs(((struct sockaddr_in6 *)res->ai_src_addr)->sin6_port) == 7471);
	rdma_freeaddrinfo(res);
	hints = (struct rdma_addrinfo){ .ai_family = AF_IB };
	CHECK(rdma_getaddrinfo("::1", "9", &hints, &res) == -1 && errno == EAFNOSUPPORT);
}

/* No node, no service: the addresses of the hints (libfabric asks this way). */
static void test_getaddrinfo_from_hints(void)
{
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons(5),
				   .sin_addr.s_addr = htonl(0xc6120001) };
	struct sockaddr_in6 six = { .sin6_family = AF_INET6, .sin6_port = htons(6),
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_storage ib = { .ss_family = AF_IB };
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_src_addr = (struct sockaddr *)&src,
				       .ai_src_len = sizeof(src) }, *res;
	const struct sockaddr_in *sin;

	CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) == 0);
	sin = (const struct sockaddr_in *)res->ai_src_addr;
	CHECK(sin && sin->sin_addr.s_addr == src.sin_addr.s_addr && ntohs(sin->sin_port) == 5);
	CHECK(!res->ai_dst_addr && res->ai_flags == RAI_PASSIVE);
	CHECK(res->ai_port_space == RDMA_PS_TCP && res->ai_qp_type == IBV_QPT_RC);
	rdma_freeaddrinfo(res);

	hints = (struct rdma_addrinfo){ .ai_dst_addr = (struct sockaddr *)&src,
					.ai_dst_len = sizeof(src), .ai_port_space = RDMA_PS_UDP };
	CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) == 0);
	CHECK(res->ai_dst_addr && !res->ai_src_addr && res->ai_qp_type == IBV_QPT_UD);
	rdma_freeaddrinfo(res);

	hints = (struct rdma_addrinfo){ 0 };
	CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) == -1 && errno == EINVAL);
	CHECK(rdma_getaddrinfo(NULL, NULL, NULL, &res) == -1 && errno == EINVAL);
	hints = (struct rdma_addrinfo){ .ai_dst_addr = (struct sockaddr *)&six,
					.ai_dst_len = sizeof(six) };
	CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) == 0);
	CHECK(res->ai_family == AF_INET6 && res->ai_dst_len == sizeof(six) &&
	      !memcmp(res->ai_dst_addr, &six, sizeof(six)));
	rdma_freeaddrinfo(res);
	/* a sockaddr_in6 cut short, or AF_IB: not served */
	hints = (struct rdma_addrinfo){ .ai_src_addr = (struct sockaddr *)&six,
					.ai_src_len = sizeof(struct sockaddr_in) };
	CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) == -1 && errno == EAFNOSUPPORT);
	hints = (struct rdma_addrinfo){ .ai_src_addr = (struct sockaddr *)&ib,
					.ai_src_len = sizeof(ib) };
	CHECK(rdma_getaddrinfo(NULL, NULL, &hints, &res) == -1 && errno == EAFNOSUPPORT);
}

/* Makes the test's stand-in device serve A (a GID index 0 as the daemon gives it). */
static void serve(const char *a)
{
	inet_pton(AF_INET6, a, g_gid);
	g_family = rc_addr_is_v4mapped(g_gid) ? AF_INET : AF_INET6;
}

/*
 * A loopback bind is accepted without a device (as the kernel accepts it);
 * listening or resolving from it is refused. Needs a device: a stand-in
 * context pointer (never dereferenced on these paths) and mrce0's address.
 */
static void test_loopback_bind(void)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in other = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000001) };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(9),
				   .sin_addr.s_addr = htonl(0xc6120002) };
	struct ibv_context *saved_ctx = g_ctx;
	struct ibv_context stand_in;
	struct rdma_cm_id *id;

	g_ctx = &stand_in;
	serve("::ffff:198.18.0.1");
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&lo) == 0);
	CHECK(id->verbs == NULL && rdma_get_src_port(id) != 0);
	CHECK(rdma_listen(id, 1) == -1 && errno == EADDRNOTAVAIL);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 100) == -1 &&
	      errno == EADDRNOTAVAIL);
	CHECK(rdma_destroy_id(id) == 0);
	/* Any other address that is not mrce0's stays refused. */
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&other) == -1 && errno == EADDRNOTAVAIL);
	CHECK(rdma_destroy_id(id) == 0);
	/*
	 * A daemon serving 127.0.0.1 (--addr): that address is mrce0's, so the
	 * bind reserves its port at the daemon (CM_BIND), which this test has
	 * not: the bind fails with the connection's error and leaves the id
	 * unbound (RdmaCmIT binds with a daemon: mrce0 attached, EADDRINUSE).
	 */
	serve("::ffff:127.0.0.1");
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	errno = 0;
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&lo) == -1 && errno != 0 && errno != EADDRNOTAVAIL);
	CHECK(id->verbs == NULL && rdma_get_src_port(id) == 0 && rc(id)->st == RC_IDLE);
	CHECK(rdma_destroy_id(id) == 0);
	g_ctx = saved_ctx;
	serve("::");
}

static struct sockaddr_in6 sin6_of(const char *a, uint16_t port)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	inet_pton(AF_INET6, a, &s.sin6_addr);
	return s;
}

/* The 16-byte address form (rdmacm.h) of either family. */
static void test_addr_helpers(void)
{
	struct sockaddr_in four = { .sin_family = AF_INET, .sin_port = htons(5),
				    .sin_addr.s_addr = htonl(0xc6120007) };
	struct sockaddr_in6 six = sin6_of("2001:db8::7", 6), any6 = sin6_of("::", 0),
		lo6 = sin6_of("::1", 0), mapped_any = sin6_of("::ffff:0.0.0.0", 0);
	struct sockaddr_in any4 = { .sin_family = AF_INET };
	struct sockaddr_storage ss, ib = { .ss_family = AF_IB };
	uint8_t a[16], served[16] = { 0 };
	char buf[INET6_ADDRSTRLEN];

	CHECK(rc_addr_get((struct sockaddr *)&four, a) && rc_addr_is_v4mapped(a) &&
	      a[12] == 198 && a[13] == 18 && a[15] == 7);
	CHECK(!strcmp(rc_addr_str(a, buf, sizeof(buf)), "198.18.0.7"));
	CHECK(rc_addr_set((struct sockaddr *)&ss, a, htons(5)) == sizeof(struct sockaddr_in));
	CHECK(!memcmp(&ss, &four, sizeof(four)));
	CHECK(rc_addr_get((struct sockaddr *)&six, a) && !rc_addr_is_v4mapped(a));
	CHECK(!strcmp(rc_addr_str(a, buf, sizeof(buf)), "2001:db8::7"));
	CHECK(rc_addr_set((struct sockaddr *)&ss, a, htons(6)) == sizeof(struct sockaddr_in6));
	CHECK(!memcmp(&ss, &six, sizeof(six)));
	CHECK(rdma_get_src_port(&(struct rdma_cm_id){ .route.addr.src_sin6 = six }) == htons(6));
	CHECK(!rc_addr_get((struct sockaddr *)&ib, a) && !a[0] && !a[15]);
	CHECK(rc_addr_check_family((struct sockaddr *)&ib) == EAFNOSUPPORT &&
	      rc_addr_check_family(NULL) == EINVAL &&
	      rc_addr_check_family((struct sockaddr *)&six) == 0);
	CHECK(rc_addr_len((struct sockaddr *)&four) == sizeof(four) &&
	      rc_addr_len((struct sockaddr *)&six) == sizeof(six) &&
	      rc_addr_len((struct sockaddr *)&ib) == 0);
	CHECK(rc_addr_is_any((struct sockaddr *)&any4) && rc_addr_is_any((struct sockaddr *)&any6) &&
	      rc_addr_is_any((struct sockaddr *)&mapped_any));
	CHECK(!rc_addr_is_any((struct sockaddr *)&six) && !rc_addr_is_any((struct sockaddr *)&lo6));
	rc_addr_get((struct sockaddr *)&lo6, a);
	CHECK(rc_addr_is_loopback(a, served));
	CHECK(!rc_addr_is_loopback(a, a)); /* a daemon that serves ::1 */
	rc_addr_get((struct sockaddr *)&six, a);
	CHECK(!rc_addr_is_loopback(a, served));
}

/*
 * An id on a daemon that serves an IPv6 address: binds (the served address,
 * :: and ::1; another address refused), rdma_resolve_addr (ADDR_RESOLVED with
 * IPv6 source, destination and GID; ADDR_ERROR for an IPv4 destination, and
 * for no route), and the CM_CONNECT's peer address. A successful resolve
 * needs the kernel to route from the served address: ::1 (as a daemon serving
 * loopback with --addr ::1), when this host has IPv6 on lo.
 */
static void test_ipv6(void)
{
	struct ibv_context *saved_ctx = g_ctx;
	struct ibv_context stand_in;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_in6 other = sin6_of("2001:db8::2", 0), lo6 = sin6_of("::1", 0),
		dst = sin6_of("2001:db8::9", 7471);
	struct sockaddr_in dst4 = { .sin_family = AF_INET, .sin_port = htons(7471),
				    .sin_addr.s_addr = htonl(0xc6120002) };
	struct mrce_cm_connect_req req;
	bool lo_v6;
	int s;

	g_ctx = &stand_in;
	serve("2001:db8::1");
	CHECK(g_family == AF_INET6);
	/* ::1 is a loopback bind (no device), another address is refused */
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&lo6) == 0);
	CHECK(id->verbs == NULL && rdma_get_src_port(id) != 0 &&
	      rdma_get_local_addr(id)->sa_family == AF_INET6);
	CHECK(rdma_listen(id, 1) == -1 && errno == EADDRNOTAVAIL);
	CHECK(rdma_destroy_id(id) == 0);
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&other) == -1 && errno == EADDRNOTAVAIL);
	CHECK(rdma_destroy_id(id) == 0);

	/* an IPv4 destination from an IPv6 daemon, and no route: ADDR_ERROR events */
	ch = rdma_create_event_channel();
	CHECK(ch && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst4, 100) == 0);
	CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ADDR_ERROR &&
	      ev->status == -EAFNOSUPPORT);
	rdma_ack_cm_event(ev);
	/* 2001:db8::1 is no address of this host: the route probe fails */
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 100) == 0);
	CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ADDR_ERROR &&
	      ev->status < 0);
	rdma_ack_cm_event(ev);
	CHECK(rdma_destroy_id(id) == 0);

	/* served ::1: the resolve succeeds, all in IPv6 */
	s = socket(AF_INET6, SOCK_DGRAM, 0);
	lo_v6 = s >= 0 && !bind(s, (struct sockaddr *)&lo6, sizeof(lo6));
	if (s >= 0)
		close(s);
	serve("::1");
	if (lo_v6) {
		struct sockaddr_in6 d = sin6_of("::1", 7471);
		const struct sockaddr_in6 *src;

		CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
		CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 100) == 0);
		CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED);
		rdma_ack_cm_event(ev);
		src = (const struct sockaddr_in6 *)rdma_get_local_addr(id);
		CHECK(src->sin6_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&src->sin6_addr) &&
		      rdma_get_src_port(id) != 0);
		CHECK(!memcmp(rdma_get_peer_addr(id), &d, sizeof(d)) &&
		      rdma_get_dst_port(id) == htons(7471));
		CHECK(!memcmp(id->route.addr.addr.ibaddr.dgid.raw, &d.sin6_addr, 16) &&
		      !memcmp(id->route.addr.addr.ibaddr.sgid.raw, g_gid, 16));
		CHECK(rdma_resolve_route(id, 100) == 0);
		CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED);
		rdma_ack_cm_event(ev);
		CHECK(!memcmp(id->route.path_rec->dgid.raw, &d.sin6_addr, 16));
		CHECK(rdma_destroy_id(id) == 0);
	} else {
		fprintf(stderr, "test_rdmacm: no IPv6 on lo here: the successful IPv6 resolve is skipped\n");
	}
	rdma_destroy_event_channel(ch);

	/* the CM_CONNECT names an IPv6 peer in peer_ipv6, an IPv4 one in peer_ipv4 */
	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	rc_addr_get((struct sockaddr *)&dst, rc(id)->peer_addr);
	memset(&req, 0xee, sizeof(req));
	peer_to_req(rc(id), &req);
	CHECK(req.peer_ipv4 == 0 && !memcmp(req.peer_ipv6, &dst.sin6_addr, 16));
	rc_addr_get((struct sockaddr *)&dst4, rc(id)->peer_addr);
	memset(&req, 0, sizeof(req));
	peer_to_req(rc(id), &req);
	CHECK(req.peer_ipv4 == dst4.sin_addr.s_addr);
	CHECK(rdma_destroy_id(id) == 0);
	g_ctx = saved_ctx;
	serve("::");
}

static void test_qp_attr(void)
{
	struct rdma_cm_id *id;
	struct ibv_qp_attr a;
	int mask;

	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
	rc(id)->peer_qpn = 0x123456;
	rc(id)->peer_psn = 0xabcdef;
	rc(id)->peer_gid[10] = rc(id)->peer_gid[11] = 0xff;
	rc(id)->peer_gid[15] = 2;
	rc(id)->psn = 0x111111;
	rc(id)->resp_res = 0; /* at least 1 */
	rc(id)->init_depth = 200; /* at most the device's */
	a.qp_state = IBV_QPS_INIT;
	CHECK(rdma_init_qp_attr(id, &a, &mask) == 0);
	CHECK(mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	CHECK(a.port_num == 1 && (a.qp_access_flags & IBV_ACCESS_REMOTE_READ));
	a.qp_state = IBV_QPS_RTR;
	CHECK(rdma_init_qp_attr(id, &a, &mask) == 0);
	CHECK(mask == (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
	CHECK(a.dest_qp_num == 0x123456 && a.rq_psn == 0xabcdef && a.max_dest_rd_atomic == 1);
	CHECK(a.ah_attr.is_global && a.ah_attr.grh.dgid.raw[15] == 2 && a.ah_attr.port_num == 1);
	a.qp_state = IBV_QPS_RTS;
	CHECK(rdma_init_qp_attr(id, &a, &mask) == 0);
	CHECK((mask & (IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) == (IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
	CHECK(a.sq_psn == 0x111111 && a.max_rd_atomic == g_max_rd);
	a.qp_state = IBV_QPS_SQD;
	CHECK(rdma_init_qp_attr(id, &a, &mask) == -1 && errno == EINVAL);
	rdma_destroy_id(id);

	CHECK(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP) == 0);
	a.qp_state = IBV_QPS_INIT;
	CHECK(rdma_init_qp_attr(id, &a, &mask) == 0 && (mask & IBV_QP_QKEY) && a.qkey == RDMA_UDP_QKEY);
	rdma_destroy_id(id);
}

int main(void)
{
	setenv("METAROCE_SOCK", "/nonexistent/metaroce-test.sock", 1);
	test_channel();
	test_arguments();
	test_getaddrinfo();
	test_getaddrinfo_from_hints();
	test_loopback_bind();
	test_addr_helpers();
	test_ipv6();
	test_qp_attr();
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_DISCONNECTED), "RDMA_CM_EVENT_DISCONNECTED"));
	CHECK(!strcmp(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT"));
	if (failures) {
		fprintf(stderr, "test_rdmacm: %d failures\n", failures);
		return 1;
	}
	printf("test_rdmacm: OK\n");
	return 0;
}
