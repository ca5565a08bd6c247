// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MetaRoCE's XDP steering program: IPv4 UDP frames to the daemon's data port or its entropy
 * ports go to the AF_XDP socket of the queue they arrived on; everything else (ARP, the
 * connection manager's TCP, ssh, other UDP) passes to the kernel's stack untouched.
 * MetaRoCE v1 is IPv4-only (peers are addressed by IPv4-mapped GIDs): IPv6 frames, to any port,
 * pass to the kernel untouched.
 *
 * The port range comes from mrce_cfg[0], written by the daemon before it attaches the program.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct mrce_cfg {
	__u16 port_lo; /* host order, inclusive */
	__u16 port_hi; /* host order, inclusive */
};

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
	struct udphdr *udp;
	struct mrce_cfg *cfg;
	__u32 key = 0;
	__u16 dport;

	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
		return XDP_PASS;
	/* fragments after the first carry no UDP header: leave them to the kernel */
	if (ip->frag_off & bpf_htons(0x1fff))
		return XDP_PASS;
	udp = (void *)ip + ip->ihl * 4;
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	cfg = bpf_map_lookup_elem(&mrce_cfg, &key);
	if (!cfg)
		return XDP_PASS;
	dport = bpf_ntohs(udp->dest);
	if (dport < cfg->port_lo || dport > cfg->port_hi)
		return XDP_PASS;
	/* no socket on this queue: the kernel gets it (XDP_PASS as the fallback action) */
	return bpf_redirect_map(&mrce_xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
