/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two-sided test programs (mrce_integrity, mrce_verbs_conformance)
 * share: failing with "<tool>: FAIL ..." on stdout, a whole-run timeout, the
 * splitmix64 mixer and CRC-32 of their data patterns, the TCP side channel on
 * which they exchange QP numbers, PSNs and GIDs, opening a verbs device by
 * name, CHECK lines, and the RC QP set-up and RDMA WRITE of mrce_odp and
 * mrce_import.
 */
#ifndef MRCE_TOOL_COMMON_H
#define MRCE_TOOL_COMMON_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Names the tool in FAIL lines, ignores SIGPIPE and, when timeout_s > 0, ends
 * the run with "<tool>: FAIL timeout" (exit 1) after timeout_s seconds.
 */
void tool_init(const char *name, unsigned int timeout_s);

/* Prints "<tool>: FAIL <message>" on stdout and exits 1. */
__attribute__((noreturn, format(printf, 1, 2))) void tool_fail(const char *fmt,
							       ...);

/* splitmix64's finaliser: the patterns, sizes and PSNs. */
uint64_t tool_mix(uint64_t x);

/* CRC-32 (IEEE, reflected) of p[0..len) continued from crc (0 to start). */
uint32_t tool_crc32_update(uint32_t crc, const uint8_t *p, size_t len);

static inline uint32_t tool_crc32(const uint8_t *p, size_t len)
{
	return tool_crc32_update(0, p, len);
}

/* The TCP side channel: whole writes and reads, or FAIL. */
void tool_write_all(int fd, const void *buf, size_t len);
void tool_read_all(int fd, void *buf, size_t len);

/* Connects to host:port, retrying for about 10 s while the server starts. */
int tool_tcp_connect(const char *host, int port);

/* Listens on port (IPv6 and IPv4) and returns the first connection. */
int tool_tcp_accept(int port);

/* Opens the device named name (the first one when name is NULL), or FAIL. */
struct ibv_context *tool_open_device(const char *name);

/*
 * Prints "CHECK name: PASS|FAIL detail" (the lines the integration tests
 * parse); a failed check then fails the run.
 */
__attribute__((format(printf, 3, 4))) void tool_check(const char *name, int ok,
						      const char *fmt, ...);

/* An RC QP on pd with both queues on cq (4 WRs, 1 SGE each), or FAIL. */
struct ibv_qp *tool_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq);

/*
 * Moves an RC QP through INIT (remote writes allowed), RTR (to QP dest at
 * GID gid, from GID index gidx, PSN 0) and RTS, or FAIL.
 */
void tool_rc_to_rts(struct ibv_qp *qp, uint32_t dest, const uint8_t *gid,
		    int gidx);

/* Posts one signaled RDMA WRITE and waits for its completion: the status. */
int tool_rc_write_wait(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		       const uint8_t *src, uint32_t len, uint64_t raddr,
		       uint32_t rkey, uint64_t id);

#endif
