// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_rdmacm_check: the rdma_cm cases no stock tool shows, for the
 * integration tests (RdmaCmIT), on an event channel made non-blocking and
 * polled (the other tools block in rdma_get_cm_event):
 *   server PORT accept   accept with private data "welcome", print the
 *                        requester's private data, then wait for DISCONNECTED
 *   server PORT reject   reject with private data "go-away"
 *   server PORT late FIFO
 *                        bind PORT and print BOUND (a second id's bind of it
 *                        must fail EADDRINUSE), then wait for a word on FIFO
 *                        (the test's signal, sent once the client's request
 *                        is held by the daemon): "listen" listens, accepts as
 *                        above with a receive posted, and checks the client's
 *                        DATA_LEN bytes (RECEIVED ... ok); "destroy" destroys
 *                        the bound id without listening (DESTROYED)
 *   bind PORT            bind PORT and print BIND OK or BIND <errno name>
 *   client ADDR PORT [hold|data]
 *                        connect with private data "hello"; print every event
 *                        with its status and private data; with hold, stay
 *                        connected until killed or the next event (the test
 *                        kills the peer or the daemon), else (with data after
 *                        sending DATA_LEN patterned bytes: SENT) disconnect
 *                        and wait for DISCONNECTED
 * With -6 first, the servers bind the IPv6 wildcard [::] instead of 0.0.0.0.
 * After ADDR_RESOLVED, CONNECT_REQUEST and ESTABLISHED a line "ADDRS src
 * ADDR PORT dst ADDR PORT" gives the id's addresses (rdma_get_local_addr,
 * rdma_get_peer_addr) as inet_ntop writes them, with the family (4 or 6).
 *   rserver PORT         rsockets: accept one connection, send RS_LEN patterned
 *                        bytes (SENT ... sum), close (CLOSED) and exit
 *   rclient ADDR PORT FIFO
 *                        rsockets: connect (CONNECTED), wait for the test's word
 *                        on FIFO (sent once the server has closed), then, non-
 *                        blocking, poll for 2 s without reading (the peer's
 *                        disconnect arrives meanwhile: never a hang-up while
 *                        bytes wait), read everything polling before each read
 *                        (RECEIVED ... sum ... ok), then wait for the hang-up
 *                        (HANGUP)
 * Every line is "EVENT <name> status <n> pdata <text>" or a failure; exit 0
 * when the sequence was as expected for the mode, 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#define DATA_LEN 4096
#define RS_LEN 65536

static struct rdma_event_channel *ch;

static void die(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	exit(1);
}

static bool bind6; /* -6: servers bind [::] */

/* "6 ADDR" or "4 ADDR" (BUF holds INET6_ADDRSTRLEN + 8). */
static const char *addr_str(const struct sockaddr *sa, char *buf)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(a));
	else if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(a));
	snprintf(buf, INET6_ADDRSTRLEN + 8, "%c %s", sa->sa_family == AF_INET6 ? '6' :
		 sa->sa_family == AF_INET ? '4' : '?', a);
	return buf;
}

/* The servers' bind address: 0.0.0.0 or, with -6, [::], with PORT. */
static struct sockaddr_in6 any_addr(int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	if (!bind6) {
		struct sockaddr_in *in = (struct sockaddr_in *)&a;

		memset(&a, 0, sizeof(a));
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
	}
	return a;
}

/* The next event, waiting with poll on the non-blocking channel fd. */
static struct rdma_cm_event *next_event(void)
{
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	for (;;) {
		if (!rdma_get_cm_event(ch, &ev))
			break;
		if (errno != EAGAIN)
			die("rdma_get_cm_event");
		if (poll(&p, 1, 120000) != 1) {
			printf("FAIL no event within 120 s\n");
			exit(1);
		}
	}
	printf("EVENT %s status %d pdata %.*s\n", rdma_event_str(ev->event), ev->status,
	       ev->param.conn.private_data ? (int)strnlen(ev->param.conn.private_data,
							   ev->param.conn.private_data_len) : 0,
	       ev->param.conn.private_data ? (const char *)ev->param.conn.private_data : "");
	if (ev->event == RDMA_CM_EVENT_ADDR_RESOLVED || ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
	    ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		char s[INET6_ADDRSTRLEN + 8], d[INET6_ADDRSTRLEN + 8];

		printf("ADDRS src %s %u dst %s %u\n", addr_str(rdma_get_local_addr(ev->id), s),
		       ntohs(rdma_get_src_port(ev->id)), addr_str(rdma_get_peer_addr(ev->id), d),
		       ntohs(rdma_get_dst_port(ev->id)));
	}
	fflush(stdout);
	return ev;
}

static enum rdma_cm_event_type expect(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = next_event();
	enum rdma_cm_event_type got = ev->event;

	rdma_ack_cm_event(ev);
	if (got != want) {
		printf("FAIL expected %s\n", rdma_event_str(want));
		exit(1);
	}
	return got;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC };

	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	return a;
}

/* The bytes a sender sends: a pattern of the offset, and their FNV-1a hash. */
static void fill_n(uint8_t *b, int n)
{
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + (i >> 8));
}

static void fill(uint8_t *b)
{
	fill_n(b, DATA_LEN);
}

static uint32_t fnv1a(const uint8_t *b, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *b++) * 16777619u;
	return h;
}

static const char *errno_name(int e)
{
	return e == EADDRINUSE ? "EADDRINUSE" : e == EINVAL ? "EINVAL" : strerror(e);
}

static int bind_only(int port)
{
	struct sockaddr_in6 sin = any_addr(port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(id, (struct sockaddr *)&sin))
		printf("BIND %s\n", errno_name(errno));
	else
		printf("BIND OK %d\n", ntohs(rdma_get_src_port(id)));
	rdma_destroy_id(id);
	return 0;
}

/* The test's word on FIFO (16 bytes at most). */
static void read_word(const char *fifo, char word[16])
{
	FILE *f = fopen(fifo, "r"); /* blocks until the test opens it to write */

	if (!f || fscanf(f, "%15s", word) != 1)
		die("reading the fifo");
	fclose(f);
}

/* Binds LISTEN to PORT; then waits for the test's word on FIFO; true: listen. */
static bool late_listen(struct rdma_cm_id *listen, int port, const char *fifo)
{
	struct sockaddr_in6 sin = any_addr(port);
	struct rdma_cm_id *again;
	char word[16] = "";

	if (rdma_bind_addr(listen, (struct sockaddr *)&sin))
		die("rdma_bind_addr");
	if (rdma_create_id(ch, &again, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (!rdma_bind_addr(again, (struct sockaddr *)&sin)) {
		printf("FAIL a second bind of port %d succeeded\n", port);
		exit(1);
	}
	printf("BIND-AGAIN %s\n", errno_name(errno));
	rdma_destroy_id(again);
	printf("BOUND %d\n", port);
	read_word(fifo, word);
	if (!strcmp(word, "destroy")) {
		rdma_destroy_id(listen);
		printf("DESTROYED\n");
		return false;
	}
	if (strcmp(word, "listen")) {
		printf("FAIL unknown word %s\n", word);
		exit(1);
	}
	if (rdma_listen(listen, 4))
		die("rdma_listen");
	return true;
}

static int server(int port, const char *mode, const char *fifo)
{
	struct sockaddr_in6 sin = any_addr(port);
	struct rdma_cm_id *listen, *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .private_data = "welcome", .private_data_len = 8,
				      .responder_resources = 1, .initiator_depth = 1 };
	static uint8_t buf[DATA_LEN], want[DATA_LEN];
	struct ibv_mr *mr = NULL;

	if (rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (fifo) {
		if (!late_listen(listen, port, fifo))
			return 0;
	} else if (rdma_bind_addr(listen, (struct sockaddr *)&sin) || rdma_listen(listen, 4)) {
		die("bind/listen");
	}
	printf("LISTENING %d\n", port);
	fflush(stdout);
	ev = next_event();
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST || ev->listen_id != listen) {
		printf("FAIL expected a CONNECT_REQUEST of the listener\n");
		return 1;
	}
	id = ev->id;
	rdma_ack_cm_event(ev);
	if (!strcmp(mode, "reject")) {
		if (rdma_reject(id, "go-away", 8))
			die("rdma_reject");
		printf("REJECTED-SENT\n");
		rdma_destroy_id(id);
		rdma_destroy_id(listen);
		return 0;
	}
	{
		struct ibv_qp_init_attr a = qp_attr();

		if (rdma_create_qp(id, NULL, &a))
			die("rdma_create_qp");
	}
	if (fifo) {
		mr = ibv_reg_mr(id->qp->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
		if (!mr || rdma_post_recv(id, NULL, buf, sizeof(buf), mr))
			die("posting a receive");
	}
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	expect(RDMA_CM_EVENT_ESTABLISHED);
	if (fifo) {
		struct ibv_wc wc;

		if (rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS)
			die("the receive");
		fill(want);
		printf("RECEIVED %u sum %08x %s\n", wc.byte_len, fnv1a(buf, wc.byte_len),
		       wc.byte_len == DATA_LEN && !memcmp(buf, want, DATA_LEN) ? "ok" : "CORRUPT");
	}
	expect(RDMA_CM_EVENT_DISCONNECTED);
	if (mr)
		ibv_dereg_mr(mr);
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(listen);
	printf("DONE\n");
	return 0;
}

/* Sends DATA_LEN patterned bytes on ID's QP and waits for the send's completion. */
static void send_data(struct rdma_cm_id *id)
{
	static uint8_t buf[DATA_LEN];
	struct ibv_mr *mr;
	struct ibv_wc wc;

	fill(buf);
	mr = ibv_reg_mr(id->qp->pd, buf, sizeof(buf), 0);
	if (!mr || rdma_post_send(id, NULL, buf, sizeof(buf), mr, IBV_SEND_SIGNALED))
		die("posting the send");
	if (rdma_get_send_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS)
		die("the send");
	printf("SENT %d sum %08x\n", DATA_LEN, fnv1a(buf, DATA_LEN));
	ibv_dereg_mr(mr);
}

static int client(const char *addr, int port, bool hold, bool data)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct rdma_conn_param cp = { .private_data = "hello", .private_data_len = 6,
				      .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr a = qp_attr();
	char service[16];
	enum rdma_cm_event_type got;

	snprintf(service, sizeof(service), "%d", port);
	if (rdma_getaddrinfo(addr, service, &hints, &res))
		die("rdma_getaddrinfo");
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_resolve_addr(id, NULL, res->ai_dst_addr, 2000))
		die("rdma_resolve_addr");
	rdma_freeaddrinfo(res);
	ev = next_event();
	got = ev->event;
	rdma_ack_cm_event(ev);
	if (got != RDMA_CM_EVENT_ADDR_RESOLVED) {
		rdma_destroy_id(id);
		return 0; /* ADDR_ERROR: the test checks the event and its status */
	}
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (rdma_create_qp(id, NULL, &a))
		die("rdma_create_qp");
	if (rdma_connect(id, &cp))
		die("rdma_connect");
	ev = next_event();
	got = ev->event;
	rdma_ack_cm_event(ev);
	if (got != RDMA_CM_EVENT_ESTABLISHED) {
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		return 0; /* the test checks the event, its status and private data */
	}
	if (hold) {
		/* until the test kills us, or the next event (DEVICE_REMOVAL, DISCONNECTED) */
		printf("HOLDING\n");
		fflush(stdout);
		ev = next_event();
		rdma_ack_cm_event(ev);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		printf("DONE\n");
		return 0;
	}
	if (data)
		send_data(id);
	if (rdma_disconnect(id))
		die("rdma_disconnect");
	expect(RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	printf("DONE\n");
	return 0;
}

/* rsockets: one connection, RS_LEN bytes sent, then closed. */
static int rs_server(int port)
{
	struct sockaddr_in6 sin = any_addr(port);
	static uint8_t b[RS_LEN];
	int l = rsocket(sin.sin6_family, SOCK_STREAM, 0), c;

	if (l < 0 || rbind(l, (struct sockaddr *)&sin, bind6 ? sizeof(sin) :
			   sizeof(struct sockaddr_in)) || rlisten(l, 1))
		die("rsocket/rbind/rlisten");
	printf("LISTENING %d\n", port);
	c = raccept(l, NULL, NULL);
	if (c < 0)
		die("raccept");
	fill_n(b, RS_LEN);
	for (int off = 0; off < RS_LEN;) {
		ssize_t n = rsend(c, b + off, RS_LEN - off, 0);

		if (n <= 0)
			die("rsend");
		off += (int)n;
	}
	printf("SENT %d sum %08x\n", RS_LEN, fnv1a(b, RS_LEN));
	if (rclose(c) || rclose(l))
		die("rclose");
	printf("CLOSED\n");
	return 0;
}

/* rpoll of FD for POLLIN within TIMEOUT_MS: its revents (0 on a timeout). */
static short rs_poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = rpoll(&p, 1, timeout_ms);

	if (r < 0)
		die("rpoll");
	return r ? p.revents : 0;
}

/* rsockets: the bytes a closed peer sent are all read before the hang-up shows. */
static int rs_client(const char *addr, int port, const char *fifo)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	bool v6 = strchr(addr, ':') != NULL;
	static uint8_t b[RS_LEN + 1], want[RS_LEN];
	char word[16];
	int fd = rsocket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), got = 0;
	short ev;

	if (fd < 0 || (v6 ? inet_pton(AF_INET6, addr, &sin6.sin6_addr) :
		       inet_pton(AF_INET, addr, &sin.sin_addr)) != 1 ||
	    rconnect(fd, v6 ? (struct sockaddr *)&sin6 : (struct sockaddr *)&sin,
		     v6 ? sizeof(sin6) : sizeof(sin)))
		die("rsocket/rconnect");
	printf("CONNECTED\n");
	read_word(fifo, word);
	if (rfcntl(fd, F_SETFL, rfcntl(fd, F_GETFL) | O_NONBLOCK))
		die("rfcntl");
	/* the server has closed: its disconnect arrives while nothing is read */
	for (int i = 0; i < 200; i++) {
		ev = rs_poll_in(fd, 0);
		if (!(ev & POLLIN) || (ev & (POLLHUP | POLLERR))) {
			printf("FAIL revents 0x%x with %d bytes unread\n", ev, RS_LEN);
			return 1;
		}
		usleep(10000);
	}
	for (;;) {
		ssize_t n;

		ev = rs_poll_in(fd, 10000);
		if ((ev & (POLLHUP | POLLERR)) && got < RS_LEN) {
			printf("FAIL revents 0x%x with %d bytes unread\n", ev, RS_LEN - got);
			return 1;
		}
		n = rrecv(fd, b + got, got + 1000 > RS_LEN + 1 ? RS_LEN + 1 - got : 1000, 0);
		if (n == 0)
			break;
		if (n < 0 && errno != EAGAIN)
			die("rrecv");
		if (n > 0)
			got += (int)n;
	}
	fill_n(want, RS_LEN);
	printf("RECEIVED %d sum %08x %s\n", got, fnv1a(b, got),
	       got == RS_LEN && !memcmp(b, want, RS_LEN) ? "ok" : "CORRUPT");
	for (int i = 0; i < 1000 && !(ev & POLLHUP); i++) {
		ev = rs_poll_in(fd, 10);
		if (!(ev & POLLHUP))
			usleep(10000);
	}
	printf(ev & POLLHUP ? "HANGUP\n" : "FAIL no hang-up within 10 s of the end of the stream\n");
	rclose(fd);
	return ev & POLLHUP ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct rdma_cm_event *ev;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK))
		die("fcntl");
	if (!rdma_get_cm_event(ch, &ev) || errno != EAGAIN) {
		printf("FAIL an empty non-blocking channel must answer EAGAIN\n");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "-6")) {
		bind6 = true;
		argc--;
		argv++;
	}
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), argv[3], NULL);
	if (argc == 5 && !strcmp(argv[1], "server") && !strcmp(argv[3], "late"))
		return server(atoi(argv[2]), "accept", argv[4]);
	if (argc == 3 && !strcmp(argv[1], "rserver"))
		return rs_server(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "rclient"))
		return rs_client(argv[2], atoi(argv[3]), argv[4]);
	if (argc == 3 && !strcmp(argv[1], "bind"))
		return bind_only(atoi(argv[2]));
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), argc == 5 && !strcmp(argv[4], "hold"),
			      argc == 5 && !strcmp(argv[4], "data"));
	fprintf(stderr, "usage: mrce_rdmacm_check [-6] server PORT accept|reject | "
		"server PORT late FIFO | bind PORT | client ADDR PORT [hold|data] | "
		"rserver PORT | rclient ADDR PORT FIFO\n");
	return 2;
}
