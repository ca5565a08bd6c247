// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the ring helpers (mrce_ring.h) on plain memory: attach
 * checks, empty, full, wrap-around of the free-running indices, and the
 * need_wakeup report. No daemon, no libibverbs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrce_ring.h"
#include "check.h"


#define SLOTS 8
#define SLOT_SIZE 64

static void *make_ring(uint16_t kind, uint32_t slot_size, uint32_t n,
		       uint32_t start)
{
	size_t len = MRCE_RING_SLOTS_OFF + (size_t)slot_size * n;
	struct mrce_ring_header *h = aligned_alloc(64, len);

	memset(h, 0, len);
	h->magic = MRCE_RING_MAGIC;
	h->version = MRCE_RING_VERSION;
	h->kind = kind;
	h->slot_size = slot_size;
	h->slot_count = n;
	h->producer = start;
	h->consumer = start;
	return h;
}

static void test_attach_checks(void)
{
	size_t len = MRCE_RING_SLOTS_OFF + SLOT_SIZE * SLOTS;
	struct mrce_ring_header *h = make_ring(MRCE_RING_KIND_CQ, SLOT_SIZE,
					       SLOTS, 0);
	struct mrce_ring r;

	CHECK(mrce_ring_attach(&r, h, len, MRCE_RING_KIND_CQ, SLOT_SIZE) == 0);
	CHECK(mrce_ring_size(&r) == SLOTS);
	CHECK(mrce_ring_attach(&r, h, len, MRCE_RING_KIND_SQ, SLOT_SIZE) != 0);
	CHECK(mrce_ring_attach(&r, h, len, MRCE_RING_KIND_CQ, 256) != 0);
	CHECK(mrce_ring_attach(&r, h, len - 1, MRCE_RING_KIND_CQ, SLOT_SIZE) != 0);
	CHECK(mrce_ring_attach(&r, h, 100, MRCE_RING_KIND_CQ, SLOT_SIZE) != 0);
	h->slot_count = 6; /* not a power of two */
	CHECK(mrce_ring_attach(&r, h, len, MRCE_RING_KIND_CQ, SLOT_SIZE) != 0);
	h->slot_count = SLOTS;
	h->magic ^= 1;
	CHECK(mrce_ring_attach(&r, h, len, MRCE_RING_KIND_CQ, SLOT_SIZE) != 0);
	h->magic ^= 1;
	h->version = MRCE_RING_VERSION + 1;
	CHECK(mrce_ring_attach(&r, h, len, MRCE_RING_KIND_CQ, SLOT_SIZE) != 0);
	free(h);
}

/*
 * One producer view and one consumer view of the same memory, as the
 * provider and the daemon have; starting near 2^32 so the indices wrap.
 */
static void test_fill_drain_wrap(uint32_t start)
{
	size_t len = MRCE_RING_SLOTS_OFF + SLOT_SIZE * SLOTS;
	struct mrce_ring_header *h = make_ring(MRCE_RING_KIND_SQ, SLOT_SIZE,
					       SLOTS, start);
	struct mrce_ring prod, cons;
	uint32_t next_write = 0, next_read = 0;
	int round, i;

	CHECK(mrce_ring_attach(&prod, h, len, MRCE_RING_KIND_SQ, SLOT_SIZE) == 0);
	CHECK(mrce_ring_attach(&cons, h, len, MRCE_RING_KIND_SQ, SLOT_SIZE) == 0);
	CHECK(mrce_ring_cons_avail(&cons) == 0); /* empty */

	for (round = 0; round < 5; round++) {
		/* Fill to the brim: SLOTS entries fit, one more does not. */
		while (mrce_ring_prod_free(&prod, 1)) {
			uint32_t *slot = mrce_ring_prod_slot(&prod);

			*slot = next_write++;
			mrce_ring_prod_advance(&prod);
		}
		CHECK(next_write - next_read == SLOTS);
		CHECK(mrce_ring_cons_avail(&cons) == 0 ||
		      h->producer != prod.cached_prod);
		mrce_ring_prod_publish(&prod);
		CHECK(h->producer == start + next_write);
		CHECK(mrce_ring_prod_free(&prod, 1) == 0); /* full */

		/* Drain part of it; the producer sees the space come back. */
		for (i = 0; i < 3 + round % 3; i++) {
			uint32_t *slot;

			/* The cache may be stale but never claims too much. */
			CHECK(mrce_ring_cons_avail(&cons) > 0);
			CHECK(mrce_ring_cons_avail(&cons) <=
			      next_write - next_read);
			slot = mrce_ring_cons_slot(&cons);

			CHECK(*slot == next_read);
			next_read++;
			mrce_ring_cons_release(&cons, 1);
		}
		CHECK(mrce_ring_prod_free(&prod, 1) ==
		      (uint32_t)(SLOTS - (next_write - next_read)));
	}
	/* Drain everything: empty again, and indices went past 2^32. */
	while (mrce_ring_cons_avail(&cons) && next_read != next_write) {
		uint32_t *slot = mrce_ring_cons_slot(&cons);

		CHECK(*slot == next_read);
		next_read++;
		mrce_ring_cons_release(&cons, 1);
	}
	CHECK(next_read == next_write);
	CHECK(h->consumer == h->producer);
	CHECK(mrce_ring_prod_free(&prod, SLOTS) == SLOTS);
	free(h);
}

static void test_need_wakeup(void)
{
	size_t len = MRCE_RING_SLOTS_OFF + SLOT_SIZE * SLOTS;
	struct mrce_ring_header *h = make_ring(MRCE_RING_KIND_RQ, SLOT_SIZE,
					       SLOTS, 0);
	struct mrce_ring prod;

	CHECK(mrce_ring_attach(&prod, h, len, MRCE_RING_KIND_RQ, SLOT_SIZE) == 0);
	mrce_ring_prod_advance(&prod);
	CHECK(!mrce_ring_prod_publish(&prod)); /* daemon awake: no doorbell */
	h->flags = MRCE_RING_NEED_WAKEUP;
	mrce_ring_prod_advance(&prod);
	CHECK(mrce_ring_prod_publish(&prod)); /* asleep: ring the doorbell */
	CHECK(h->producer == 2);
	free(h);
}

int main(void)
{
	test_attach_checks();
	test_fill_drain_wrap(0);
	test_fill_drain_wrap(UINT32_MAX - 3);
	test_fill_drain_wrap(UINT32_MAX);
	test_need_wakeup();
	if (failures) {
		printf("test_ring: %d failures\n", failures);
		return 1;
	}
	printf("test_ring: OK\n");
	return 0;
}
