// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_inject - an off-path attacker's packets: well-formed MetaRoCE data
 * packets (wire version 2, valid CRC32C) aimed at a live QP, with a chosen
 * connection token, sent to a daemon's data port. A daemon with the
 * connection manager drops every one whose token is not the QP's and counts
 * it (rxBadToken).
 *
 *   mrce_inject ADDR PORT DST_QPN SRC_QPN TOKEN COUNT
 *       sends COUNT zero-length SEND packets with random RSNs and PSNs;
 *       prints "sent COUNT"
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HDR 48

static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: mrce_inject ADDR PORT DST_QPN SRC_QPN TOKEN COUNT\n");
		return 2;
	}
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
	if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "mrce_inject: bad address %s\n", argv[1]);
		return 2;
	}
	uint32_t dst = strtoul(argv[3], NULL, 0), src = strtoul(argv[4], NULL, 0);
	uint32_t token = strtoul(argv[5], NULL, 0);
	long count = atol(argv[6]);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	srandom(getpid());
	uint8_t pkt[HDR];
	long sent = 0;
	for (long i = 0; i < count; i++) {
		memset(pkt, 0, sizeof(pkt));
		pkt[0] = 2;                      /* version */
		pkt[1] = 1;                      /* SEND */
		put32(pkt + 4, (uint32_t)random());  /* path PSN */
		put32(pkt + 8, (uint32_t)random());  /* RSN */
		put32(pkt + 12, dst);
		put32(pkt + 16, src);
		put32(pkt + 20, token);
		put32(pkt + 44, crc32c(0, pkt, 44));
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&to, sizeof(to)) == sizeof(pkt))
			sent++;
	}
	printf("sent %ld\n", sent);
	close(fd);
	return sent == count ? 0 : 1;
}
