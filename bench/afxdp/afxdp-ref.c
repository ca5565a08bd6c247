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
 *
 * Both print one line "tx: ..." / "rx: ..." of key=value pairs; rates are over
 * the active interval, Gbit/s counts the frame bytes handed to the device; the
 * sender adds its CPU time over that interval (user + system, without the
 * softirq time the kernel accounts apart) and that time per frame.
 * The receiver prints "rx: ready" once its socket is bound.
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

#define NUM_FRAMES 4096
#define FRAME_SIZE XSK_UMEM__DEFAULT_FRAME_SIZE
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

/* One UMEM and one socket; rx or tx ring per mode. Copy mode, need_wakeup. */
static void ref_open(struct ref_xsk *x, const struct ref_opts *o, int want_rx)
{
	struct xsk_umem_config ucfg = {
		.fill_size = NUM_FRAMES,
		.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = want_rx ? XSK_RING_CONS__DEFAULT_NUM_DESCS : 0,
		.tx_size = want_rx ? 0 : XSK_RING_PROD__DEFAULT_NUM_DESCS,
		/* The sender needs no XDP program; the receiver takes libxdp's. */
		.libxdp_flags = want_rx ? 0 : XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = o->xdp_flags,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	size_t len = (size_t)NUM_FRAMES * FRAME_SIZE;
	int err;

	x->area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->area == MAP_FAILED)
		ref_die("mmap umem", errno);
	err = xsk_umem__create(&x->umem, x->area, len, &x->fill, &x->comp, &ucfg);
	if (err)
		ref_die("xsk_umem__create", -err);
	err = xsk_socket__create(&x->xsk, o->ifname, o->queue, x->umem, want_rx ? &x->rx : NULL,
				 want_rx ? NULL : &x->tx, &scfg);
	if (err)
		ref_die("xsk_socket__create", -err);
}

static void ref_close(struct ref_xsk *x)
{
	xsk_socket__delete(x->xsk);
	xsk_umem__delete(x->umem);
	munmap(x->area, (size_t)NUM_FRAMES * FRAME_SIZE);
}

/* Ethernet + IPv4 + UDP header and the payload magic, into every frame. */
static void ref_build_frames(struct ref_xsk *x, const struct ref_opts *o)
{
	uint8_t src_mac[ETH_ALEN];
	uint8_t tmpl[HDR_LEN + 4] = { 0 };
	struct ethhdr *eth = (struct ethhdr *)tmpl;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	uint32_t magic = htonl(PAYLOAD_MAGIC);

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
	for (uint32_t i = 0; i < NUM_FRAMES; i++) {
		uint8_t *frame = (uint8_t *)x->area + (uint64_t)i * FRAME_SIZE;

		memset(frame, 0, o->size);
		memcpy(frame, tmpl, sizeof(tmpl));
	}
}

static void ref_kick_tx(struct ref_xsk *x)
{
	if (sendto(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
	    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR)
		ref_die("sendto (tx kick)", errno);
}

static int ref_tx(const struct ref_opts *o)
{
	struct ref_xsk x = { 0 };
	uint64_t next = 0, completed = 0, outstanding = 0;
	double start, end, cpu0, cpu1, drain_deadline = 0;
	int stopping = 0;

	ref_open(&x, o, 0);
	ref_build_frames(&x, o);
	start = ref_now();
	cpu0 = ref_cpu();
	for (;;) {
		uint32_t idx, n;

		n = xsk_ring_cons__peek(&x.comp, 4 * BATCH, &idx);
		if (n) {
			xsk_ring_cons__release(&x.comp, n);
			outstanding -= n;
			completed += n;
		}
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
		n = NUM_FRAMES - outstanding < BATCH ? NUM_FRAMES - outstanding : BATCH;
		n = xsk_ring_prod__reserve(&x.tx, n, &idx);
		for (uint32_t i = 0; i < n; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&x.tx, idx + i);
			uint64_t addr = (next % NUM_FRAMES) * FRAME_SIZE;

			memcpy((uint8_t *)x.area + addr + HDR_LEN + 4, &next, sizeof(next));
			d->addr = addr;
			d->len = o->size;
			next++;
		}
		xsk_ring_prod__submit(&x.tx, n);
		outstanding += n;
		if (xsk_ring_prod__needs_wakeup(&x.tx))
			ref_kick_tx(&x);
	}
	end = ref_now();
	cpu1 = ref_cpu();
	ref_close(&x);
	printf("tx: frames=%llu bytes=%llu seconds=%.3f mpps=%.3f gbps=%.3f size=%u cpu=%.3f ns_per_frame=%.0f\n",
	       (unsigned long long)completed, (unsigned long long)completed * o->size, end - start,
	       completed / (end - start) / 1e6, completed * o->size * 8.0 / (end - start) / 1e9,
	       o->size, cpu1 - cpu0, completed ? (cpu1 - cpu0) * 1e9 / completed : 0);
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

static int ref_rx(const struct ref_opts *o)
{
	struct ref_xsk x = { 0 };
	uint64_t frames = 0, bytes = 0, bad = 0, lost = 0, reordered = 0, expect = 0;
	double begin = ref_now(), first = 0, last = 0;
	uint32_t idx, n, empty = 0;

	ref_open(&x, o, 1);
	n = xsk_ring_prod__reserve(&x.fill, NUM_FRAMES, &idx);
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&x.fill, idx + i) = (uint64_t)i * FRAME_SIZE;
	xsk_ring_prod__submit(&x.fill, n);
	printf("rx: ready\n");
	fflush(stdout);

	while (!ref_stop) {
		uint32_t fidx;

		n = xsk_ring_cons__peek(&x.rx, BATCH, &idx);
		if (!n) {
			if (xsk_ring_prod__needs_wakeup(&x.fill))
				recvfrom(xsk_socket__fd(x.xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
			if (++empty % 1024 == 0) {
				double now = ref_now();

				if ((frames && now - last > o->idle_ms / 1e3) ||
				    (o->seconds > 0 && now - begin > o->seconds))
					break;
			}
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
			uint64_t seq;

			if (!ref_check(xsk_umem__get_data(x.area, d->addr), d->len, o->port, &seq)) {
				bad++;
			} else {
				frames++;
				bytes += d->len;
				if (seq > expect)
					lost += seq - expect;
				if (seq < expect)
					reordered++;
				else
					expect = seq + 1;
			}
			*xsk_ring_prod__fill_addr(&x.fill, fidx + i) = xsk_umem__extract_addr(d->addr);
		}
		xsk_ring_prod__submit(&x.fill, n);
		xsk_ring_cons__release(&x.rx, n);
	}
	ref_close(&x);
	double secs = last > first ? last - first : 1e-9;

	printf("rx: frames=%llu bytes=%llu seconds=%.3f mpps=%.3f gbps=%.3f bad=%llu lost=%llu reordered=%llu\n",
	       (unsigned long long)frames, (unsigned long long)bytes, secs, frames / secs / 1e6,
	       bytes * 8.0 / secs / 1e9, (unsigned long long)bad, (unsigned long long)lost,
	       (unsigned long long)reordered);
	return frames ? 0 : 1;
}

static void ref_usage(void)
{
	fprintf(stderr,
		"usage: afxdp-ref tx -i IF -s SIZE -d SECONDS --dst-mac MAC --src-ip A --dst-ip B\n"
		"                    [--skb|--native] [-q QUEUE] [--port PORT]\n"
		"       afxdp-ref rx -i IF [-d MAX_SECONDS] [--skb|--native] [-q QUEUE]\n"
		"                    [--port PORT] [--idle-ms MS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "skb", no_argument, NULL, 'S' },	   { "native", no_argument, NULL, 'N' },
		{ "dst-mac", required_argument, NULL, 'm' }, { "src-ip", required_argument, NULL, 'a' },
		{ "dst-ip", required_argument, NULL, 'b' },  { "port", required_argument, NULL, 'p' },
		{ "idle-ms", required_argument, NULL, 'I' }, { NULL, 0, NULL, 0 },
	};
	struct ref_opts o = { .size = 64, .seconds = 0, .idle_ms = 500, .port = 4791,
			      .xdp_flags = XDP_FLAGS_SKB_MODE };
	int c, have_mac = 0;

	if (argc < 2)
		ref_usage();
	o.mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "i:q:s:d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o.ifname = optarg; break;
		case 'q': o.queue = (unsigned int)atoi(optarg); break;
		case 's': o.size = (unsigned int)atoi(optarg); break;
		case 'd': o.seconds = atof(optarg); break;
		case 'S': o.xdp_flags = XDP_FLAGS_SKB_MODE; break;
		case 'N': o.xdp_flags = XDP_FLAGS_DRV_MODE; break;
		case 'p': o.port = (uint16_t)atoi(optarg); break;
		case 'I': o.idle_ms = (unsigned int)atoi(optarg); break;
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
	if (!strcmp(o.mode, "tx")) {
		if (!have_mac || !o.src_ip.s_addr || !o.dst_ip.s_addr || o.seconds <= 0 ||
		    o.size < MIN_FRAME || o.size > FRAME_SIZE)
			ref_usage();
		return ref_tx(&o);
	}
	if (!strcmp(o.mode, "rx"))
		return ref_rx(&o);
	ref_usage();
}
