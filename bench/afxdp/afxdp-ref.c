// SPDX-License-Identifier: Apache-2.0
/*
 * afxdp-ref: the C AF_XDP reference program of the packet-I/O benchmark.
 *
 * The Java AfXdpPort is measured against this: same veth pair, same frame
 * sizes, same modes. It uses libxdp the plain way (one UMEM, one socket on one
 * queue, need_wakeup, batches of 64) so it stands for "what C gets".
 *
 *   afxdp-ref tx -i IF -s SIZE -d SECONDS --dst-mac MAC --src-ip A --dst-ip B
 *                [--skb | --native] [-q QUEUE] [--port PORT]
 *       sends SIZE-byte Ethernet/IPv4/UDP frames (SIZE without FCS) for
 *       SECONDS, each carrying a sequence number; counts completions.
 *   afxdp-ref rx -i IF [-d MAX_SECONDS] [--skb | --native] [-q QUEUE]
 *                [--port PORT] [--idle-ms MS]
 *       loads libxdp's default XSK program, counts the frames received,
 *       checks each one (UDP port, magic, sequence) and stops MS after the
 *       last frame (or after MAX_SECONDS, or on SIGINT/SIGTERM).
 *   afxdp-ref ping -i IF -s SIZE -n ITERS --dst-mac MAC --src-ip A --dst-ip B
 *                [--warmup N] [--skb | --native] [-q QUEUE] [--port PORT]
 *       the latency ceiling: sends one frame, busy-polls its RX ring for the
 *       echo, then sends the next; prints the round trips' p50, mean and p99.
 *   afxdp-ref pong -i IF [-d MAX_SECONDS] [--skb | --native] [-q QUEUE]
 *                [--port PORT] [--idle-ms MS]
 *       busy-polls its RX ring and sends every frame of ours back (Ethernet,
 *       IPv4 and UDP source and destination swapped).
 *
 * A frame larger than one 4 KiB UMEM chunk (up to MAX_DESCS chunks) goes as a
 * multi-buffer packet (XDP_USE_SG, XDP_PKT_CONTD): 8192 bytes is MetaRoCE's
 * jumbo packet on a 9000-byte link, two chunks, as its AF_XDP port sends it.
 *
 * Each prints one line "tx: ..." / "rx: ..." / "ping: ..." / "pong: ..." of
 * key=value pairs; rates are over the active interval, Gbit/s counts the frame
 * bytes handed to the device; the sender adds its CPU time over that interval
 * (user + system, without the softirq time the kernel accounts apart) and that
 * time per frame. The receiver and the echo print "rx: ready" / "pong: ready"
 * once their socket is bound.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

#define NUM_FRAMES 4096
/*
 * UMEM chunk size: 4096 by default; --chunk 8192 (or up to 65536) backs the
 * UMEM with 2 MiB huge pages (MAP_HUGETLB), which Linux 6.6+ needs for chunks
 * larger than a page: then MetaRoCE's 8192-byte jumbo frame is one descriptor.
 */
static unsigned int ref_chunk = XSK_UMEM__DEFAULT_FRAME_SIZE;
#define MAX_DESCS 4 /* chunks of one multi-buffer packet */
#define BATCH 64
#define HDR_LEN (ETH_HLEN + sizeof(struct iphdr) + sizeof(struct udphdr))
#define PAYLOAD_MAGIC 0x4d52434bu /* "MRCK" */
#define MIN_FRAME (HDR_LEN + 12)

struct ref_opts {
	const char *mode;
	const char *ifname;
	unsigned int queue;
	unsigned int size;
	double seconds;
	unsigned int idle_ms;
	unsigned long iters, warmup;
	uint32_t xdp_flags;
	uint16_t port;
	uint8_t dst_mac[ETH_ALEN];
	struct in_addr src_ip, dst_ip;
};

struct ref_xsk {
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	int sg; /* bound with XDP_USE_SG */
};

static volatile sig_atomic_t ref_stop;

static void ref_on_signal(int sig)
{
	(void)sig;
	ref_stop = 1;
}

static double ref_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time of this (single-threaded) process, user and system, in seconds. */
static double ref_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void ref_die(const char *what, int err)
{
	fprintf(stderr, "afxdp-ref: %s: %s\n", what, strerror(err));
	exit(1);
}

static uint16_t ref_ip_checksum(const void *hdr, size_t len)
{
	const uint16_t *p = hdr;
	uint32_t sum = 0;

	for (; len > 1; len -= 2)
		sum += *p++;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void ref_own_mac(const char *ifname, uint8_t *mac)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		ref_die("socket", errno);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		ref_die("SIOCGIFHWADDR", errno);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	close(fd);
}

/*
 * One UMEM and one socket with the rings the mode needs; copy mode, need_wakeup.
 * Multi-buffer (XDP_USE_SG) for a sender of frames larger than a chunk, and
 * for every socket that receives (it cannot know the sizes), falling back
 * to a plain socket where the kernel refuses it.
 */
static void ref_open(struct ref_xsk *x, const struct ref_opts *o, int want_rx, int want_tx)
{
	struct xsk_umem_config ucfg = {
		.fill_size = NUM_FRAMES,
		.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.frame_size = ref_chunk,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = want_rx ? XSK_RING_CONS__DEFAULT_NUM_DESCS : 0,
		.tx_size = want_tx ? XSK_RING_PROD__DEFAULT_NUM_DESCS : 0,
		/* A pure sender needs no XDP program; a receiver takes libxdp's. */
		.libxdp_flags = want_rx ? 0 : XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = o->xdp_flags,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	size_t len = (size_t)NUM_FRAMES * ref_chunk;
	int err, sg = want_rx || o->size > ref_chunk;
	int huge = ref_chunk > XSK_UMEM__DEFAULT_FRAME_SIZE ? MAP_HUGETLB : 0;

	x->area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | huge, -1, 0);
	if (x->area == MAP_FAILED)
		ref_die(huge ? "mmap umem (huge pages: /proc/sys/vm/nr_hugepages)" : "mmap umem", errno);
	err = xsk_umem__create(&x->umem, x->area, len, &x->fill, &x->comp, &ucfg);
	if (err == -EINVAL && huge) {
		fprintf(stderr, "afxdp-ref: this kernel refuses a UMEM of %u-byte chunks on huge pages"
				" (XDP_UMEM_REG: EINVAL); chunks up to the page size only\n", ref_chunk);
		exit(1);
	}
	if (err)
		ref_die("xsk_umem__create", -err);
	for (;;) {
		scfg.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP | (sg ? XDP_USE_SG : 0);
		err = xsk_socket__create(&x->xsk, o->ifname, o->queue, x->umem, want_rx ? &x->rx : NULL,
					 want_tx ? &x->tx : NULL, &scfg);
		if (!err)
			break;
		if (!sg || o->size > ref_chunk || (err != -EINVAL && err != -EOPNOTSUPP))
			ref_die("xsk_socket__create", -err);
		sg = 0; /* a kernel without multi-buffer AF_XDP: frames of one chunk only */
	}
	x->sg = sg;
}

static void ref_close(struct ref_xsk *x)
{
	xsk_socket__delete(x->xsk);
	xsk_umem__delete(x->umem);
	munmap(x->area, (size_t)NUM_FRAMES * ref_chunk);
}

/* Chunks (descriptors) of one SIZE-byte frame. */
static unsigned int ref_descs(unsigned int size)
{
	return (size + ref_chunk - 1) / ref_chunk;
}

/*
 * Ethernet + IPv4 + UDP header and the payload magic into the first chunk of
 * every frame slot of chunks [first, first + count) (a slot: ref_descs(size)
 * chunks in a row), the rest of the frame zero.
 */
static void ref_build_frames(struct ref_xsk *x, const struct ref_opts *o, uint32_t first, uint32_t count)
{
	uint8_t src_mac[ETH_ALEN];
	uint8_t tmpl[HDR_LEN + 4] = { 0 };
	struct ethhdr *eth = (struct ethhdr *)tmpl;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	uint32_t magic = htonl(PAYLOAD_MAGIC);
	uint32_t nd = ref_descs(o->size);

	ref_own_mac(o->ifname, src_mac);
	memcpy(eth->h_dest, o->dst_mac, ETH_ALEN);
	memcpy(eth->h_source, src_mac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(o->size - ETH_HLEN);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = o->src_ip.s_addr;
	ip->daddr = o->dst_ip.s_addr;
	ip->check = ref_ip_checksum(ip, sizeof(*ip));
	udp->source = htons(o->port);
	udp->dest = htons(o->port);
	udp->len = htons(o->size - ETH_HLEN - sizeof(*ip));
	udp->check = 0; /* optional for IPv4 */
	memcpy(tmpl + HDR_LEN, &magic, 4);
	for (uint32_t i = 0; i + nd <= count; i += nd) {
		uint8_t *frame = (uint8_t *)x->area + (uint64_t)(first + i) * ref_chunk;

		memset(frame, 0, (size_t)nd * ref_chunk);
		memcpy(frame, tmpl, sizeof(tmpl));
	}
}

/*
 * Puts frame slot `slot` (ref_descs(size) chunks from chunk `first` + slot *
 * ref_descs(size)) with sequence number `seq` on the TX ring: one descriptor
 * per chunk, XDP_PKT_CONTD on all but the last. 0 if the ring has no room.
 */
static int ref_put_frame(struct ref_xsk *x, const struct ref_opts *o, uint32_t first, uint64_t slot, uint64_t seq)
{
	uint32_t nd = ref_descs(o->size), idx;
	uint64_t base = ((uint64_t)first + slot * nd) * ref_chunk;

	if (xsk_ring_prod__reserve(&x->tx, nd, &idx) != nd)
		return 0;
	memcpy((uint8_t *)x->area + base + HDR_LEN + 4, &seq, sizeof(seq));
	for (uint32_t k = 0; k < nd; k++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + k);
		uint32_t left = o->size - k * ref_chunk;

		d->addr = base + (uint64_t)k * ref_chunk;
		d->len = left < ref_chunk ? left : ref_chunk;
		d->options = k + 1 < nd ? XDP_PKT_CONTD : 0;
	}
	xsk_ring_prod__submit(&x->tx, nd);
	return 1;
}

static void ref_kick_tx(struct ref_xsk *x)
{
	if (sendto(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
	    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR)
		ref_die("sendto (tx kick)", errno);
}

/* Gives chunks [first, first + count) to the fill ring. */
static void ref_fill(struct ref_xsk *x, uint32_t first, uint32_t count)
{
	uint32_t idx, n = xsk_ring_prod__reserve(&x->fill, count, &idx);

	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&x->fill, idx + i) = (uint64_t)(first + i) * ref_chunk;
	xsk_ring_prod__submit(&x->fill, n);
}

/* An empty RX ring: wakes the kernel's receive path when the fill ring asks for it. */
static void ref_rx_kick(struct ref_xsk *x)
{
	if (xsk_ring_prod__needs_wakeup(&x->fill))
		recvfrom(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

/*
 * After a poll that found the RX ring empty (rx, pong): kicks, and every 1024
 * empty polls says whether to stop: idle_ms after the last frame, or
 * MAX_SECONDS after `begin`.
 */
static int ref_rx_idle(struct ref_xsk *x, const struct ref_opts *o, uint32_t *empty, uint64_t frames,
		       double last, double begin)
{
	double now;

	ref_rx_kick(x);
	if (++*empty % 1024)
		return 0;
	now = ref_now();
	return (frames && now - last > o->idle_ms / 1e3) || (o->seconds > 0 && now - begin > o->seconds);
}

/* Takes the TX completions; returns how many descriptors completed. */
static uint32_t ref_reap(struct ref_xsk *x)
{
	uint32_t idx, n = xsk_ring_cons__peek(&x->comp, 4 * BATCH, &idx);

	if (n)
		xsk_ring_cons__release(&x->comp, n);
	return n;
}

static int ref_tx(const struct ref_opts *o)
{
	struct ref_xsk x = { 0 };
	uint32_t nd = ref_descs(o->size);
	uint64_t slots = NUM_FRAMES / nd, next = 0, completed = 0, outstanding = 0;
	double start, end, cpu0, cpu1, drain_deadline = 0;
	int stopping = 0;

	ref_open(&x, o, 0, 1);
	ref_build_frames(&x, o, 0, NUM_FRAMES);
	start = ref_now();
	cpu0 = ref_cpu();
	for (;;) {
		uint32_t n = ref_reap(&x);

		outstanding -= n;
		completed += n;
		if (!stopping && (ref_stop || ref_now() - start >= o->seconds)) {
			stopping = 1;
			drain_deadline = ref_now() + 1.0;
		}
		if (stopping) {
			if (!outstanding || ref_now() > drain_deadline)
				break;
			ref_kick_tx(&x);
			continue;
		}
		for (uint32_t i = 0; i < BATCH && outstanding + nd <= slots * nd; i++) {
			if (!ref_put_frame(&x, o, 0, next % slots, next))
				break;
			next++;
			outstanding += nd;
		}
		if (xsk_ring_prod__needs_wakeup(&x.tx))
			ref_kick_tx(&x);
	}
	end = ref_now();
	cpu1 = ref_cpu();
	ref_close(&x);
	completed /= nd; /* frames */
	printf("tx: frames=%llu bytes=%llu seconds=%.3f mpps=%.3f gbps=%.3f size=%u descs=%u cpu=%.3f ns_per_frame=%.0f\n",
	       (unsigned long long)completed, (unsigned long long)completed * o->size, end - start,
	       completed / (end - start) / 1e6, completed * o->size * 8.0 / (end - start) / 1e9,
	       o->size, nd, cpu1 - cpu0, completed ? (cpu1 - cpu0) * 1e9 / completed : 0);
	return completed ? 0 : 1;
}

/* 1 if the frame is one of ours, with its sequence number in *seq. */
static int ref_check(const uint8_t *f, uint32_t len, uint16_t port, uint64_t *seq)
{
	const struct ethhdr *eth = (const void *)f;
	const struct iphdr *ip = (const void *)(eth + 1);
	const struct udphdr *udp = (const void *)(ip + 1);
	uint32_t magic;

	if (len < MIN_FRAME || eth->h_proto != htons(ETH_P_IP) || ip->protocol != IPPROTO_UDP ||
	    udp->dest != htons(port))
		return 0;
	memcpy(&magic, f + HDR_LEN, 4);
	if (magic != htonl(PAYLOAD_MAGIC))
		return 0;
	memcpy(seq, f + HDR_LEN + 4, sizeof(*seq));
	return 1;
}

/*
 * A received packet, reassembled from its descriptors: `ours` and `seq` from
 * its first one, `len` summed over all; `done` once its last one is seen.
 */
struct ref_pkt {
	int open, ours, done;
	uint32_t len, descs;
	uint64_t seq;
};

static void ref_pkt_add(struct ref_pkt *p, const struct ref_xsk *x, const struct xdp_desc *d, uint16_t port)
{
	if (!p->open) {
		p->open = 1;
		p->len = 0;
		p->descs = 0;
		p->ours = ref_check(xsk_umem__get_data(x->area, d->addr), d->len, port, &p->seq);
	}
	p->len += d->len;
	p->descs++;
	p->done = !(d->options & XDP_PKT_CONTD);
	if (p->done)
		p->open = 0;
}

static int ref_rx(const struct ref_opts *o)
{
	struct ref_xsk x = { 0 };
	struct ref_pkt pkt = { 0 };
	uint64_t frames = 0, bytes = 0, bad = 0, lost = 0, reordered = 0, expect = 0, multi = 0;
	double begin = ref_now(), first = 0, last = 0;
	uint32_t idx, n, empty = 0;

	ref_open(&x, o, 1, 0);
	ref_fill(&x, 0, NUM_FRAMES);
	printf("rx: ready\n");
	fflush(stdout);

	while (!ref_stop) {
		uint32_t fidx;

		n = xsk_ring_cons__peek(&x.rx, BATCH, &idx);
		if (!n) {
			if (ref_rx_idle(&x, o, &empty, frames, last, begin))
				break;
			continue;
		}
		empty = 0;
		last = ref_now();
		if (!frames)
			first = last;
		while (xsk_ring_prod__reserve(&x.fill, n, &fidx) != n)
			; /* the fill ring holds every frame: cannot stay full */
		for (uint32_t i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x.rx, idx + i);

			ref_pkt_add(&pkt, &x, d, o->port);
			if (pkt.done && !pkt.ours) {
				bad++;
			} else if (pkt.done) {
				frames++;
				bytes += pkt.len;
				multi += pkt.descs > 1;
				if (pkt.seq > expect)
					lost += pkt.seq - expect;
				if (pkt.seq < expect)
					reordered++;
				else
					expect = pkt.seq + 1;
			}
			*xsk_ring_prod__fill_addr(&x.fill, fidx + i) = xsk_umem__extract_addr(d->addr);
		}
		xsk_ring_prod__submit(&x.fill, n);
		xsk_ring_cons__release(&x.rx, n);
	}
	ref_close(&x);
	double secs = last > first ? last - first : 1e-9;

	printf("rx: frames=%llu bytes=%llu seconds=%.3f mpps=%.3f gbps=%.3f bad=%llu lost=%llu reordered=%llu multibuffer=%llu\n",
	       (unsigned long long)frames, (unsigned long long)bytes, secs, frames / secs / 1e6,
	       bytes * 8.0 / secs / 1e9, (unsigned long long)bad, (unsigned long long)lost,
	       (unsigned long long)reordered, (unsigned long long)multi);
	return frames ? 0 : 1;
}

static int ref_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Ping: chunks [0, NUM_FRAMES/2) receive, the upper half sends. One frame at a
 * time; each waits (busy-polling the RX ring) for its own echo, at most 1 s.
 */
static int ref_ping(const struct ref_opts *o)
{
	struct ref_xsk x = { 0 };
	struct ref_pkt pkt = { 0 };
	uint32_t half = NUM_FRAMES / 2, nd = ref_descs(o->size), slots = half / nd;
	uint64_t total = o->warmup + o->iters, kept = 0, lost = 0;
	double *rtt = calloc(o->iters ? o->iters : 1, sizeof(*rtt)), sum = 0;

	if (!rtt)
		ref_die("calloc", ENOMEM);
	ref_open(&x, o, 1, 1);
	ref_fill(&x, 0, half);
	ref_build_frames(&x, o, half, half);
	for (uint64_t i = 0; i < total && !ref_stop; i++) {
		double t0, t1, deadline;
		int got = 0;

		ref_reap(&x);
		while (!ref_put_frame(&x, o, half, i % slots, i))
			ref_reap(&x);
		t0 = ref_now();
		deadline = t0 + 1.0;
		ref_kick_tx(&x);
		while (!got && !ref_stop) {
			uint32_t idx, fidx, n = xsk_ring_cons__peek(&x.rx, BATCH, &idx);

			if (!n) {
				ref_rx_kick(&x);
				if (ref_now() > deadline)
					break;
				continue;
			}
			while (xsk_ring_prod__reserve(&x.fill, n, &fidx) != n)
				;
			for (uint32_t k = 0; k < n; k++) {
				const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x.rx, idx + k);

				ref_pkt_add(&pkt, &x, d, o->port);
				if (pkt.done && pkt.ours && pkt.seq == i)
					got = 1;
				*xsk_ring_prod__fill_addr(&x.fill, fidx + k) = xsk_umem__extract_addr(d->addr);
			}
			xsk_ring_prod__submit(&x.fill, n);
			xsk_ring_cons__release(&x.rx, n);
		}
		t1 = ref_now();
		if (!got)
			lost++;
		else if (i >= o->warmup) {
			rtt[kept++] = (t1 - t0) * 1e6;
			sum += (t1 - t0) * 1e6;
		}
	}
	ref_close(&x);
	qsort(rtt, kept, sizeof(*rtt), ref_cmp_double);
	printf("ping: iters=%llu size=%u rtt_p50_us=%.2f rtt_avg_us=%.2f rtt_p99_us=%.2f rtt_min_us=%.2f lost=%llu\n",
	       (unsigned long long)kept, o->size, kept ? rtt[kept / 2] : 0, kept ? sum / kept : 0,
	       kept ? rtt[kept * 99 / 100] : 0, kept ? rtt[0] : 0, (unsigned long long)lost);
	free(rtt);
	return kept ? 0 : 1;
}

/* Pong: echoes every frame of ours, each descriptor copied into a TX chunk of the upper half. */
static int ref_pong(const struct ref_opts *o)
{
	struct ref_xsk x = { 0 };
	struct ref_pkt pkt = { 0 };
	uint32_t half = NUM_FRAMES / 2, empty = 0;
	uint64_t next = 0, outstanding = 0, frames = 0, bad = 0;
	double begin = ref_now(), last = 0;
	int skip = 0;

	ref_open(&x, o, 1, 1);
	ref_fill(&x, 0, half);
	printf("pong: ready\n");
	fflush(stdout);
	while (!ref_stop) {
		uint32_t idx, fidx, n;

		outstanding -= ref_reap(&x);
		n = xsk_ring_cons__peek(&x.rx, BATCH, &idx);
		if (!n) {
			if (ref_rx_idle(&x, o, &empty, frames, last, begin))
				break;
			continue;
		}
		empty = 0;
		last = ref_now();
		while (xsk_ring_prod__reserve(&x.fill, n, &fidx) != n)
			;
		for (uint32_t k = 0; k < n; k++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x.rx, idx + k);
			int first = !pkt.open;
			uint32_t tidx;

			ref_pkt_add(&pkt, &x, d, o->port);
			if (first)
				skip = !pkt.ours;
			if (!skip) {
				uint64_t to = (uint64_t)(half + next++ % half) * ref_chunk;
				uint8_t *f = (uint8_t *)x.area + to;

				while (outstanding >= half || xsk_ring_prod__reserve(&x.tx, 1, &tidx) != 1) {
					outstanding -= ref_reap(&x);
					ref_kick_tx(&x);
				}
				memcpy(f, xsk_umem__get_data(x.area, d->addr), d->len);
				if (first) {
					struct ethhdr *eth = (struct ethhdr *)f;
					struct iphdr *ip = (struct iphdr *)(eth + 1);
					struct udphdr *udp = (struct udphdr *)(ip + 1);
					uint8_t mac[ETH_ALEN];
					uint32_t a = ip->saddr;
					uint16_t p = udp->source;

					memcpy(mac, eth->h_dest, ETH_ALEN);
					memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
					memcpy(eth->h_source, mac, ETH_ALEN);
					ip->saddr = ip->daddr; /* the checksum stays right: a swap */
					ip->daddr = a;
					udp->source = udp->dest;
					udp->dest = p;
				}
				struct xdp_desc *t = xsk_ring_prod__tx_desc(&x.tx, tidx);

				t->addr = to;
				t->len = d->len;
				t->options = d->options & XDP_PKT_CONTD;
				xsk_ring_prod__submit(&x.tx, 1);
				outstanding++;
			}
			if (pkt.done)
				pkt.ours ? frames++ : bad++;
			*xsk_ring_prod__fill_addr(&x.fill, fidx + k) = xsk_umem__extract_addr(d->addr);
		}
		xsk_ring_prod__submit(&x.fill, n);
		xsk_ring_cons__release(&x.rx, n);
		ref_kick_tx(&x);
	}
	ref_close(&x);
	printf("pong: frames=%llu bad=%llu\n", (unsigned long long)frames, (unsigned long long)bad);
	return 0;
}

static void ref_usage(void)
{
	fprintf(stderr,
		"usage: afxdp-ref tx -i IF -s SIZE -d SECONDS --dst-mac MAC --src-ip A --dst-ip B\n"
		"                    [--skb|--native] [-q QUEUE] [--port PORT]\n"
		"       afxdp-ref rx -i IF [-d MAX_SECONDS] [--skb|--native] [-q QUEUE]\n"
		"                    [--port PORT] [--idle-ms MS]\n"
		"       afxdp-ref ping -i IF -s SIZE -n ITERS --dst-mac MAC --src-ip A --dst-ip B\n"
		"                    [--warmup N] [--skb|--native] [-q QUEUE] [--port PORT]\n"
		"       afxdp-ref pong -i IF [-d MAX_SECONDS] [--skb|--native] [-q QUEUE]\n"
		"                    [--port PORT] [--idle-ms MS]\n"
		"       every mode: [--chunk BYTES] (UMEM chunk, a power of 2 from 4096 to 65536;\n"
		"                    over 4096 the UMEM is backed by 2 MiB huge pages)\n"
		"SIZE: frame bytes without FCS, %u to %u (over %u: a multi-buffer packet)\n",
		(unsigned int)MIN_FRAME, MAX_DESCS * ref_chunk, ref_chunk);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "skb", no_argument, NULL, 'S' },	   { "native", no_argument, NULL, 'N' },
		{ "dst-mac", required_argument, NULL, 'm' }, { "src-ip", required_argument, NULL, 'a' },
		{ "dst-ip", required_argument, NULL, 'b' },  { "port", required_argument, NULL, 'p' },
		{ "idle-ms", required_argument, NULL, 'I' }, { "warmup", required_argument, NULL, 'w' },
		{ "chunk", required_argument, NULL, 'C' },   { NULL, 0, NULL, 0 },
	};
	struct ref_opts o = { .size = 64, .seconds = 0, .idle_ms = 500, .port = 4791, .iters = 10000,
			      .warmup = 1000, .xdp_flags = XDP_FLAGS_SKB_MODE };
	int c, have_mac = 0, sender;

	if (argc < 2)
		ref_usage();
	o.mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "i:q:s:d:n:", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o.ifname = optarg; break;
		case 'q': o.queue = (unsigned int)atoi(optarg); break;
		case 's': o.size = (unsigned int)atoi(optarg); break;
		case 'd': o.seconds = atof(optarg); break;
		case 'n': o.iters = strtoul(optarg, NULL, 10); break;
		case 'w': o.warmup = strtoul(optarg, NULL, 10); break;
		case 'S': o.xdp_flags = XDP_FLAGS_SKB_MODE; break;
		case 'N': o.xdp_flags = XDP_FLAGS_DRV_MODE; break;
		case 'p': o.port = (uint16_t)atoi(optarg); break;
		case 'I': o.idle_ms = (unsigned int)atoi(optarg); break;
		case 'C':
			ref_chunk = (unsigned int)atoi(optarg);
			if (ref_chunk < 4096 || ref_chunk > 65536 || (ref_chunk & (ref_chunk - 1)))
				ref_usage();
			break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &o.src_ip) != 1)
				ref_usage();
			break;
		case 'b':
			if (inet_pton(AF_INET, optarg, &o.dst_ip) != 1)
				ref_usage();
			break;
		case 'm':
			have_mac = sscanf(optarg, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &o.dst_mac[0],
					  &o.dst_mac[1], &o.dst_mac[2], &o.dst_mac[3], &o.dst_mac[4],
					  &o.dst_mac[5]) == 6;
			if (!have_mac)
				ref_usage();
			break;
		default: ref_usage();
		}
	}
	if (!o.ifname)
		ref_usage();
	signal(SIGINT, ref_on_signal);
	signal(SIGTERM, ref_on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	sender = !strcmp(o.mode, "tx") || !strcmp(o.mode, "ping");
	if (sender && (!have_mac || !o.src_ip.s_addr || !o.dst_ip.s_addr || o.size < MIN_FRAME ||
		       o.size > MAX_DESCS * ref_chunk))
		ref_usage();
	if (!strcmp(o.mode, "tx")) {
		if (o.seconds <= 0)
			ref_usage();
		return ref_tx(&o);
	}
	if (!strcmp(o.mode, "ping")) {
		if (!o.iters)
			ref_usage();
		return ref_ping(&o);
	}
	if (!strcmp(o.mode, "rx"))
		return ref_rx(&o);
	if (!strcmp(o.mode, "pong"))
		return ref_pong(&o);
	ref_usage();
}
