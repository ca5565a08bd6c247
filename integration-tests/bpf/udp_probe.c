// SPDX-License-Identifier: Apache-2.0
/*
 * udp_probe - counts UDP datagrams across a link, to check that a drop
 * program really drops what it should (and nothing else).
 *
 *   udp_probe recv PORT COUNT TIMEOUT_MS     prints "received N" when COUNT
 *                                            arrived or TIMEOUT_MS passed
 *                                            with nothing new
 *   udp_probe send ADDR PORT COUNT [SPORT]   sends COUNT 64-byte datagrams,
 *                                            from SPORT when given,
 *                                            prints "sent N"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: udp_probe recv PORT COUNT TIMEOUT_MS [6]\n"
			"       udp_probe send ADDR PORT COUNT [SPORT]\n"
			"(recv ... 6: on IPv6; send: the family of ADDR)\n");
	return 2;
}

static int do_recv(int port, long count, int timeout_ms, int v6)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(port),
				    .sin6_addr = IN6ADDR_ANY_INIT };
	int rcvbuf = 8 << 20;
	char buf[2048];
	long received = 0;
	int fd;

	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) ||
	    (v6 ? bind(fd, (struct sockaddr *)&sa6, sizeof(sa6))
		: bind(fd, (struct sockaddr *)&sa, sizeof(sa)))) {
		perror("udp_probe recv");
		return 1;
	}
	printf("listening %d\n", port);
	fflush(stdout);
	while (received < count) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n = poll(&pfd, 1, timeout_ms);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (recv(fd, buf, sizeof(buf), 0) >= 0)
			received++;
	}
	printf("received %ld\n", received);
	close(fd);
	return 0;
}

static int do_send(const char *addr, int port, long count, int sport)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in6 dst6 = { .sin6_family = AF_INET6,
				     .sin6_port = htons(port) };
	struct sockaddr *to = (struct sockaddr *)&dst;
	socklen_t tolen = sizeof(dst);
	char payload[64];
	long sent = 0;
	int fd, v6 = 0;

	memset(payload, 0x5a, sizeof(payload));
	if (inet_pton(AF_INET6, addr, &dst6.sin6_addr) == 1) {
		v6 = 1;
		to = (struct sockaddr *)&dst6;
		tolen = sizeof(dst6);
	} else if (inet_pton(AF_INET, addr, &dst.sin_addr) != 1) {
		return usage();
	}
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udp_probe send: socket");
		return 1;
	}
	if (sport > 0) {
		struct sockaddr_in src = { .sin_family = AF_INET,
					   .sin_port = htons(sport),
					   .sin_addr.s_addr = htonl(INADDR_ANY) };
		struct sockaddr_in6 src6 = { .sin6_family = AF_INET6,
					     .sin6_port = htons(sport),
					     .sin6_addr = IN6ADDR_ANY_INIT };

		if (v6 ? bind(fd, (struct sockaddr *)&src6, sizeof(src6))
		       : bind(fd, (struct sockaddr *)&src, sizeof(src))) {
			perror("udp_probe send: bind");
			return 1;
		}
	}
	for (long i = 0; i < count; i++) {
		if (sendto(fd, payload, sizeof(payload), 0, to, tolen) ==
		    sizeof(payload))
			sent++;
		/* Pace a little so the receiver's socket buffer never overflows. */
		if ((i & 63) == 63)
			usleep(1000);
	}
	printf("sent %ld\n", sent);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 5 || (argc == 6 && !strcmp(argv[5], "6"))) &&
	    !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]), atol(argv[3]), atoi(argv[4]),
			       argc == 6);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), atol(argv[4]),
			       argc == 6 ? atoi(argv[5]) : 0);
	return usage();
}
