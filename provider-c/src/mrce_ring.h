/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mrce_ring.h - single-producer/single-consumer ring helpers over the shared
 * memory layout of mrce_abi.h. Header-only and free of libibverbs so that the
 * unit tests can drive them against plain memory.
 *
 * Indices are free-running u32 values; a slot is index & (slot_count - 1).
 * Each side keeps a cached copy of the other side's index and reloads it
 * (acquire) only when the cache says the ring is full (producer) or empty
 * (consumer), as libxdp's xsk.h does.
 */
#ifndef MRCE_RING_H
#define MRCE_RING_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mrce_abi.h"

struct mrce_ring {
	struct mrce_ring_header *hdr;
	uint8_t *slots;
	uint32_t mask;
	uint32_t slot_size;
	uint32_t cached_prod; /* our copy of hdr->producer */
	uint32_t cached_cons; /* our copy of hdr->consumer */
};

/*
 * Attaches to a ring that the daemon initialised; checks magic, version,
 * kind, slot size and that slot_count is a power of two and fits in len.
 * Called once, before the ring is shared with any other thread.
 */
static inline int mrce_ring_attach(struct mrce_ring *r, void *base, size_t len,
				   uint16_t kind, uint32_t slot_size)
{
	struct mrce_ring_header *h = base;
	uint32_t n;

	/* base comes from the daemon's offsets: a misaligned header is its error */
	if (len < MRCE_RING_SLOTS_OFF || ((uintptr_t)base & (MRCE_CACHE_LINE - 1)))
		return EPROTO;
	n = h->slot_count;
	if (h->magic != MRCE_RING_MAGIC || h->version != MRCE_RING_VERSION ||
	    h->kind != kind || h->slot_size != slot_size || n == 0 ||
	    (n & (n - 1)) != 0 ||
	    (uint64_t)n * slot_size > len - MRCE_RING_SLOTS_OFF)
		return EPROTO;
	r->hdr = h;
	r->slots = (uint8_t *)base + MRCE_RING_SLOTS_OFF;
	r->mask = n - 1;
	r->slot_size = slot_size;
	r->cached_prod = __atomic_load_n(&h->producer, __ATOMIC_ACQUIRE);
	r->cached_cons = __atomic_load_n(&h->consumer, __ATOMIC_ACQUIRE);
	return 0;
}

static inline uint32_t mrce_ring_size(const struct mrce_ring *r)
{
	return r->mask + 1;
}

static inline void *mrce_ring_slot(struct mrce_ring *r, uint32_t idx)
{
	return r->slots + (size_t)(idx & r->mask) * r->slot_size;
}

/*
 * Producer side only (one thread at a time): the number of free slots, at
 * least `want` if that many are free. Reloads the consumer index (acquire)
 * only when the cached value shows fewer than `want` free.
 */
static inline uint32_t mrce_ring_prod_free(struct mrce_ring *r, uint32_t want)
{
	uint32_t free_slots = mrce_ring_size(r) - (r->cached_prod - r->cached_cons);

	if (free_slots >= want)
		return free_slots;
	r->cached_cons = __atomic_load_n(&r->hdr->consumer, __ATOMIC_ACQUIRE);
	return mrce_ring_size(r) - (r->cached_prod - r->cached_cons);
}

/* Producer side only: the slot the next entry goes into (check free first). */
static inline void *mrce_ring_prod_slot(struct mrce_ring *r)
{
	return mrce_ring_slot(r, r->cached_prod);
}

/* Producer side only: counts one more written slot, not yet visible. */
static inline void mrce_ring_prod_advance(struct mrce_ring *r)
{
	r->cached_prod++;
}

/*
 * Producer side only: makes every advanced slot visible (release), then
 * fences and reports whether the consumer asked for a doorbell. The full
 * fence orders our producer store before the NEED_WAKEUP load; the daemon
 * does the mirror image (set flag, fence, re-check producer).
 */
static inline bool mrce_ring_prod_publish(struct mrce_ring *r)
{
	__atomic_store_n(&r->hdr->producer, r->cached_prod, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return (__atomic_load_n(&r->hdr->flags, __ATOMIC_RELAXED) &
		MRCE_RING_NEED_WAKEUP) != 0;
}

/*
 * Consumer side only (one thread at a time): the number of entries ready,
 * reloading the producer index (acquire) when the cache shows none.
 */
static inline uint32_t mrce_ring_cons_avail(struct mrce_ring *r)
{
	uint32_t avail = r->cached_prod - r->cached_cons;

	if (avail)
		return avail;
	r->cached_prod = __atomic_load_n(&r->hdr->producer, __ATOMIC_ACQUIRE);
	return r->cached_prod - r->cached_cons;
}

/* Consumer side only: the oldest unread entry (check avail first). */
static inline void *mrce_ring_cons_slot(struct mrce_ring *r)
{
	return mrce_ring_slot(r, r->cached_cons);
}

/* Consumer side only: releases `n` read slots back to the producer. */
static inline void mrce_ring_cons_release(struct mrce_ring *r, uint32_t n)
{
	r->cached_cons += n;
	__atomic_store_n(&r->hdr->consumer, r->cached_cons, __ATOMIC_RELEASE);
}

#endif /* MRCE_RING_H */
