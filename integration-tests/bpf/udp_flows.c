// SPDX-License-Identifier: Apache-2.0
/*
 * udp_flows - many UDP flows at once, told apart by their source port, to see
 * how an ECMP fabric spreads them over its links and what a lossy, dead or
 * downed link does to each flow.
 *
 *   udp_flows recv PORT EXPECTED IDLE_MS
 *       prints "listening PORT", then, once EXPECTED datagrams arrived or
 *       IDLE_MS passed with nothing new, one line "flow SPORT N" per source
 *       port heard from (ascending) and "received TOTAL"
 *   udp_flows send ADDR PORT SPORT NFLOWS COUNT
 *       binds NFLOWS sockets to source ports SPORT .. SPORT+NFLOWS-1 and sends
 *       COUNT rounds of one 64-byte datagram per flow; prints "sent TOTAL"
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

#define MAX_FLOWS 1024

static long per_port[65536];

static int usage(void)
{
	fprintf(stderr, "usage: udp_flows recv PORT EXPECTED IDLE_MS\n"
			"       udp_flows send ADDR PORT SPORT NFLOWS COUNT\n");
	return 2;
}

static int do_recv(int port, long expected, int idle_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int rcvbuf = 16 << 20;
	long received = 0;
	char buf[2048];
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("udp_flows recv");
		return 1;
	}
	printf("listening %d\n", port);
	fflush(stdout);
	while (received < expected) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sockaddr_in from;
		socklen_t len = sizeof(from);
		int n = poll(&pfd, 1, idle_ms);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len) >= 0) {
			per_port[ntohs(from.sin_port)]++;
			received++;
		}
	}
	for (int p = 0; p < 65536; p++)
		if (per_port[p])
			printf("flow %d %ld\n", p, per_port[p]);
	printf("received %ld\n", received);
	close(fd);
	return 0;
}

static int do_send(const char *addr, int port, int sport, int nflows, long count)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fds[MAX_FLOWS];
	char payload[64];
	long sent = 0;

	if (inet_pton(AF_INET, addr, &dst.sin_addr) != 1 || nflows < 1 || nflows > MAX_FLOWS ||
	    sport < 1 || sport + nflows > 65536)
		return usage();
	memset(payload, 0x5a, sizeof(payload));
	for (int i = 0; i < nflows; i++) {
		struct sockaddr_in src = { .sin_family = AF_INET,
					   .sin_port = htons(sport + i),
					   .sin_addr.s_addr = htonl(INADDR_ANY) };

		fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&src, sizeof(src))) {
			fprintf(stderr, "udp_flows send: source port %d: %s\n", sport + i,
				strerror(errno));
			return 1;
		}
	}
	for (long round = 0; round < count; round++) {
		for (int i = 0; i < nflows; i++) {
			if (sendto(fds[i], payload, sizeof(payload), 0, (struct sockaddr *)&dst,
				   sizeof(dst)) == sizeof(payload))
				sent++;
			/* Pace a little so no socket buffer on the way overflows. */
			if ((sent & 63) == 63)
				usleep(500);
		}
	}
	printf("sent %ld\n", sent);
	for (int i = 0; i < nflows; i++)
		close(fds[i]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]), atol(argv[3]), atoi(argv[4]));
	if (argc == 7 && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atol(argv[6]));
	return usage();
}
