// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_integrity - end-to-end data integrity over an RC QP, written against
 * the plain libibverbs API so that it runs like any unmodified app (under
 * LD_PRELOAD=libmetaroce.so for MetaRoCE).
 *
 *   server: mrce_integrity [-d dev] [-g gidx] [-p port] [-t secs]
 *   client: mrce_integrity [-d dev] [-g gidx] [-p port] [-n msgs] [-S seed]
 *                          [-t secs] [-P N:FILE] host
 *
 * The peers swap QPN/PSN/GID over TCP (as ibv_rc_pingpong does), the client
 * tells the server how many messages and which seed. The client SENDs
 * messages whose sizes cycle through a fixed list of edge cases, every other
 * one a random size from the seed; each is filled with a pattern derived from
 * (index, size, seed); odd ones go as SEND_WITH_IMM carrying the index. Small
 * ones go inline, most are unsignaled. The server checks byte_len, the
 * immediate and every byte, and grants receive credits over TCP, so the
 * test never depends on RNR retries. Both print one final line:
 *   mrce_integrity: OK messages=N bytes=B checksum=0xXXXXXXXX
 *   mrce_integrity: FAIL <reason>
 *
 * -P N:FILE (client) pauses the run at a point a test controls: once
 * messages 0..N-1 are posted and completed, the client prints
 *   mrce_integrity: PAUSED after N messages
 * and waits (within -t) until FILE exists, then sends the rest. A test
 * applies a fault while the client waits, so the fault always meets the
 * run's remaining N..n-1 messages, however fast the first part went.
 * -P may be given up to MAX_PAUSES times, N increasing (a fault, then its
 * repair, each at its own point of the run).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mrce_tool_common.h"

#define MAX_MSG (1u << 20)
#define RX_DEPTH 16
#define TX_DEPTH 16
#define SIGNAL_EVERY 4
#define IB_PORT 1

static const uint32_t fixed_sizes[] = {
	0, 1, 2, 63, 64, 1000, 1024, 1500, 4095, 4096, 4097, 9000, 65536,
	100000, 1048576,
};
#define N_FIXED (sizeof(fixed_sizes) / sizeof(fixed_sizes[0]))

#define MAX_PAUSES 4

struct opts {
	const char *dev;
	const char *host;
	int gidx;
	int port;
	uint32_t messages;
	uint32_t seed;
	unsigned int timeout;
	uint32_t pause_at[MAX_PAUSES];	/* -P N:FILE, in order */
	const char *pause_file[MAX_PAUSES];
	int pauses;
};

/* What the peers swap over TCP before connecting. */
struct conn_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t messages;
	uint32_t seed;
	uint8_t gid[16];
};

/*
 * Records on TCP: server -> client CREDIT and RESULT; client -> server DONE
 * once every send completed, so the server keeps its QP until the client's
 * last messages were acknowledged (destroying it earlier would leave a
 * retransmission after a lost ACK nobody to answer it).
 */
enum { REC_CREDIT = 1, REC_RESULT = 2, REC_DONE = 3 };
struct record {
	uint32_t type;
	uint32_t a; /* credits granted so far / 0 on success */
	uint32_t b; /* checksum */
};

struct ctx {
	struct ibv_context *context;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_size;
	uint32_t max_inline;
	struct ibv_port_attr port_attr;
};

static uint32_t msg_size(uint32_t i, uint32_t seed)
{
	uint64_t r;

	if (i % 2 == 0)
		return fixed_sizes[(i / 2) % N_FIXED];
	r = tool_mix(((uint64_t)seed << 32) ^ i ^ 0x5a5a5a5a00000000ull);
	/* Log-uniform-ish: most small, some up to MAX_MSG. */
	return (uint32_t)((r >> 8) % ((1u << (r % 21)) + 1));
}

static void fill_pattern(uint8_t *p, uint32_t len, uint32_t i, uint32_t size,
			 uint32_t seed)
{
	uint64_t state = tool_mix(((uint64_t)i << 32) ^ size ^ ((uint64_t)seed << 16));
	uint32_t off;

	for (off = 0; off < len; off += 8) {
		uint64_t v = tool_mix(state + off);
		uint32_t n = len - off < 8 ? len - off : 8;

		memcpy(p + off, &v, n);
	}
}

static void setup(struct ctx *c, const struct opts *o, size_t buf_size)
{
	struct ibv_qp_init_attr init = { 0 };
	struct ibv_qp_attr attr;

	c->context = tool_open_device(o->dev);
	if (ibv_query_port(c->context, IB_PORT, &c->port_attr))
		tool_fail("ibv_query_port");
	c->pd = ibv_alloc_pd(c->context);
	if (!c->pd)
		tool_fail("ibv_alloc_pd: %s", strerror(errno));
	c->buf_size = buf_size;
	c->buf = aligned_alloc(4096, buf_size);
	if (!c->buf)
		tool_fail("out of memory");
	memset(c->buf, 0, buf_size);
	c->mr = ibv_reg_mr(c->pd, c->buf, buf_size, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		tool_fail("ibv_reg_mr: %s", strerror(errno));
	c->cq = ibv_create_cq(c->context, RX_DEPTH + TX_DEPTH, NULL, NULL, 0);
	if (!c->cq)
		tool_fail("ibv_create_cq: %s", strerror(errno));
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = TX_DEPTH;
	init.cap.max_recv_wr = RX_DEPTH;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.cap.max_inline_data = 64;
	c->qp = ibv_create_qp(c->pd, &init);
	if (!c->qp)
		tool_fail("ibv_create_qp: %s", strerror(errno));
	if (ibv_query_qp(c->qp, &attr, IBV_QP_CAP, &init))
		tool_fail("ibv_query_qp");
	c->max_inline = init.cap.max_inline_data;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = IB_PORT;
	attr.qp_access_flags = 0;
	if (ibv_modify_qp(c->qp, &attr,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		tool_fail("modify_qp to INIT");
}

static void connect_qp(struct ctx *c, const struct opts *o, uint32_t my_psn,
		       const struct conn_info *peer)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = c->port_attr.active_mtu;
	attr.dest_qp_num = peer->qpn;
	attr.rq_psn = peer->psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	memcpy(attr.ah_attr.grh.dgid.raw, peer->gid, 16);
	attr.ah_attr.grh.sgid_index = (uint8_t)o->gidx;
	attr.ah_attr.grh.hop_limit = 1;
	attr.ah_attr.port_num = IB_PORT;
	if (ibv_modify_qp(c->qp, &attr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		tool_fail("modify_qp to RTR");
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = my_psn;
	attr.max_rd_atomic = 1;
	if (ibv_modify_qp(c->qp, &attr,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		tool_fail("modify_qp to RTS");
}

static void my_info(struct ctx *c, const struct opts *o, struct conn_info *me)
{
	union ibv_gid gid;

	memset(me, 0, sizeof(*me));
	if (ibv_query_gid(c->context, IB_PORT, o->gidx, &gid))
		tool_fail("ibv_query_gid %d", o->gidx);
	me->qpn = c->qp->qp_num;
	me->psn = (uint32_t)(tool_mix((uint64_t)getpid() ^ (uint64_t)time(NULL)) &
			     0xffffff);
	me->messages = o->messages;
	me->seed = o->seed;
	memcpy(me->gid, gid.raw, 16);
}

static void teardown(struct ctx *c)
{
	if (ibv_destroy_qp(c->qp) || ibv_destroy_cq(c->cq) ||
	    ibv_dereg_mr(c->mr) || ibv_dealloc_pd(c->pd) ||
	    ibv_close_device(c->context))
		tool_fail("teardown: %s", strerror(errno));
	free(c->buf);
}

static void post_recv_slot(struct ctx *c, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + (size_t)slot * MAX_MSG),
		.length = MAX_MSG,
		.lkey = c->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(c->qp, &wr, &bad);

	if (ret)
		tool_fail("ibv_post_recv: %s", strerror(ret));
}

static int run_server(const struct opts *o)
{
	struct ctx c = { 0 };
	struct conn_info me, peer;
	struct record rec;
	uint8_t *expect;
	uint64_t bytes = 0;
	uint32_t crc = 0, i = 0, credits = RX_DEPTH, since_grant = 0;
	int fd;

	setup(&c, o, (size_t)RX_DEPTH * MAX_MSG);
	for (uint32_t s = 0; s < RX_DEPTH; s++)
		post_recv_slot(&c, s);
	fd = tool_tcp_accept(o->port);
	tool_read_all(fd, &peer, sizeof(peer));
	my_info(&c, o, &me);
	tool_write_all(fd, &me, sizeof(me));
	connect_qp(&c, o, me.psn, &peer);

	expect = malloc(MAX_MSG);
	if (!expect)
		tool_fail("out of memory");
	while (i < peer.messages) {
		struct ibv_wc wc;
		uint32_t size, slot;
		uint8_t *got;
		int n = ibv_poll_cq(c.cq, 1, &wc);

		if (n < 0)
			tool_fail("ibv_poll_cq: %d", n);
		if (n == 0)
			continue;
		if (wc.status != IBV_WC_SUCCESS)
			tool_fail("message %u: completion status %s (%d)", i,
			     ibv_wc_status_str(wc.status), wc.status);
		if (wc.opcode != IBV_WC_RECV)
			tool_fail("message %u: opcode %d, not RECV", i, wc.opcode);
		size = msg_size(i, peer.seed);
		slot = (uint32_t)wc.wr_id;
		if (slot != i % RX_DEPTH)
			tool_fail("message %u: landed in buffer %u, expected %u", i,
			     slot, i % RX_DEPTH);
		if (wc.byte_len != size)
			tool_fail("message %u: byte_len %u, expected %u", i,
			     wc.byte_len, size);
		if (i % 2) {
			if (!(wc.wc_flags & IBV_WC_WITH_IMM) ||
			    ntohl(wc.imm_data) != i)
				tool_fail("message %u: immediate missing or wrong (flags 0x%x imm 0x%x)",
				     i, wc.wc_flags, ntohl(wc.imm_data));
		} else if (wc.wc_flags & IBV_WC_WITH_IMM) {
			tool_fail("message %u: unexpected immediate", i);
		}
		got = c.buf + (size_t)slot * MAX_MSG;
		fill_pattern(expect, size, i, size, peer.seed);
		if (memcmp(got, expect, size)) {
			uint32_t k = 0;

			while (got[k] == expect[k])
				k++;
			tool_fail("message %u (size %u): byte %u is 0x%02x, expected 0x%02x",
			     i, size, k, got[k], expect[k]);
		}
		crc = tool_crc32_update(crc, got, size);
		bytes += size;
		memset(got, 0, size); /* a stale byte must not pass next time */
		i++;
		post_recv_slot(&c, slot);
		credits++;
		if (++since_grant == RX_DEPTH / 2 || i == peer.messages) {
			rec = (struct record){ .type = REC_CREDIT, .a = credits };
			tool_write_all(fd, &rec, sizeof(rec));
			since_grant = 0;
		}
	}
	rec = (struct record){ .type = REC_RESULT, .a = 0, .b = crc };
	tool_write_all(fd, &rec, sizeof(rec));
	tool_read_all(fd, &rec, sizeof(rec));
	if (rec.type != REC_DONE)
		tool_fail("unexpected record %u from client", rec.type);
	free(expect);
	teardown(&c);
	close(fd);
	printf("mrce_integrity: OK messages=%u bytes=%llu checksum=0x%08x\n",
	       peer.messages, (unsigned long long)bytes, crc);
	return 0;
}

/* Reaps send completions; returns how many messages are known done. */
static uint32_t reap_sends(struct ctx *c, uint32_t done)
{
	struct ibv_wc wc[8];
	int n = ibv_poll_cq(c->cq, 8, wc);

	if (n < 0)
		tool_fail("ibv_poll_cq: %d", n);
	for (int k = 0; k < n; k++) {
		if (wc[k].status != IBV_WC_SUCCESS)
			tool_fail("send %llu: completion status %s (%d)",
			     (unsigned long long)wc[k].wr_id,
			     ibv_wc_status_str(wc[k].status), wc[k].status);
		if (wc[k].opcode != IBV_WC_SEND)
			tool_fail("send %llu: opcode %d, not SEND",
			     (unsigned long long)wc[k].wr_id, wc[k].opcode);
		if (wc[k].wr_id + 1 <= done)
			tool_fail("send %llu: completed twice or out of order",
			     (unsigned long long)wc[k].wr_id);
		done = (uint32_t)wc[k].wr_id + 1; /* RC: all before it too */
	}
	return done;
}

/*
 * -P: completes every message posted so far, says so, and waits for the
 * test's go file (the alarm of tool_init bounds the wait).
 */
static void pause_until_file(struct ctx *c, const struct opts *o, int k,
			     uint32_t *done)
{
	struct stat st;

	while (*done < o->pause_at[k])
		*done = reap_sends(c, *done);
	printf("mrce_integrity: PAUSED after %u messages\n", o->pause_at[k]);
	fflush(stdout);
	while (stat(o->pause_file[k], &st) != 0) {
		if (errno != ENOENT)
			tool_fail("-P: stat %s: %s", o->pause_file[k],
				  strerror(errno));
		poll(NULL, 0, 2);
	}
	printf("mrce_integrity: RESUMED\n");
}

static int run_client(const struct opts *o)
{
	struct ctx c = { 0 };
	struct conn_info me, peer;
	struct record rec;
	uint64_t bytes = 0;
	uint32_t crc = 0, done = 0, credits = RX_DEPTH;
	int fd, paused = 0;

	setup(&c, o, (size_t)TX_DEPTH * MAX_MSG);
	fd = tool_tcp_connect(o->host, o->port);
	my_info(&c, o, &me);
	tool_write_all(fd, &me, sizeof(me));
	tool_read_all(fd, &peer, sizeof(peer));
	connect_qp(&c, o, me.psn, &peer);

	for (uint32_t i = 0; i < o->messages; i++) {
		uint32_t size = msg_size(i, o->seed);
		uint8_t *p = c.buf + (size_t)(i % TX_DEPTH) * MAX_MSG;
		struct ibv_sge sge = { .addr = (uintptr_t)p, .length = size,
				       .lkey = c.mr->lkey };
		struct ibv_send_wr wr = { 0 }, *bad;
		int ret;

		if (paused < o->pauses && i == o->pause_at[paused])
			pause_until_file(&c, o, paused++, &done);

		/* Wait for a free send slot and a receive credit. */
		while (i - done >= TX_DEPTH)
			done = reap_sends(&c, done);
		while (i >= credits) {
			tool_read_all(fd, &rec, sizeof(rec));
			if (rec.type != REC_CREDIT)
				tool_fail("unexpected record %u from server", rec.type);
			credits = rec.a;
		}
		fill_pattern(p, size, i, size, o->seed);
		crc = tool_crc32_update(crc, p, size);
		bytes += size;

		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = size ? 1 : 0;
		wr.opcode = i % 2 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		wr.imm_data = htonl(i);
		if (i % SIGNAL_EVERY == SIGNAL_EVERY - 1 ||
		    i + 1 == o->messages ||
		    (paused < o->pauses && i + 1 == o->pause_at[paused]) ||
		    i - done + 1 >= TX_DEPTH)
			wr.send_flags |= IBV_SEND_SIGNALED;
		if (size && size <= c.max_inline)
			wr.send_flags |= IBV_SEND_INLINE;
		ret = ibv_post_send(c.qp, &wr, &bad);
		if (ret)
			tool_fail("ibv_post_send message %u: %s", i, strerror(ret));
	}
	while (done < o->messages)
		done = reap_sends(&c, done);
	for (;;) {
		tool_read_all(fd, &rec, sizeof(rec));
		if (rec.type == REC_RESULT)
			break;
		if (rec.type != REC_CREDIT)
			tool_fail("unexpected record %u from server", rec.type);
	}
	if (rec.a)
		tool_fail("server reported failure %u", rec.a);
	if (rec.b != crc)
		tool_fail("checksum mismatch: sent 0x%08x, server got 0x%08x", crc,
		     rec.b);
	rec = (struct record){ .type = REC_DONE };
	tool_write_all(fd, &rec, sizeof(rec));
	teardown(&c);
	close(fd);
	printf("mrce_integrity: OK messages=%u bytes=%llu checksum=0x%08x\n",
	       o->messages, (unsigned long long)bytes, crc);
	return 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-d dev] [-g gidx] [-p tcpport] [-n messages] [-S seed] [-t secs] [-P N:FILE]... [host]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .gidx = 0, .port = 18600, .messages = 200,
			  .seed = 1, .timeout = 120 };
	char *colon;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:g:p:n:S:t:P:h")) != -1) {
		switch (opt) {
		case 'd':
			o.dev = optarg;
			break;
		case 'g':
			o.gidx = atoi(optarg);
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'n':
			o.messages = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'S':
			o.seed = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.timeout = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'P':
			if (o.pauses == MAX_PAUSES)
				usage(argv[0]);
			o.pause_at[o.pauses] =
				(uint32_t)strtoul(optarg, &colon, 0);
			if (*colon != ':' || !colon[1] ||
			    (o.pauses > 0 &&
			     o.pause_at[o.pauses] <= o.pause_at[o.pauses - 1]))
				usage(argv[0]);
			o.pause_file[o.pauses++] = colon + 1;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		o.host = argv[optind];
	if (optind + 1 < argc)
		usage(argv[0]);
	if (o.pauses && (!o.host || o.pause_at[o.pauses - 1] >= o.messages)) {
		fprintf(stderr,
			"%s: -P N:FILE is for the client, with N < -n "
			"(increasing when repeated)\n",
			argv[0]);
		exit(2);
	}
	tool_init("mrce_integrity", o.timeout);
	return o.host ? run_client(&o) : run_server(&o);
}
