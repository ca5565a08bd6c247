// SPDX-License-Identifier: GPL-2.0
/*
 * drop.bpf.c - the fabric benchmark's loss and blackhole: a tc (clsact) program that drops a
 * random share of the measured traffic on a spine link. This kernel has no netem.
 *
 * Candidates are IPv4 packets of the traffic under test only: MetaRoCE's UDP (source or
 * destination port MRCE_UDP_PORT, whatever the entropy source port) and iperf3's TCP (port
 * IPERF_PORT, its control connection included). Everything else passes: ARP, and the daemons'
 * connection manager (TCP 4792), whose loss would fail QPs for a reason the benchmark does not
 * measure. The share is fixed at build time in parts per million (DROP_PPM); run-fabric builds
 * one object per share it needs (1000000 = blackhole).
 *
 * Attach:  tc qdisc add dev X clsact
 *          tc filter add dev X egress pref 1 bpf da obj drop.o sec tc
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef DROP_PPM
#error "build with -DDROP_PPM=<parts per million to drop>"
#endif
#ifndef MRCE_UDP_PORT
#define MRCE_UDP_PORT 4793
#endif
#ifndef IPERF_PORT
#define IPERF_PORT 5201
#endif

#define PPM 1000000u

static __always_inline int measured(struct __sk_buff *skb)
{
	struct iphdr ip;
	__be16 ports[2]; /* source, destination: the first 4 bytes of UDP and TCP alike */
	__u32 ihl_bytes;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return 0;
	if (ip.protocol != IPPROTO_UDP && ip.protocol != IPPROTO_TCP)
		return 0;
	if (ip.frag_off & bpf_htons(0x1fff)) /* only the first fragment has the ports */
		return 0;
	ihl_bytes = (__u32)ip.ihl * 4;
	if (ihl_bytes < sizeof(ip) || ihl_bytes > 60)
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + ihl_bytes, ports, sizeof(ports)) < 0)
		return 0;
	if (ip.protocol == IPPROTO_UDP)
		return ports[0] == bpf_htons(MRCE_UDP_PORT) || ports[1] == bpf_htons(MRCE_UDP_PORT);
	return ports[0] == bpf_htons(IPERF_PORT) || ports[1] == bpf_htons(IPERF_PORT);
}

SEC("tc")
int fabric_drop(struct __sk_buff *skb)
{
	if (!measured(skb))
		return TC_ACT_OK;
	if (DROP_PPM >= PPM || bpf_get_prandom_u32() % PPM < DROP_PPM)
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
