// SPDX-License-Identifier: Apache-2.0
/*
 * udp-gso-ref - what the kernel's UDP path costs per MiB when a sender hands
 * it many datagrams per system call as one GSO buffer (UDP_SEGMENT) and the
 * receiver takes them coalesced (UDP_GRO), against one datagram per call: a
 * ceiling for a UDP port that would batch a path's packets so, next to the C
 * AF_XDP reference (bench/afxdp). Each datagram is SIZE bytes, as a MetaRoCE
 * packet (8150 bytes of UDP payload on a 9000-byte link).
 *
 *   udp-gso-ref rx -p PORT [-d MAX_SECONDS] [--gro]
 *   udp-gso-ref tx -a ADDR -p PORT -s SIZE -d SECONDS [--gso SEGMENTS]
 *
 * tx sends for SECONDS (--gso N: N datagrams per send, UDP_SEGMENT = SIZE;
 * without it, one datagram per send), then a 1-byte datagram that ends the
 * receiver; both print one line with the bytes, Gbit/s and their own CPU time
 * (user + system) per MiB of UDP payload. The receiver blocks in recvmsg, so
 * its CPU is its work, not a busy loop.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "udp-gso-ref: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: udp-gso-ref rx -p PORT [-d MAX_SECONDS] [--gro]\n"
			"       udp-gso-ref tx -a ADDR -p PORT -s SIZE -d SECONDS [--gso SEGMENTS]\n");
	exit(2);
}

static void report(const char *who, unsigned long long bytes, unsigned long long calls, double secs,
		   double cpu)
{
	double mib = bytes / 1048576.0;

	printf("%s: bytes=%llu calls=%llu seconds=%.3f gbps=%.3f cpu=%.3f cpu_ms_per_mib=%.3f\n", who,
	       bytes, calls, secs, secs > 0 ? bytes * 8.0 / secs / 1e9 : 0, cpu,
	       mib > 0 ? cpu * 1000 / mib : 0);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "gso", required_argument, NULL, 'G' },
		{ "gro", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in sa = { .sin_family = AF_INET };
	unsigned int size = 8150, gso = 0, port = 0;
	double seconds = 5;
	int gro = 0, c, fd;
	const char *mode, *addr = NULL;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "a:p:s:d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = (unsigned int)atoi(optarg); break;
		case 's': size = (unsigned int)atoi(optarg); break;
		case 'd': seconds = atof(optarg); break;
		case 'G': gso = (unsigned int)atoi(optarg); break;
		case 'R': gro = 1; break;
		default: usage();
		}
	}
	if (!port || size < 2 || size > 65000 || (gso && (gso > 64 || gso * size > 65000 + size)))
		usage();
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	if (!strcmp(mode, "rx")) {
		static char buf[1 << 16];
		int one = 1, rcvbuf = 32 << 20;
		unsigned long long bytes = 0, calls = 0;
		double t0 = 0, c0 = 0, t1, deadline = now(CLOCK_MONOTONIC) + seconds + 30;

		setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
		if (gro && setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) != 0)
			die("UDP_GRO");
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
			die("bind");
		struct timeval tv = { .tv_sec = 1 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		printf("rx: ready\n");
		fflush(stdout);
		for (;;) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);

			if (n < 0) {
				if ((errno == EAGAIN || errno == EINTR) && now(CLOCK_MONOTONIC) < deadline)
					continue;
				break;
			}
			if (n == 1)
				break; /* the sender's end mark */
			if (!calls) {
				t0 = now(CLOCK_MONOTONIC);
				c0 = now(CLOCK_PROCESS_CPUTIME_ID);
			}
			bytes += (unsigned long long)n;
			calls++;
		}
		t1 = now(CLOCK_MONOTONIC);
		report("rx", bytes, calls, calls ? t1 - t0 : 0, calls ? now(CLOCK_PROCESS_CPUTIME_ID) - c0 : 0);
		return 0;
	}
	if (strcmp(mode, "tx") != 0 || !addr || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		usage();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("connect");
	if (gso) {
		int seg = (int)size;

		if (setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)) != 0)
			die("UDP_SEGMENT");
	}
	size_t len = gso ? (size_t)gso * size : size;
	char *buf = calloc(1, len);
	unsigned long long bytes = 0, calls = 0;
	double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID), end = t0 + seconds;

	while (now(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 64; i++) {
			ssize_t n = send(fd, buf, len, 0);

			if (n < 0) {
				if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED)
					continue;
				die("send");
			}
			bytes += (unsigned long long)n;
			calls++;
		}
	}
	double t1 = now(CLOCK_MONOTONIC), cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;

	if (gso) {
		int zero = 0;

		setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &zero, sizeof(zero));
	}
	for (int i = 0; i < 20; i++) {
		send(fd, buf, 1, 0);
		usleep(1000);
	}
	report("tx", bytes, calls, t1 - t0, cpu);
	return 0;
}
