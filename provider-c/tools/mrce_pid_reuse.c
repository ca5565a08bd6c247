// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_pid_reuse - the two halves of the PID-reuse attack on the daemon's
 * "DMA", for PidReuseIT (run in a PID namespace where ns_last_pid makes the
 * reuse certain).
 *
 *   attack PIDFILE GOFIFO RESULTFILE
 *     Registers two pages at a fixed address (src page 'a', dst page 'a'),
 *     connects two RC QPs to each other and proves an RDMA WRITE src->dst
 *     works. Then forks: the child keeps the context (socket, rings) and
 *     waits on GOFIFO; the parent writes its PID to PIDFILE and exits. On
 *     "go" the child posts a 4 KiB WRITE src->dst of the parent's (gone)
 *     registration and writes what happened to RESULTFILE.
 *   victim READYFIFO DONEFIFO
 *     Maps the same pages (dst 'V', src 'A'), says "ready", waits for
 *     DONEFIFO, prints "untouched" (exit 0) or "CHANGED <n>" (exit 3).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mrce_tool_common.h"

#define BASE ((void *)0x5a5a00000000UL)
#define PAGE 4096

static char *map_pages(void)
{
	char *p = mmap(BASE, 2 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p != BASE)
		tool_fail("mmap at %p: %s", BASE, strerror(errno));
	return p;
}

/* Posts a WRITE and polls for up to 10 s: the status, or -1 for none. */
static int write_and_wait(struct ibv_qp *qp, struct ibv_cq *cq,
			  struct ibv_mr *mr, char *pages, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(pages + PAGE),
			       .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct timespec start, now;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)pages;
	wr.wr.rdma.rkey = mr->rkey;
	if (ibv_post_send(qp, &wr, &bad))
		return -2;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -3;
		if (n == 1)
			return wc.status;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 10);
	return -1;
}

static int attack(const char *pidfile, const char *gofifo, const char *result)
{
	char *pages = map_pages();
	struct ibv_context *ctx = tool_open_device("mrce0");
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	union ibv_gid gid;
	char tmp[4096];
	FILE *f;
	int st;

	memset(pages, 'a', 2 * PAGE);
	if (!pd || !cq || ibv_query_gid(ctx, 1, 0, &gid))
		tool_fail("pd/cq/gid");
	mr = ibv_reg_mr(pd, pages, 2 * PAGE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	qa.send_cq = qa.recv_cq = cq;
	a = ibv_create_qp(pd, &qa);
	b = ibv_create_qp(pd, &qa);
	if (!mr || !a || !b)
		tool_fail("mr/qp");
	tool_rc_to_rts(a, b->qp_num, gid.raw, 0);
	tool_rc_to_rts(b, a->qp_num, gid.raw, 0);
	pages[PAGE] = 's';
	st = write_and_wait(a, cq, mr, pages, 16);
	if (st != IBV_WC_SUCCESS || pages[0] != 's')
		tool_fail("the WRITE before the fork: status %d", st);

	pid_t child = fork();

	if (child < 0)
		tool_fail("fork");
	if (child > 0) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", pidfile);
		f = fopen(tmp, "w");
		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) ||
		    rename(tmp, pidfile))
			tool_fail("pidfile");
		_exit(0); /* the registration stays, the child holds the socket */
	}
	int go = open(gofifo, O_RDONLY);

	if (go < 0 || read(go, tmp, 1) != 1)
		tool_fail("go fifo");
	st = write_and_wait(a, cq, mr, pages, PAGE);
	f = fopen(result, "w");
	if (!f)
		tool_fail("result file");
	if (st == -1)
		fprintf(f, "no completion\n");
	else
		fprintf(f, "completion status %d\n", st);
	fclose(f);
	return 0;
}

static int victim(const char *readyfifo, const char *donefifo)
{
	char *pages = map_pages();
	size_t changed = 0;
	char c;
	int fd;

	memset(pages, 'V', PAGE);
	memset(pages + PAGE, 'A', PAGE);
	fd = open(readyfifo, O_WRONLY);
	if (fd < 0 || write(fd, "r", 1) != 1)
		tool_fail("ready fifo");
	close(fd);
	fd = open(donefifo, O_RDONLY);
	if (fd < 0 || read(fd, &c, 1) != 1)
		tool_fail("done fifo");
	for (size_t i = 0; i < PAGE; i++)
		changed += pages[i] != 'V';
	if (changed) {
		printf("victim %d: CHANGED %zu bytes\n", (int)getpid(), changed);
		return 3;
	}
	printf("victim %d: untouched\n", (int)getpid());
	return 0;
}

int main(int argc, char **argv)
{
	tool_init("mrce_pid_reuse", 120);
	if (argc == 5 && !strcmp(argv[1], "attack"))
		return attack(argv[2], argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "victim"))
		return victim(argv[2], argv[3]);
	fprintf(stderr, "usage: %s attack PIDFILE GOFIFO RESULT | victim READY DONE\n",
		argv[0]);
	return 2;
}
