// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_shared_mr.c - opt-in shared regions (METAROCE_SHARED_MR=1).
 *
 * By default the daemon copies to and from registered memory with
 * process_vm_readv/writev (one system call and a page pinning per batch). With
 * METAROCE_SHARED_MR=1, ibv_reg_mr moves the pages of the region (whole pages,
 * so its first and last page's neighbours too) into a memfd: it copies them
 * into the file and maps the file over the same addresses, MAP_SHARED|MAP_FIXED,
 * then tells the daemon (MRCE_OP_SHARE_MR), which maps the same file and copies
 * through that mapping: no system call per copy. The application sees the same
 * bytes at the same addresses. ibv_dereg_mr maps private anonymous memory back
 * with the file's bytes, if the range is still the file's.
 *
 * Taken only where it is safe to do quietly: the range lies in one private,
 * anonymous, read-write mapping (heap or mmap, not the main stack), no other live
 * shared region overlaps its pages, the region is not on-demand paging, and the
 * daemon accepts; anything else leaves a plain region. Not for applications
 * that fork with registered memory (the child would share those pages with the
 * parent), nor for pages other threads write while ibv_reg_mr runs (a write
 * between the copy and the remap is lost).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mrce.h"

#define SHARED_NAME "mrce-mr"

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mrce_mr *shared_live; /* guarded by shared_lock */

static bool debugging(void)
{
	const char *v = getenv("METAROCE_DEBUG");

	return v && strcmp(v, "0") != 0;
}

static bool mrce_shared_mr_wanted(void)
{
	static int wanted = -1;

	if (wanted < 0) {
		const char *v = getenv("METAROCE_SHARED_MR");

		wanted = v && *v && strcmp(v, "0") != 0;
	}
	return wanted;
}

/*
 * The /proc/self/maps entry that holds all of [start, end): its permissions,
 * inode and path (newline stripped). 0 when one mapping holds it.
 */
static int maps_entry(uintptr_t start, uintptr_t end, char perms[5],
		      unsigned long *inode, char *path, size_t path_len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char dev[32];
		int n = 0;

		if (sscanf(line, "%lx-%lx %4s %lx %31s %lu %n", &lo, &hi, perms,
			   &off, dev, inode, &n) < 6 || n == 0)
			continue;
		if (lo > start || hi < end)
			continue;
		snprintf(path, path_len, "%s", line + n);
		path[strcspn(path, "\n")] = '\0';
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

static void back_to_private(uintptr_t start, size_t len, int fd);

static bool overlaps_live(uintptr_t start, uintptr_t end)
{
	for (struct mrce_mr *m = shared_live; m; m = m->share_next)
		if (start < m->share_end && m->share_start < end)
			return true;
	return false;
}

/*
 * Moves [start, start + len) into a new sealed memfd mapped at the same
 * addresses; returns the descriptor, or -1 with the range untouched.
 */
static int move_to_memfd(uintptr_t start, size_t len)
{
	int fd = memfd_create(SHARED_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *copy, *at;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		goto fail;
	copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (copy == MAP_FAILED)
		goto fail;
	memcpy(copy, (void *)start, len);
	at = mmap((void *)start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	munmap(copy, len);
	if (at == MAP_FAILED)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

void mrce_share_mr(struct mrce_conn *conn, struct mrce_mr *mr, unsigned int access)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t addr = (uintptr_t)mr->ibv_mr.addr;
	uintptr_t start = addr & ~(uintptr_t)(page - 1);
	uintptr_t end = (addr + mr->ibv_mr.length + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
	struct mrce_share_mr_req req = { .handle = mr->ibv_mr.handle };
	char perms[5], path[512];
	unsigned long inode;
	int fd, ret;

	if (!mrce_shared_mr_wanted() || (access & IBV_ACCESS_ON_DEMAND) || !mr->ibv_mr.length ||
	    end <= start)
		return;
	pthread_mutex_lock(&shared_lock);
	if (overlaps_live(start, end) ||
	    maps_entry(start, end, perms, &inode, path, sizeof(path)) != 0 ||
	    strcmp(perms, "rw-p") != 0 || inode != 0 || (path[0] && strcmp(path, "[heap]") != 0))
		goto out;
	fd = move_to_memfd(start, end - start);
	if (fd < 0)
		goto out;
	req.fd = fd;
	req.base = start;
	ret = mrce_conn_call(conn, MRCE_OP_SHARE_MR, &req, sizeof(req), NULL, 0, NULL, 0);
	if (ret) {
		/* the daemon copies as for any region; the pages stay the file's, as in any process */
		if (debugging())
			fprintf(stderr, "metaroce: region %u not shared with the daemon: %s\n",
				mr->ibv_mr.handle, strerror(ret));
		back_to_private(start, end - start, fd);
		close(fd);
		goto out;
	}
	if (debugging())
		fprintf(stderr, "metaroce: region %u shared with the daemon (%zu bytes of pages)\n",
			mr->ibv_mr.handle, (size_t)(end - start));
	mr->shared = true;
	mr->share_fd = fd;
	mr->share_start = start;
	mr->share_end = end;
	mr->share_next = shared_live;
	shared_live = mr;
out:
	pthread_mutex_unlock(&shared_lock);
}

/* Maps private anonymous memory back over the region's pages, with the file's bytes. */
static void back_to_private(uintptr_t start, size_t len, int fd)
{
	char perms[5], path[512];
	unsigned long inode;
	struct stat st;
	void *copy;

	if (fstat(fd, &st) != 0 ||
	    maps_entry(start, start + len, perms, &inode, path, sizeof(path)) != 0 ||
	    strcmp(perms, "rw-s") != 0 || inode != (unsigned long)st.st_ino ||
	    strncmp(path, "/memfd:" SHARED_NAME, strlen("/memfd:" SHARED_NAME)) != 0)
		return; /* unmapped or mapped anew since: not ours to touch */
	copy = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (copy == MAP_FAILED)
		return;
	if (mmap((void *)start, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
		memcpy((void *)start, copy, len);
	munmap(copy, len);
}

void mrce_unshare_mr(struct mrce_mr *mr)
{
	if (!mr->shared)
		return;
	pthread_mutex_lock(&shared_lock);
	for (struct mrce_mr **p = &shared_live; *p; p = &(*p)->share_next) {
		if (*p == mr) {
			*p = mr->share_next;
			break;
		}
	}
	back_to_private(mr->share_start, mr->share_end - mr->share_start, mr->share_fd);
	close(mr->share_fd);
	mr->shared = false;
	mr->share_fd = -1;
	pthread_mutex_unlock(&shared_lock);
}
