// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the opt-in shared regions (mrce_shared_mr.c) against a
 * scripted daemon on a socketpair: the pages of a registered buffer move into
 * a sealed memfd mapped at the same addresses with the same bytes, the
 * request names that file, the region's pages and the buffer's neighbours
 * keep their bytes through the move and back, and what must not be shared
 * (the stack, a range overlapping a shared one, a refusal) is left private.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrce.h"
#include "check.h"


#define PAGE 4096

struct daemon {
	int fd;
	uint16_t status;
	int calls;
	struct mrce_share_mr_req req;
	int file_ok;   /* the named descriptor is a sealed memfd with the buffer's bytes */
	const uint8_t *expect;
	size_t expect_off, expect_len;
};

static void *serve(void *arg)
{
	struct daemon *d = arg;
	struct mrce_ctrl_hdr hdr;
	int seals;

	if (recv(d->fd, &hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr) || hdr.op != MRCE_OP_SHARE_MR ||
	    recv(d->fd, &d->req, sizeof(d->req), MSG_WAITALL) != sizeof(d->req))
		return NULL;
	d->calls++;
	seals = fcntl(d->req.fd, F_GET_SEALS);
	d->file_ok = seals >= 0 && (seals & F_SEAL_SHRINK);
	if (d->file_ok && d->expect) {
		uint8_t *buf = malloc(d->expect_len);

		d->file_ok = pread(d->req.fd, buf, d->expect_len, (off_t)d->expect_off) ==
				     (ssize_t)d->expect_len &&
			     memcmp(buf, d->expect, d->expect_len) == 0;
		free(buf);
	}
	hdr.len = sizeof(hdr);
	hdr.status = d->status;
	hdr.nfds = 0;
	if (write(d->fd, &hdr, sizeof(hdr)) != sizeof(hdr))
		abort();
	return NULL;
}

static int share(struct mrce_mr *mr, struct daemon *d)
{
	struct mrce_conn conn;
	pthread_t t;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	d->fd = sv[1];
	conn.fd = sv[0];
	conn.seq = 0;
	conn.dead = false;
	pthread_mutex_init(&conn.lock, NULL);
	pthread_create(&t, NULL, serve, d);
	mrce_share_mr(&conn, mr, IBV_ACCESS_LOCAL_WRITE);
	if (!d->calls) {
		/* nothing was asked: let the daemon go */
		shutdown(sv[0], SHUT_RDWR);
	}
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
	return d->calls;
}

/* Whether the page holding `p` is a shared mapping of a memfd of ours (maps says "rw-s ... /memfd:mrce-mr"). */
static int page_is_memfd(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	uintptr_t a = (uintptr_t)p;
	int found = 0;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && lo <= a && a < hi) {
			found = strstr(line, "/memfd:mrce-mr") && !strcmp(perms, "rw-s");
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

static int same(const uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 31 + seed))
			return 0;
	return 1;
}

static void test_moves_pages_and_back(void)
{
	/* four pages from mmap: the region covers part of pages 1..2, its neighbours are pages 0 and 3 */
	uint8_t *area = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mrce_mr mr = { .share_fd = -1 };
	struct daemon d = { .status = 0 };

	fill(area, 4 * PAGE, 3);
	mr.ibv_mr.addr = area + PAGE + 100;
	mr.ibv_mr.length = PAGE;
	mr.ibv_mr.handle = 77;
	d.expect = area + PAGE;
	d.expect_off = 0;
	d.expect_len = 2 * PAGE;
	CHECK(share(&mr, &d) == 1);
	CHECK(d.req.handle == 77);
	CHECK(d.req.base == (uintptr_t)(area + PAGE));
	CHECK(d.file_ok);
	CHECK(mr.shared);
	CHECK(page_is_memfd(area + PAGE) && page_is_memfd(area + 2 * PAGE + PAGE - 1));
	CHECK(!page_is_memfd(area) && !page_is_memfd(area + 3 * PAGE));
	CHECK(same(area, 4 * PAGE, 3));
	/* the file is the memory: a write through it shows at the address */
	CHECK(pwrite(mr.share_fd, "xyz", 3, 200) == 3);
	CHECK(memcmp(area + PAGE + 200, "xyz", 3) == 0);
	memcpy(area + PAGE + 200, (uint8_t[]){ (uint8_t)(200 * 31 + 3), (uint8_t)(201 * 31 + 3),
					       (uint8_t)(202 * 31 + 3) }, 3);
	area[2 * PAGE + 5] = 0x5a; /* a write by the application, kept on the way back */
	mrce_unshare_mr(&mr);
	CHECK(!mr.shared);
	CHECK(!page_is_memfd(area + PAGE) && !page_is_memfd(area + 2 * PAGE));
	CHECK(area[2 * PAGE + 5] == 0x5a);
	area[2 * PAGE + 5] = (uint8_t)((PAGE + 5) * 31 + 3);
	CHECK(same(area, 4 * PAGE, 3));
	munmap(area, 4 * PAGE);
}

static void test_refused_stays_private(void)
{
	uint8_t *area = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mrce_mr mr = { .share_fd = -1 };
	struct daemon d = { .status = EINVAL };

	fill(area, 2 * PAGE, 9);
	mr.ibv_mr.addr = area;
	mr.ibv_mr.length = 2 * PAGE;
	CHECK(share(&mr, &d) == 1);
	CHECK(!mr.shared);
	CHECK(!page_is_memfd(area));
	CHECK(same(area, 2 * PAGE, 9));
	munmap(area, 2 * PAGE);
}

static void test_not_shared(void)
{
	uint8_t stack_buf[256];
	uint8_t *area = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *ro = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mrce_mr a = { .share_fd = -1 }, b = { .share_fd = -1 }, s = { .share_fd = -1 },
		       r = { .share_fd = -1 };
	struct daemon d = { .status = 0 };

	memset(stack_buf, 1, sizeof(stack_buf));
	s.ibv_mr.addr = stack_buf;
	s.ibv_mr.length = sizeof(stack_buf);
	CHECK(share(&s, &d) == 0 && !s.shared); /* the stack */
	r.ibv_mr.addr = ro;
	r.ibv_mr.length = PAGE;
	CHECK(share(&r, &d) == 0 && !r.shared); /* read-only pages */
	a.ibv_mr.addr = area;
	a.ibv_mr.length = PAGE + 10;
	CHECK(share(&a, &d) == 1 && a.shared);
	d.calls = 0;
	b.ibv_mr.addr = area + PAGE + 100; /* its first page is a's last */
	b.ibv_mr.length = PAGE;
	CHECK(share(&b, &d) == 0 && !b.shared);
	mrce_unshare_mr(&a);
	d.calls = 0;
	CHECK(share(&b, &d) == 1 && b.shared); /* a is gone: b may */
	mrce_unshare_mr(&b);
	munmap(area, 3 * PAGE);
	munmap(ro, PAGE);
}

int main(void)
{
	setenv("METAROCE_SHARED_MR", "1", 1);
	test_moves_pages_and_back();
	test_refused_stays_private();
	test_not_shared();
	if (failures) {
		fprintf(stderr, "test_shared_mr: %d failures\n", failures);
		return 1;
	}
	printf("test_shared_mr: OK\n");
	return 0;
}
