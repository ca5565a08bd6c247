// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the control-protocol client (mrce_ctrl.c) against a scripted
 * peer on a socketpair: framing, fds as SCM_RIGHTS on zero bytes, daemon
 * errno, protocol errors and a vanished daemon (EIO, for good).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mrce.h"
#include "check.h"


struct script {
	int fd;
	uint16_t status;
	int nfds;          /* eventfds to send after the response */
	int seq_delta;     /* a wrong seq in the response */
	int hangup;        /* close instead of answering */
	uint8_t req[64];   /* what the peer received */
	uint32_t req_len;
	uint16_t req_op;
};

static void send_fd(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	char zero = 0;
	struct iovec iov = { .iov_base = &zero, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf.buf,
			      .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &msg, 0) != 1)
		abort();
}

static void *peer(void *arg)
{
	struct script *s = arg;
	struct mrce_ctrl_hdr hdr;
	struct {
		struct mrce_ctrl_hdr hdr;
		struct mrce_handle_resp body;
	} resp;
	int i;

	if (recv(s->fd, &hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr))
		return NULL;
	s->req_op = hdr.op;
	s->req_len = hdr.len - (uint32_t)sizeof(hdr);
	if (s->req_len &&
	    recv(s->fd, s->req, s->req_len, MSG_WAITALL) != (ssize_t)s->req_len)
		return NULL;
	if (s->hangup) {
		close(s->fd);
		return NULL;
	}
	memset(&resp, 0, sizeof(resp));
	resp.hdr.len = sizeof(resp);
	resp.hdr.op = hdr.op;
	resp.hdr.status = s->status;
	resp.hdr.seq = hdr.seq + (uint32_t)s->seq_delta;
	resp.hdr.nfds = (uint16_t)s->nfds;
	resp.body.handle = 0xabcd;
	if (write(s->fd, &resp, sizeof(resp)) != sizeof(resp))
		abort();
	for (i = 0; i < s->nfds; i++) {
		int efd = eventfd((unsigned int)(7 + i), 0);

		send_fd(s->fd, efd);
		close(efd);
	}
	return NULL;
}

static int call(struct mrce_conn *conn, struct script *s, int *fds, int nfds,
		struct mrce_handle_resp *resp)
{
	struct mrce_handle_req req = { .handle = 42 };
	pthread_t t;
	int ret;

	pthread_create(&t, NULL, peer, s);
	ret = mrce_conn_call(conn, MRCE_OP_DEREG_MR, &req, sizeof(req), resp,
			     sizeof(*resp), fds, (unsigned int)nfds);
	pthread_join(t, NULL);
	return ret;
}

static void setup(struct mrce_conn *conn, struct script *s)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	memset(s, 0, sizeof(*s));
	s->fd = sv[1];
	conn->fd = sv[0];
	conn->seq = 0;
	conn->dead = false;
	pthread_mutex_init(&conn->lock, NULL);
}

static void test_ok_with_fds(void)
{
	struct mrce_handle_resp resp;
	struct mrce_conn conn;
	struct script s;
	uint64_t v = 0;
	int fds[2] = { -1, -1 };

	setup(&conn, &s);
	s.nfds = 2;
	CHECK(call(&conn, &s, fds, 2, &resp) == 0);
	CHECK(s.req_op == MRCE_OP_DEREG_MR);
	CHECK(s.req_len == sizeof(struct mrce_handle_req));
	CHECK(((struct mrce_handle_req *)s.req)->handle == 42);
	CHECK(resp.handle == 0xabcd);
	/* The fds arrive in order and work: eventfds made with 7 and 8. */
	CHECK(read(fds[0], &v, sizeof(v)) == sizeof(v) && v == 7);
	CHECK(read(fds[1], &v, sizeof(v)) == sizeof(v) && v == 8);
	close(fds[0]);
	close(fds[1]);
	/* A second call on the same connection works too (seq 2). */
	s.nfds = 0;
	CHECK(call(&conn, &s, fds, 0, &resp) == 0);
	mrce_conn_close(&conn);
	close(s.fd);
}

static void test_daemon_errno(void)
{
	struct mrce_handle_resp resp;
	struct mrce_conn conn;
	struct script s;

	setup(&conn, &s);
	s.status = EBUSY;
	CHECK(call(&conn, &s, NULL, 0, &resp) == EBUSY);
	CHECK(!conn.dead);
	s.status = 0;
	CHECK(call(&conn, &s, NULL, 0, &resp) == 0);
	mrce_conn_close(&conn);
	close(s.fd);
}

static void test_protocol_error_and_hangup(void)
{
	struct mrce_handle_resp resp;
	struct mrce_conn conn;
	struct script s;

	setup(&conn, &s);
	s.seq_delta = 1;
	CHECK(call(&conn, &s, NULL, 0, &resp) == EIO);
	CHECK(conn.dead);
	/* Dead for good: fails at once, without touching the socket. */
	CHECK(mrce_conn_call(&conn, MRCE_OP_ALLOC_PD, NULL, 0, &resp,
			     sizeof(resp), NULL, 0) == EIO);
	mrce_conn_close(&conn);
	close(s.fd);

	setup(&conn, &s);
	s.hangup = 1;
	CHECK(call(&conn, &s, NULL, 0, &resp) == EIO);
	CHECK(conn.dead);
	mrce_conn_close(&conn);

	/* Missing fds are a protocol error too. */
	setup(&conn, &s);
	{
		int fds[1];

		CHECK(call(&conn, &s, fds, 1, &resp) == EIO);
	}
	mrce_conn_close(&conn);
	close(s.fd);
}

static void test_sock_path(void)
{
	char path[108];

	setenv("METAROCE_SOCK", "/tmp/x/y.sock", 1);
	CHECK(mrce_sock_path(path, sizeof(path)) == 0);
	CHECK(strcmp(path, "/tmp/x/y.sock") == 0);
	unsetenv("METAROCE_SOCK");
	CHECK(mrce_sock_path(path, sizeof(path)) == 0);
	CHECK(strncmp(path, MRCE_SOCK_DIR "/nicd-", strlen(MRCE_SOCK_DIR) + 6) == 0);
	CHECK(strcmp(path + strlen(path) - 5, ".sock") == 0);
}

int main(void)
{
	test_ok_with_fds();
	test_daemon_errno();
	test_protocol_error_and_hangup();
	test_sock_path();
	if (failures) {
		printf("test_ctrl: %d failures\n", failures);
		return 1;
	}
	printf("test_ctrl: OK\n");
	return 0;
}
