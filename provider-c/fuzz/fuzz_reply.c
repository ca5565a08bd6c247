// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness of the provider's parsing of what the daemon sends:
 * mrce_conn_call()/mrce_hello() reading a response frame and its SCM_RIGHTS
 * fds from the control socket, and mrce_ring_attach() validating a ring
 * header found in a daemon-made memfd. Built with
 * -fsanitize=fuzzer,address,undefined (make fuzz); besides what the
 * sanitizers catch, every input must leave no fd open and end in 0, EIO,
 * EPROTO or the daemon's errno.
 *
 * Input: byte 0 picks the target and the op, byte 1 how many eventfds ride on
 * the first byte of the response, byte 2 whether the header's op and seq are
 * made to match the request (so the fuzzer gets past them at once); the rest
 * is what the daemon "sends" (then it hangs up).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mrce.h"
#include "mrce_ring.h"

struct call {
	uint16_t op;
	uint32_t resp_len;
	unsigned int nfds;
};

static const struct call calls[] = {
	{ MRCE_OP_HELLO, sizeof(struct mrce_hello_resp), 2 },
	{ MRCE_OP_ALLOC_PD, sizeof(struct mrce_handle_resp), 0 },
	{ MRCE_OP_REG_MR, sizeof(struct mrce_reg_mr_resp), 0 },
	{ MRCE_OP_CREATE_COMP_CHANNEL, sizeof(struct mrce_handle_resp), 1 },
	{ MRCE_OP_CREATE_CQ, sizeof(struct mrce_create_cq_resp), 1 },
	{ MRCE_OP_CREATE_QP, sizeof(struct mrce_create_qp_resp), 1 },
	{ MRCE_OP_QUERY_QP, sizeof(struct mrce_qp_attr), 0 },
	{ MRCE_OP_DESTROY_QP, 0, 0 },
};
#define NCALLS (sizeof(calls) / sizeof(calls[0]))

/* Which of fds 0..63 are open, one bit each: equal before and after an input. */
static uint64_t open_fds(void)
{
	uint64_t set = 0;
	int fd;

	for (fd = 0; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			set |= 1ull << fd;
	return set;
}

static void send_with_fds(int sock, const uint8_t *p, size_t n, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[4];
	int i;

	if (nfds) {
		struct cmsghdr *cm;

		for (i = 0; i < nfds; i++)
			fds[i] = eventfd(0, EFD_CLOEXEC);
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != (ssize_t)n) {
		perror("harness: sendmsg");
		abort();
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]); /* the receiver has its own copies now */
}

static unsigned long warm;

static void fuzz_call(const uint8_t *data, size_t size, uint8_t sel)
{
	const struct call *c = &calls[(sel >> 1) % NCALLS];
	union {
		struct mrce_hello_resp hello;
		uint8_t bytes[MRCE_CTRL_MAX_FRAME];
	} resp;
	uint8_t frame[MRCE_CTRL_MAX_FRAME + 64];
	struct mrce_conn conn;
	int fds[4];
	uint64_t before;
	int sv[2], ret;
	unsigned int i;
	int nfds = data[1] % 5;
	uint8_t fix = data[2];

	data += 3;
	size -= 3;
	if (size == 0 || size > sizeof(frame))
		return;
	memcpy(frame, data, size);
	if ((fix & 1) && size >= sizeof(struct mrce_ctrl_hdr)) {
		struct mrce_ctrl_hdr *h = (struct mrce_ctrl_hdr *)frame;

		h->op = c->op;
		h->seq = 1;
	}
	before = open_fds();
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	memset(&conn, 0, sizeof(conn));
	conn.fd = sv[0];
	conn.seq = 0;
	conn.dead = false;
	pthread_mutex_init(&conn.lock, NULL);
	/* the "daemon" answers before it is asked: the request waits in sv[1] */
	send_with_fds(sv[1], frame, 1, nfds);
	if (size > 1 && send(sv[1], frame + 1, size - 1, MSG_NOSIGNAL) != (ssize_t)(size - 1))
		abort();
	shutdown(sv[1], SHUT_WR);
	if (c->op == MRCE_OP_HELLO)
		ret = mrce_hello(&conn, &resp.hello, fds, 0);
	else
		ret = mrce_conn_call(&conn, c->op, NULL, 0, resp.bytes,
				     c->resp_len, fds, c->nfds);
	if (ret == 0) {
		for (i = 0; i < c->nfds; i++)
			close(fds[i]);
	} else if (ret < 0 || ret > 0xffff) {
		fprintf(stderr, "op %u: impossible return %d\n", c->op, ret);
		abort();
	}
	close(sv[0]);
	close(sv[1]);
	pthread_mutex_destroy(&conn.lock);
	/* the sanitizers' runtime opens a file on the first call: not ours */
	if (warm++ && open_fds() != before) {
		fprintf(stderr, "op %u: fds %#llx open before, %#llx after (ret %d)\n", c->op,
			(unsigned long long)before, (unsigned long long)open_fds(), ret);
		abort();
	}
}

static void fuzz_ring(const uint8_t *data, size_t size, uint8_t sel)
{
	static const uint16_t kinds[] = { MRCE_RING_KIND_SQ, MRCE_RING_KIND_RQ,
					  MRCE_RING_KIND_CQ, MRCE_RING_KIND_SRQ };
	static const uint32_t slot_sizes[] = { MRCE_WQE_SIZE, MRCE_WQE_SIZE,
					       MRCE_CQE_SIZE, MRCE_WQE_SIZE };
	unsigned int k = (sel >> 1) % 4;
	/* a QP's rings start at the daemon's sq_offset/rq_offset in the mapping */
	size_t off = (size_t)data[1] | (size_t)(data[2] & 0x3f) << 8;
	struct mrce_ring r;
	uint8_t *map;

	data += 3;
	size -= 3;
	if (off >= size)
		off = 0;
	/* exactly the mapping's bytes, cache-line aligned: ASan sees a slot past it */
	if (posix_memalign((void **)&map, 64, size ? size : 1))
		abort();
	memcpy(map, data, size);
	if (mrce_ring_attach(&r, map + off, size - off, kinds[k],
			     slot_sizes[k]) == 0) {
		uint8_t *last = mrce_ring_slot(&r, r.mask);

		memset(last, 0, r.slot_size);
		*(uint8_t *)mrce_ring_slot(&r, 0) = 1;
	}
	free(map);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t warm_up[] = { 2, 0, 0, 0 };

	(void)argc;
	(void)argv;
	fuzz_call(warm_up, sizeof(warm_up), warm_up[0]);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	if (data[0] & 1)
		fuzz_ring(data, size, data[0]);
	else
		fuzz_call(data, size, data[0]);
	return 0;
}
