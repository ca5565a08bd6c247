// SPDX-License-Identifier: GPL-2.0
/*
 * drop.bpf.c - a tc (clsact) program that drops a random share of MetaRoCE's
 * UDP packets, to make a veth link lossy. This kernel has no netem, so loss
 * is made here.
 *
 * Only UDP packets (IPv4, or IPv6 with UDP as the first next header) whose
 * source or destination port is MRCE_UDP_PORT are
 * candidates; everything else (ARP, the apps' TCP exchange, ...) passes, so a
 * test's out-of-band connection setup never suffers. The share is fixed at
 * build time in parts per million (DROP_PPM): the Makefile builds one object
 * per rate, e.g. drop_1pct.o (10000 ppm) and drop_5pct.o (50000 ppm).
 *
 * Attach:  tc qdisc add dev X clsact
 *          tc filter add dev X egress bpf da obj drop_1pct.o sec tc
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef DROP_PPM
#error "build with -DDROP_PPM=<parts per million to drop>"
#endif
#ifndef MRCE_UDP_PORT
#define MRCE_UDP_PORT 4793
#endif

#define PPM 1000000u

static __always_inline int is_mrce_udp(struct __sk_buff *skb)
{
	struct iphdr ip;
	struct udphdr udp;
	__u32 ihl_bytes;

	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)) < 0 ||
		    ip6.nexthdr != IPPROTO_UDP ||
		    bpf_skb_load_bytes(skb, ETH_HLEN + sizeof(ip6), &udp,
				       sizeof(udp)) < 0)
			return 0;
		return udp.source == bpf_htons(MRCE_UDP_PORT) ||
		       udp.dest == bpf_htons(MRCE_UDP_PORT);
	}
	if (skb->protocol != bpf_htons(ETH_P_IP))
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return 0;
	if (ip.protocol != IPPROTO_UDP)
		return 0;
	/* Only the first fragment carries the UDP header. */
	if (ip.frag_off & bpf_htons(0x1fff))
		return 0;
	ihl_bytes = (__u32)ip.ihl * 4;
	if (ihl_bytes < sizeof(ip) || ihl_bytes > 60)
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + ihl_bytes, &udp, sizeof(udp)) < 0)
		return 0;
	return udp.source == bpf_htons(MRCE_UDP_PORT) ||
	       udp.dest == bpf_htons(MRCE_UDP_PORT);
}

SEC("tc")
int mrce_drop(struct __sk_buff *skb)
{
	if (!is_mrce_udp(skb))
		return TC_ACT_OK;
	if (bpf_get_prandom_u32() % PPM < DROP_PPM)
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
