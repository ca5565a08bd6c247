/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmetaroce-rdmacm.so: the librdmacm API for ids on mrce0, served by the
 * daemons' connection service (docs/spec/connection-manager.md section 6).
 */
#ifndef MRCE_RDMACM_H
#define MRCE_RDMACM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mrce_abi.h"

typedef void (*rc_cb)(void *ctx, int status, const void *resp, uint32_t len);

struct rc_pend;

struct rc_conn {
	int fd;
	uint32_t seq;
	int refs;
	bool dead, closing;
	pthread_t reader;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rc_pend *pending;
	void *running_ctx;             /* whose callback the reader runs now */
	void (*on_dead)(void *owner);  /* the daemon went away (not on close) */
	void *owner;
};

int rc_conn_open(struct rc_conn **out, struct mrce_hello_resp *hello,
		 void (*on_dead)(void *), void *owner);
int rc_conn_call(struct rc_conn *c, uint16_t op, const void *req, uint32_t len,
		 void *resp, uint32_t resp_len);
int rc_conn_send(struct rc_conn *c, uint16_t op, const void *req, uint32_t len,
		 rc_cb cb, void *ctx);
void rc_conn_forget(struct rc_conn *c, void *ctx);
void rc_conn_get(struct rc_conn *c);
void rc_conn_put(struct rc_conn *c);

/*
 * What the library puts in front of the application's private data in the
 * service's private data (the rdma_cm's own header, as the kernel's CM puts
 * one in the IB CM's REQ): the parameters of rdma_conn_param that the peer's
 * event reports, the source port, and the "watch" service id that tells the
 * peer when this side disconnects or goes away.
 */
#define RC_HDR_MAGIC 0x4d43524du /* "MRCM" */
struct rc_hdr {
	uint32_t magic;
	uint8_t version;             /* 1 */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t pad;
	uint16_t src_port;           /* network order */
	uint16_t pad2;
	uint32_t watch_sid;          /* 0: none (UD) */
	uint32_t qkey;               /* UD */
};                                   /* 24 */

#define RC_PDATA_MAX (MRCE_CM_PRIVATE_DATA_MAX - sizeof(struct rc_hdr))

/*
 * Addresses (rdmacm.c): an id's addresses are sockaddr_in or sockaddr_in6
 * (both keep the port at the same offset); inside, an address is 16 bytes,
 * IPv6 as it is and IPv4 as ::ffff:a.b.c.d, like the GIDs.
 */
struct sockaddr;
bool rc_addr_is_v4mapped(const uint8_t a[16]);
/* 0 for AF_INET and AF_INET6; EAFNOSUPPORT (with a message) for any other, EINVAL for NULL. */
int rc_addr_check_family(const struct sockaddr *sa);
/* SA's address as 16 bytes; false (zeros) for a family other than AF_INET/AF_INET6. */
bool rc_addr_get(const struct sockaddr *sa, uint8_t a[16]);
/* Writes a sockaddr_in (v4-mapped A) or sockaddr_in6 with PORT_BE; returns its length. */
unsigned int rc_addr_set(struct sockaddr *sa, const uint8_t a[16], uint16_t port_be);
/* sizeof(sockaddr_in / sockaddr_in6) for SA's family, 0 for another. */
unsigned int rc_addr_len(const struct sockaddr *sa);
/* 0.0.0.0, :: or ::ffff:0.0.0.0 */
bool rc_addr_is_any(const struct sockaddr *sa);
/* 127.0.0.0/8 or ::1, unless it is SERVED (the daemon's own address) */
bool rc_addr_is_loopback(const uint8_t a[16], const uint8_t served[16]);
const char *rc_addr_str(const uint8_t a[16], char *buf, size_t len);

#endif
