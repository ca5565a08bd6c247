// SPDX-License-Identifier: Apache-2.0
/*
 * libmrce_connect_gate.so: test support for the integration tests
 * (RdmaCmIT), preloaded in front of libmetaroce-rdmacm.so. It holds a
 * process's Nth rdma_connect (MRCE_CONNECT_GATE_AT=N) until a word can be
 * read from the FIFO MRCE_CONNECT_GATE_FIFO, then lets it through.
 *
 * perftest's -R client connects twice: to the server's first listener (its
 * parameter exchange), then, right after that exchange, for the measured QPs,
 * to a second listener the server makes only after the exchange. Nothing in
 * perftest orders the second connect after the second listen, and a connect
 * that arrives first is rejected (no listener), as it would be on any RDMA
 * NIC. The test sees the server's second rdma_listen and only then opens the
 * gate: the order is the test's, not the scheduler's.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <rdma/rdma_cma.h>

typedef int (*connect_fn)(struct rdma_cm_id *, struct rdma_conn_param *);

static int calls;

__attribute__((visibility("default"))) int rdma_connect(struct rdma_cm_id *id,
							 struct rdma_conn_param *param)
{
	static connect_fn next;
	const char *at = getenv("MRCE_CONNECT_GATE_AT");
	const char *fifo = getenv("MRCE_CONNECT_GATE_FIFO");

	if (!next)
		next = (connect_fn)dlvsym(RTLD_NEXT, "rdma_connect", "RDMACM_1.0");
	if (!next) {
		fprintf(stderr, "mrce_connect_gate: no rdma_connect after this library\n");
		abort();
	}
	if (at && fifo && ++calls == atoi(at)) {
		char word[16];
		FILE *f = fopen(fifo, "r"); /* blocks until the test opens it to write */

		if (!f || fscanf(f, "%15s", word) != 1) {
			fprintf(stderr, "mrce_connect_gate: no word from %s\n", fifo);
			abort();
		}
		fclose(f);
	}
	return next(id, param);
}
