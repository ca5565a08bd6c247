/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmetaroce-rdmacm.so: the librdmacm API for ids on mrce0, served by the
 * daemons' connection service (docs/spec/connection-manager.md section 6).
 */
#ifndef MRCE_RDMACM_H
#define MRCE_RDMACM_H

#include <pthread.h>
#include <stdbool.h>
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

#endif
