// SPDX-License-Identifier: Apache-2.0
/*
 * proc_mem_bench - what copying through /proc/<pid>/mem (the daemon's DMA
 * since sessions are bound to the process) costs against process_vm_writev/
 * readv (before). The parent maps 64 MiB shared and forks a child; it copies
 * 4 KiB pieces into the child's view of it (writes) and out of it (reads), 64 pieces per batch:
 *   vm      process_vm_writev/readv, 64 scattered iovecs per call (before)
 *   mem-run pwritev/preadv, 64 local iovecs to one following remote range
 *           per call (a message's packets: the usual case)
 *   mem-one pwritev/preadv, one call per 4 KiB piece (scattered remote
 *           ranges: the worst case)
 * then, per SIZE given on the command line, one following range of SIZE bytes
 * per call (what DmaBatch makes of a run of a message's packets), medians of 5
 * alternating rounds:
 *   size    preadv and process_vm_readv, pwritev and process_vm_writev, and a
 *           plain memcpy out of and into the child's memory through a mapping
 *           this process shares with it (what registering application memory
 *           that the daemon maps, shared, would leave of each copy)
 * and, last, what a liveness check of the child's pidfd costs per call
 * (pidfd_send_signal with signal 0: what binding process_vm_* by PID to the
 * process adds before every batch that uses it).
 * Build and run: cc -O2 -o /tmp/pmb bench/dma/proc_mem_bench.c &&
 *   /tmp/pmb 64 8192 65536 1048576
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PIECE 4096
#define BATCH 64
#define AREA (64UL << 20)
#define ROUNDS 4000

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Microseconds per call, median of 5 rounds, for each of the four calls on SIZE bytes. */
static int per_size(pid_t child, int fd, char *area, char *local, size_t size)
{
	int calls = size >= (1 << 20) ? 500 : size >= 65536 ? 5000 : 50000;
	double us[6][5];
	struct iovec l = { local, size }, r = { area, size };

	for (int k = 0; k < 5; k++) {
		for (int m = 0; m < 6; m++) {
			double t0 = now();

			for (int i = 0; i < calls; i++) {
				if (m >= 4) {
					/* the shared mapping: no system call, one copy */
					if (m == 4)
						memcpy(local, area, size);
					else
						memcpy(area, local, size);
					__asm__ volatile("" ::: "memory");
					continue;
				}
				ssize_t n = m == 0 ? preadv(fd, &l, 1, (off_t)area)
					  : m == 1 ? process_vm_readv(child, &l, 1, &r, 1, 0)
					  : m == 2 ? pwritev(fd, &l, 1, (off_t)area)
						   : process_vm_writev(child, &l, 1, &r, 1, 0);
				if (n != (ssize_t)size)
					return 6;
			}
			us[m][k] = (now() - t0) * 1e6 / calls;
		}
	}
	for (int m = 0; m < 6; m++)
		qsort(us[m], 5, sizeof(double), cmp_double);
	printf("size %8zu  read: mem %8.2f us  vm %8.2f us (%.2f)  shared %8.3f us"
	       "   write: mem %8.2f us  vm %8.2f us (%.2f)  shared %8.3f us\n",
	       size, us[0][2], us[1][2], us[1][2] / us[0][2], us[4][2], us[2][2], us[3][2],
	       us[3][2] / us[2][2], us[5][2]);
	return 0;
}

int main(int argc, char **argv)
{
	char *area = mmap(NULL, AREA, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *local = aligned_alloc(4096, AREA);
	struct iovec liov[BATCH], riov[BATCH];
	char path[64];
	pid_t child;
	int fd;

	memset(area, 1, AREA); /* fault every page in before the fork */
	memset(local, 7, AREA);
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)child);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	for (int dir = 0; dir < 2; dir++) {
		const char *what = dir ? "read " : "write";

		for (int mode = 0; mode < 3; mode++) {
			double t0 = now();
			long calls = 0;

			for (int r = 0; r < ROUNDS; r++) {
				size_t base = (size_t)(r % (AREA / (PIECE * BATCH))) *
					      PIECE * BATCH;

				for (int i = 0; i < BATCH; i++) {
					liov[i].iov_base = local + i * PIECE;
					liov[i].iov_len = PIECE;
					/* reversed pieces: scattered, except for mem-run */
					riov[i].iov_base = area + base +
						(size_t)(BATCH - 1 - i) * PIECE;
					riov[i].iov_len = PIECE;
				}
				if (mode == 0) {
					ssize_t n = dir ? process_vm_readv(child, liov, BATCH, riov, BATCH, 0)
							: process_vm_writev(child, liov, BATCH, riov, BATCH, 0);
					calls++;
					if (n != PIECE * BATCH)
						return 2;
				} else if (mode == 1) {
					ssize_t n = dir ? preadv(fd, liov, BATCH, (off_t)(area + base))
							: pwritev(fd, liov, BATCH, (off_t)(area + base));
					calls++;
					if (n != PIECE * BATCH)
						return 3;
				} else {
					for (int i = 0; i < BATCH; i++) {
						ssize_t n = dir ? preadv(fd, &liov[i], 1, (off_t)riov[i].iov_base)
								: pwritev(fd, &liov[i], 1, (off_t)riov[i].iov_base);
						calls++;
						if (n != PIECE)
							return 4;
					}
				}
			}
			double s = now() - t0;
			double bytes = (double)ROUNDS * BATCH * PIECE;

			printf("%s %-8s %6.2f GB/s  %7.0f ns per 4 KiB piece  %6.0f ns per call\n",
			       what, mode == 0 ? "vm" : mode == 1 ? "mem-run" : "mem-one",
			       bytes / s / 1e9, s * 1e9 / (ROUNDS * BATCH), s * 1e9 / calls);
		}
	}
	for (int a = 1; a < argc; a++) {
		size_t size = strtoul(argv[a], NULL, 0);

		if (size == 0 || size > AREA || per_size(child, fd, area, local, size) != 0) {
			fprintf(stderr, "size %s: bad, or a short copy\n", argv[a]);
			return 6;
		}
	}
	int pidfd = (int)syscall(SYS_pidfd_open, child, 0);

	if (pidfd >= 0) {
		double t0 = now();

		for (int i = 0; i < 100000; i++)
			if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) != 0)
				return 5;
		printf("pidfd check      %6.0f ns per call\n", (now() - t0) * 1e9 / 100000);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
