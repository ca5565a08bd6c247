// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_rdmacm_check: the rdma_cm cases no stock tool shows, for the
 * integration tests (RdmaCmIT), on an event channel made non-blocking and
 * polled (the other tools block in rdma_get_cm_event):
 *   server PORT accept   accept with private data "welcome", print the
 *                        requester's private data, then wait for DISCONNECTED
 *   server PORT reject   reject with private data "go-away"
 *   client ADDR PORT [hold]
 *                        connect with private data "hello"; print every event
 *                        with its status and private data; with hold, stay
 *                        connected until killed or the next event (the test
 *                        kills the peer or the daemon), else disconnect and
 *                        wait for DISCONNECTED
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

static struct rdma_event_channel *ch;

static void die(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	exit(1);
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

static int server(int port, const char *mode)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rdma_cm_id *listen, *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .private_data = "welcome", .private_data_len = 8,
				      .responder_resources = 1, .initiator_depth = 1 };

	if (rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(listen, (struct sockaddr *)&sin) || rdma_listen(listen, 4))
		die("bind/listen");
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
	if (rdma_accept(id, &cp))
		die("rdma_accept");
	expect(RDMA_CM_EVENT_ESTABLISHED);
	expect(RDMA_CM_EVENT_DISCONNECTED);
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(listen);
	printf("DONE\n");
	return 0;
}

static int client(const char *addr, int port, bool hold)
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
	if (rdma_disconnect(id))
		die("rdma_disconnect");
	expect(RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	printf("DONE\n");
	return 0;
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
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), argv[3]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), argc == 5 && !strcmp(argv[4], "hold"));
	fprintf(stderr, "usage: mrce_rdmacm_check server PORT accept|reject | "
		"client ADDR PORT [hold]\n");
	return 2;
}
