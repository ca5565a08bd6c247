// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_odp - on-demand paging across two hosts, for OdpIT.
 *
 *   mrce_odp [-d DEV] [-g GIDX] [-p PORT] [-t SECONDS]          (server)
 *   mrce_odp [-d DEV] [-g GIDX] [-p PORT] [-t SECONDS] SERVER  (client)
 *
 * The server checks the ODP capabilities of ibv_query_device_ex, registers an
 * implicit ODP MR (ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...)),
 * and only then mmaps a buffer; ibv_advise_mr accepts a prefetch of it and
 * refuses bad arguments with EINVAL. It sends the client the buffer's address,
 * the rkey, an address it unmapped and two RC QPs.
 * The client (its source buffer an explicit ODP MR) RDMA WRITEs a pattern
 * into the buffer on QP 1 (must succeed), then into the unmapped page on
 * QP 1 (must complete with IBV_WC_REM_ACCESS_ERR), then a second pattern on
 * QP 2 (must succeed: the daemon and the other QPs go on), then from a page
 * it unmapped inside an explicit ODP MR on QP 2 (must complete with
 * IBV_WC_LOC_PROT_ERR, nothing sent). The server checks
 * every byte of both patterns and that the rest of the buffer is untouched.
 * Lines: "CHECK name: PASS|FAIL detail", then "mrce_odp: server OK" or
 * "mrce_odp: client OK"; any failure prints "mrce_odp: FAIL ..." and exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mrce_tool_common.h"

#define BUF_LEN (256 * 1024)
#define PAT1_OFF 4096
#define PAT1_LEN (64 * 1024 + 123)
#define PAT2_OFF (128 * 1024)
#define PAT2_LEN 4000

struct exch {
	uint32_t qpn[2];
	uint8_t gid[16];
	uint64_t buf;
	uint64_t hole;
	uint32_t rkey;
	uint32_t pad;
};

static uint8_t pattern(int which, size_t i)
{
	return (uint8_t)tool_mix(((uint64_t)which << 32) + i);
}

static void check_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex attr;
	const struct ibv_odp_caps *c = &attr.odp_caps;
	uint32_t rc_need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			   IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;

	memset(&attr, 0, sizeof(attr));
	if (ibv_query_device_ex(ctx, NULL, &attr))
		tool_fail("query_device_ex");
	tool_check("odp_caps", (c->general_caps & IBV_ODP_SUPPORT) &&
		  (c->general_caps & IBV_ODP_SUPPORT_IMPLICIT) &&
		  (c->per_transport_caps.rc_odp_caps & rc_need) == rc_need &&
		  (c->per_transport_caps.ud_odp_caps &
		   (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV)) ==
			  (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV),
	      "general=0x%llx rc=0x%x ud=0x%x",
	      (unsigned long long)c->general_caps,
	      c->per_transport_caps.rc_odp_caps,
	      c->per_transport_caps.ud_odp_caps);
}

static int server(struct ibv_context *ctx, int gidx, int port)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct exch me = { 0 }, peer;
	struct ibv_qp *qp[2];
	struct ibv_mr *mr;
	union ibv_gid gid;
	size_t bad = 0;
	uint8_t *buf;
	char *hole;
	char done;
	int fd, ret;

	if (!pd || !cq || ibv_query_gid(ctx, 1, gidx, &gid))
		tool_fail("pd/cq/gid");
	check_caps(ctx);
	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND |
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	tool_check("implicit_odp_reg", mr != NULL, "%s",
	      mr ? "whole address space" : strerror(errno));
	/* Mapped after the registration: the implicit MR covers it anyway. */
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* The middle page of three, unmapped only once nothing else maps
	 * (QP rings would reuse the address): its neighbours stay. */
	hole = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || hole == MAP_FAILED)
		tool_fail("mmap: %s", strerror(errno));
	hole += 4096;
	memset(buf, 0xa5, BUF_LEN);
	{
		struct ibv_sge sge = { .addr = (uintptr_t)buf,
				       .length = BUF_LEN, .lkey = mr->lkey };

		ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
		tool_check("advise_mr_prefetch", ret == 0, "ret %d", ret);
		ret = ibv_advise_mr(pd, (enum ibv_advise_mr_advice)77, 0,
				    &sge, 1);
		tool_check("advise_mr_bad_advice", ret == EINVAL, "ret %d", ret);
		ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0x80,
				    &sge, 1);
		tool_check("advise_mr_bad_flags", ret == EINVAL, "ret %d", ret);
		ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				    &sge, 0);
		tool_check("advise_mr_no_sge", ret == EINVAL, "ret %d", ret);
	}
	qp[0] = tool_rc_qp(pd, cq);
	qp[1] = tool_rc_qp(pd, cq);
	me.qpn[0] = qp[0]->qp_num;
	me.qpn[1] = qp[1]->qp_num;
	memcpy(me.gid, gid.raw, 16);
	me.buf = (uintptr_t)buf;
	me.hole = (uintptr_t)hole;
	me.rkey = mr->rkey;
	fd = tool_tcp_accept(port);
	tool_read_all(fd, &peer, sizeof(peer));
	tool_rc_to_rts(qp[0], peer.qpn[0], peer.gid, gidx);
	tool_rc_to_rts(qp[1], peer.qpn[1], peer.gid, gidx);
	if (munmap(hole, 4096))
		tool_fail("munmap: %s", strerror(errno));
	tool_write_all(fd, &me, sizeof(me));
	tool_read_all(fd, &done, 1);
	{
		unsigned char vec;

		ret = mincore(hole, 4096, &vec);
		tool_check("hole_stayed_unmapped", ret == -1 && errno == ENOMEM,
		      "mincore %d (%s)", ret, ret ? strerror(errno) : "mapped");
	}
	for (size_t i = 0; i < BUF_LEN; i++) {
		uint8_t want = 0xa5;

		if (i >= PAT1_OFF && i < PAT1_OFF + PAT1_LEN)
			want = pattern(1, i - PAT1_OFF);
		else if (i >= PAT2_OFF && i < PAT2_OFF + PAT2_LEN)
			want = pattern(2, i - PAT2_OFF);
		bad += buf[i] != want;
	}
	tool_check("write_landed", bad == 0,
	      "%zu of %d bytes wrong (patterns %d + %d bytes, crc 0x%08x)",
	      bad, BUF_LEN, PAT1_LEN, PAT2_LEN,
	      tool_crc32(buf + PAT1_OFF, PAT1_LEN));
	tool_write_all(fd, "k", 1);
	close(fd);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	if (ibv_dereg_mr(mr))
		tool_fail("dereg_mr");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	printf("mrce_odp: server OK\n");
	return 0;
}

static int client(struct ibv_context *ctx, int gidx, const char *host, int port)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct exch me = { 0 }, peer;
	struct ibv_qp *qp[2];
	struct ibv_mr *mr, *gmr;
	union ibv_gid gid;
	uint8_t *src, *gap;
	char ok;
	int fd, st;

	if (!pd || !cq || ibv_query_gid(ctx, 1, gidx, &gid))
		tool_fail("pd/cq/gid");
	check_caps(ctx);
	src = malloc(PAT1_LEN + PAT2_LEN);
	if (!src)
		tool_fail("malloc");
	/* An explicit ODP MR for the source. */
	mr = ibv_reg_mr(pd, src, PAT1_LEN + PAT2_LEN,
			IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	tool_check("explicit_odp_reg", mr != NULL, "%s",
	      mr ? "source buffer" : strerror(errno));
	gap = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gap == MAP_FAILED)
		tool_fail("mmap: %s", strerror(errno));
	gmr = ibv_reg_mr(pd, gap, 3 * 4096, IBV_ACCESS_ON_DEMAND);
	if (!gmr)
		tool_fail("reg_mr gap: %s", strerror(errno));
	gap += 4096;
	for (size_t i = 0; i < PAT1_LEN; i++)
		src[i] = pattern(1, i);
	for (size_t i = 0; i < PAT2_LEN; i++)
		src[PAT1_LEN + i] = pattern(2, i);
	qp[0] = tool_rc_qp(pd, cq);
	qp[1] = tool_rc_qp(pd, cq);
	me.qpn[0] = qp[0]->qp_num;
	me.qpn[1] = qp[1]->qp_num;
	memcpy(me.gid, gid.raw, 16);
	fd = tool_tcp_connect(host, port);
	tool_write_all(fd, &me, sizeof(me));
	tool_read_all(fd, &peer, sizeof(peer));
	tool_rc_to_rts(qp[0], peer.qpn[0], peer.gid, gidx);
	tool_rc_to_rts(qp[1], peer.qpn[1], peer.gid, gidx);
	st = tool_rc_write_wait(qp[0], cq, mr, src, PAT1_LEN, peer.buf + PAT1_OFF,
			peer.rkey, 1);
	tool_check("write_to_memory_mapped_after_reg", st == IBV_WC_SUCCESS,
	      "status %s", ibv_wc_status_str(st));
	st = tool_rc_write_wait(qp[0], cq, mr, src, 64, peer.hole, peer.rkey, 2);
	tool_check("write_to_unmapped_page", st == IBV_WC_REM_ACCESS_ERR,
	      "status %s", ibv_wc_status_str(st));
	st = tool_rc_write_wait(qp[1], cq, mr, src + PAT1_LEN, PAT2_LEN,
			peer.buf + PAT2_OFF, peer.rkey, 3);
	tool_check("other_qp_goes_on", st == IBV_WC_SUCCESS, "status %s",
	      ibv_wc_status_str(st));
	/* A local SGE on a page unmapped inside an explicit ODP MR. */
	if (munmap(gap, 4096))
		tool_fail("munmap: %s", strerror(errno));
	st = tool_rc_write_wait(qp[1], cq, gmr, gap, 64,
			peer.buf + PAT2_OFF + PAT2_LEN + 4096, peer.rkey, 4);
	tool_check("local_sge_unmapped", st == IBV_WC_LOC_PROT_ERR, "status %s",
	      ibv_wc_status_str(st));
	tool_write_all(fd, "d", 1);
	tool_read_all(fd, &ok, 1);
	close(fd);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	if (ibv_dereg_mr(mr) || ibv_dereg_mr(gmr))
		tool_fail("dereg_mr");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	free(src);
	printf("mrce_odp: client OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "mrce0";
	int gidx = 0, port = 18670, timeout = 60, c;
	struct ibv_context *ctx;

	while ((c = getopt(argc, argv, "d:g:p:t:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GIDX] [-p PORT] [-t S] [SERVER]\n",
				argv[0]);
			return 2;
		}
	}
	tool_init("mrce_odp", (unsigned int)timeout);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = tool_open_device(dev);
	if (optind < argc)
		return client(ctx, gidx, argv[optind], port);
	return server(ctx, gidx, port);
}
