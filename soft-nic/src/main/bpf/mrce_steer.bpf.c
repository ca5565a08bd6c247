// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MetaRoCE's XDP steering program: UDP frames of the served family (IPv4 or IPv6) to the
 * daemon's data port or its entropy ports go to the AF_XDP socket of the queue they arrived on;
 * everything else (ARP, ICMPv6 and neighbour discovery, the connection manager's TCP, ssh, other
 * UDP, the other family) passes to the kernel's stack untouched. An IPv6 frame is steered only
 * when UDP is its first next header (MetaRoCE never sends extension headers); one with extension
 * headers, or a fragment, passes to the kernel.
 *
 * The port range and the families come from mrce_cfg[0], written by the daemon before it
 * attaches the program.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct mrce_cfg {
	__u16 port_lo; /* host order, inclusive */
	__u16 port_hi; /* host order, inclusive */
	__u32 families; /* MRCE_STEER_IPV4 | MRCE_STEER_IPV6 */
};

#define MRCE_STEER_IPV4 1
#define MRCE_STEER_IPV6 2

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} mrce_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mrce_cfg);
} mrce_cfg SEC(".maps");

/*
 * "xdp.frags": the program handles multi-buffer frames (libbpf loads it with
 * BPF_F_XDP_HAS_FRAGS). It reads only the headers, which lie in the first buffer. Without it, veth
 * refuses a driver-mode program above MTU 3506, and generic XDP linearizes (reallocates and
 * copies) every frame larger than a page before running the program.
 */
SEC("xdp.frags")
int mrce_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct ipv6hdr *ip6;
	struct udphdr *udp;
	struct mrce_cfg *cfg;
	__u32 key = 0;
	__u16 dport;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	cfg = bpf_map_lookup_elem(&mrce_cfg, &key);
	if (!cfg)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		if (!(cfg->families & MRCE_STEER_IPV4))
			return XDP_PASS;
		ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
			return XDP_PASS;
		/* fragments after the first carry no UDP header: leave them to the kernel */
		if (ip->frag_off & bpf_htons(0x1fff))
			return XDP_PASS;
		udp = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		if (!(cfg->families & MRCE_STEER_IPV6))
			return XDP_PASS;
		ip6 = (void *)(eth + 1);
		/* ICMPv6 (neighbour discovery), extension headers, fragments: the kernel's */
		if ((void *)(ip6 + 1) > data_end || ip6->version != 6 || ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		udp = (void *)(ip6 + 1);
	} else {
		return XDP_PASS;
	}
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	dport = bpf_ntohs(udp->dest);
	if (dport < cfg->port_lo || dport > cfg->port_hi)
		return XDP_PASS;
	/* no socket on this queue: the kernel gets it (XDP_PASS as the fallback action) */
	return bpf_redirect_map(&mrce_xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
