/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mrce_abi.h - the ABI between libmetaroce.so (the verbs provider) and
 * mrce-nicd (the soft-NIC daemon): shared-memory rings and the local control
 * protocol on the Unix socket.
 *
 * The Java side mirrors every layout here in a *Descriptor class; the test
 * MrceAbiAgreementTest runs the `mrce_abi_offsets` program (built from
 * abi_offsets.c) and proves that both sides agree on every offset and size.
 *
 * Rules: both ends run on one host, so every integer is little-endian and
 * naturally aligned; every struct has a fixed size; a version is checked on
 * attach (ring magic/version) and on connect (HELLO abi_version).
 */
#ifndef MRCE_ABI_H
#define MRCE_ABI_H

#include <stdint.h>

#define MRCE_ABI_VERSION 3

/* ------------------------------------------------------------------------
 * Rings: single producer / single consumer, fixed-size slots, free-running
 * 32-bit indices (slot = index & (slot_count - 1)), each index on its own
 * cache line. The producer writes a slot, then store-releases `producer`;
 * the consumer load-acquires `producer`, reads the slot, then store-releases
 * `consumer`.
 *
 *   SQ, RQ: producer = provider (post_send/post_recv), consumer = daemon
 *   CQ:     producer = daemon,                         consumer = provider
 *
 *  0               4        6      8           12          16
 *  +---------------+--------+------+-----------+-----------+---- ... --+
 *  | magic         |version | kind | slot_size | slot_count| pad       |
 *  +---------------+--------+------+-----------+-----------+---- ... --+
 *  64  producer (u32) .......................................  (line 1)
 *  128 consumer (u32) .......................................  (line 2)
 *  192 flags (u32) | arm (u32) | notify_count (u32) | notify_seq (u32)  (line 3)
 *  256 slot[0], slot[1], ... slot[slot_count - 1]
 *
 * flags (SQ/RQ): MRCE_RING_NEED_WAKEUP is set by the daemon before it goes
 *   to sleep, and on the rings of a QP it stops looking at (an idle QP).
 *   After publishing `producer` the provider issues a full fence, and if
 *   NEED_WAKEUP is set it rings the doorbell: with a doorbell page (below)
 *   it sets the QP's bit there, fences, and writes 1 to the context's
 *   doorbell eventfd (from HELLO) only if the page's `sleeping` word is
 *   non-zero; without a page it writes the eventfd. The daemon sets the
 *   flag, fences, re-checks the ring, then stops looking at it or sleeps;
 *   it clears the flag when it looks again.
 *
 * Doorbell page (HELLO with MRCE_HELLO_DOORBELL_PAGE: a third fd, a memfd of
 * MRCE_DB_PAGE_SIZE bytes the provider maps shared): which QPs rang, so that
 * the daemon finds them without reading every idle QP's rings.
 *   0   sleeping u32: non-zero while the daemon sleeps or is about to
 *       (it sets it, fences, re-checks the bits, then sleeps)
 *   64  summary u64[MRCE_DB_SUMMARY_WORDS]: bit g of word w set when word
 *       w * 64 + g of `bits` may have a bit set
 *   128 bits u64[MRCE_DB_BITS_WORDS]: bit i % 64 of word i / 64 set when the
 *       QP of index i (qp_num & MRCE_QP_INDEX_MASK) rang
 *   The provider sets the QP's bit, then its summary bit (atomic OR, release
 *   order); the daemon exchanges a summary word to 0, then each bits word it
 *   names to 0 (acquire), and looks at the QPs named. A bit for an index that
 *   is not a QP of this daemon, or not an idle one, costs one look.
 * arm (CQ): written by the provider in ibv_req_notify_cq (MRCE_CQ_ARM_NEXT or
 *   MRCE_CQ_ARM_SOLICITED). When the daemon writes a CQE that matches the arm
 *   it exchanges arm to 0, increments notify_count and writes 1 to the CQ's
 *   completion-channel eventfd (an EFD_SEMAPHORE eventfd). ibv_get_cq_event
 *   reads that eventfd and returns a CQ of the channel whose notify_count
 *   differs from the count the provider last saw; of several, the one whose
 *   notify_seq is oldest. notify_seq: the channel's notification number
 *   (counted per channel by the daemon) of the CQ's latest notification,
 *   written before notify_count, so that events leave a channel shared by
 *   several CQs in the order the daemon raised them, as a hardware event
 *   queue delivers them.
 * ------------------------------------------------------------------------ */
#define MRCE_RING_MAGIC 0x474e524du /* "MRNG" little-endian */
#define MRCE_RING_VERSION 1
#define MRCE_RING_KIND_SQ 1
#define MRCE_RING_KIND_RQ 2
#define MRCE_RING_KIND_CQ 3
#define MRCE_RING_KIND_SRQ 4 /* slots are WQEs (RQ layout); producer = provider */
#define MRCE_RING_NEED_WAKEUP 0x1u
#define MRCE_HELLO_DOORBELL_PAGE 0x1u /* hello_req.flags: send the doorbell page */
#define MRCE_QP_INDEX_MASK 0x3fffu    /* a QP's index in the daemon: qp_num & mask */
#define MRCE_DB_PAGE_SIZE 4096
#define MRCE_DB_SLEEPING_OFF 0
#define MRCE_DB_SUMMARY_OFF 64
#define MRCE_DB_SUMMARY_WORDS 4
#define MRCE_DB_BITS_OFF 128
#define MRCE_DB_BITS_WORDS 256
#define MRCE_CQ_ARM_NEXT 1u
#define MRCE_CQ_ARM_SOLICITED 2u
#define MRCE_CACHE_LINE 64

struct mrce_ring_header {
	uint32_t magic;                 /* 0 */
	uint16_t version;               /* 4 */
	uint16_t kind;                  /* 6 */
	uint32_t slot_size;             /* 8 */
	uint32_t slot_count;            /* 12: power of two */
	uint8_t pad0[48];               /* 16 */
	uint32_t producer;              /* 64 */
	uint8_t pad1[60];               /* 68 */
	uint32_t consumer;              /* 128 */
	uint8_t pad2[60];               /* 132 */
	uint32_t flags;                 /* 192 */
	uint32_t arm;                   /* 196 */
	uint32_t notify_count;          /* 200 */
	uint32_t notify_seq;            /* 204 */
	uint8_t pad3[48];               /* 208 */
};                                      /* 256: slots start here */
#define MRCE_RING_SLOTS_OFF 256

/*
 * Work queue entry: one layout for SQ and RQ slots (RQ uses wr_id, num_sge,
 * length and sge[]). 256 bytes.
 *
 *  0 wr_id u64 | 8 opcode u8 | 9 send_flags u8 | 10 num_sge u16 |
 * 12 imm_data u32 (as the app gave it, network order) | 16 length u32 |
 * 20 rkey u32 | 24 remote_addr u64 | 32 compare_add u64 | 40 swap u64 |
 * 48 ud_remote_qpn u32 | 52 ud_remote_qkey u32 | 56 ud_dest_ipv4 u32 |
 * 60 ud_traffic_class u8 | 61 ud_hop_limit u8 | 62 reserved u16 |
 * 64 data[192]: sge[num_sge] or, with IBV_SEND_INLINE,
 * `length` bytes of inline payload (num_sge is then 0).
 *
 * RC opcodes: IBV_WR_SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM,
 * RDMA_READ (remote_addr, rkey), ATOMIC_CMP_AND_SWP (compare_add = compare,
 * swap), ATOMIC_FETCH_AND_ADD (compare_add = add); atomics take one 8-byte
 * SGE for the old value. UD: IBV_WR_SEND and SEND_WITH_IMM only; the
 * ud_* fields come from the work request's wr.ud (remote_qpn, remote_qkey)
 * and its address handle: ud_dgid (bytes 32..47, where RC atomics have
 * compare_add and swap) is the AH's dgid, ud_dest_ipv4 bytes 12..15 of it as
 * they are in the GID (network order) when it is IPv4-mapped and 0 when it
 * is an IPv6 address, with the AH's traffic class and hop limit. send_flags carries IBV_SEND_FENCE (1), SIGNALED (2), SOLICITED (4),
 * INLINE (8) as in enum ibv_send_flags.
 *
 * opcode is enum ibv_wr_opcode, send_flags the low 8 bits of enum
 * ibv_send_flags. `length` is what the provider computed; the daemon
 * recomputes it from the SGEs and never trusts it.
 */
#define MRCE_WQE_SIZE 256
#define MRCE_WQE_DATA_OFF 64
#define MRCE_WQE_DATA_SIZE 192
#define MRCE_MAX_SGE 12
#define MRCE_MAX_INLINE 192

struct mrce_sge {
	uint64_t addr;   /* 0 */
	uint32_t length; /* 8 */
	uint32_t lkey;   /* 12 */
};                       /* 16 */

struct mrce_wqe {
	uint64_t wr_id;                 /* 0 */
	uint8_t opcode;                 /* 8 */
	uint8_t send_flags;             /* 9 */
	uint16_t num_sge;               /* 10 */
	uint32_t imm_data;              /* 12 */
	uint32_t length;                /* 16 */
	uint32_t rkey;                  /* 20 */
	uint64_t remote_addr;           /* 24 */
	union {
		struct {
			uint64_t compare_add;   /* 32 */
			uint64_t swap;          /* 40 */
		};
		uint8_t ud_dgid[16];    /* 32: UD only, the AH's dgid */
	};
	uint32_t ud_remote_qpn;         /* 48: UD only */
	uint32_t ud_remote_qkey;        /* 52: UD only */
	uint32_t ud_dest_ipv4;          /* 56: UD only, network order */
	uint8_t ud_traffic_class;       /* 60: UD only */
	uint8_t ud_hop_limit;           /* 61: UD only */
	uint16_t reserved;              /* 62 */
	union {                         /* 64 */
		struct mrce_sge sge[MRCE_MAX_SGE];
		uint8_t inline_data[MRCE_MAX_INLINE];
	} data;
};                                      /* 256 */

/*
 * Completion queue entry, 64 bytes; fields as in struct ibv_wc.
 * UD receives: src_qp is the sender's QPN, wc_flags has IBV_WC_GRH, and the
 * first 40 bytes of the receive buffer hold a GRH (IPv6-style header: version
 * 6, payload length, next header 0x1b, hop limit, sgid = ::ffff:<sender IPv4>,
 * dgid = ::ffff:<receiver IPv4>); byte_len counts those 40 bytes.
 * SRQ receives: `reserved[0..3]` is unused; wr_id is the SRQ WQE's.
 */
#define MRCE_CQE_SIZE 64

struct mrce_cqe {
	uint64_t wr_id;          /* 0 */
	uint32_t status;         /* 8: enum ibv_wc_status */
	uint32_t opcode;         /* 12: enum ibv_wc_opcode */
	uint32_t vendor_err;     /* 16 */
	uint32_t byte_len;       /* 20 */
	uint32_t imm_data;       /* 24: network order, valid with IBV_WC_WITH_IMM */
	uint32_t qp_num;         /* 28 */
	uint32_t src_qp;         /* 32 */
	uint32_t wc_flags;       /* 36: enum ibv_wc_flags */
	uint16_t pkey_index;     /* 40 */
	uint16_t slid;           /* 42 */
	uint8_t sl;              /* 44 */
	uint8_t dlid_path_bits;  /* 45 */
	uint8_t reserved[18];    /* 46 */
};                               /* 64 */

/* ------------------------------------------------------------------------
 * Local control protocol: SOCK_STREAM Unix socket, one connection per
 * ibv_context. Every frame (request or response) is a 16-byte header and a
 * fixed-size payload for its op; len counts the header too and is at most
 * MRCE_CTRL_MAX_FRAME. A request gets exactly one response with the same op
 * and seq; status is 0 or a positive errno. A response with nfds > 0 is
 * followed on the stream by nfds single bytes (value 0), each carrying one
 * file descriptor as SCM_RIGHTS, in the order the op documents. The daemon
 * closes the connection on a malformed frame (bad len, unknown op, payload
 * size wrong for the op). Closing the connection destroys every object made
 * on it.
 *
 *  0 len u32 | 4 op u16 | 6 status u16 | 8 seq u32 | 12 nfds u16 | 14 pad u16
 *
 * Socket path: $METAROCE_SOCK if set, else
 * /tmp/metaroce/nicd-<inode of /proc/self/ns/net>.sock, so a process finds
 * the daemon of its own network namespace with no configuration.
 * Object handles are daemon-chosen u32 values, unique per connection (per
 * context for the connections of a shared context, ops 26..31).
 * MRCE_NO_HANDLE means "none" (no completion channel, no SRQ).
 * ------------------------------------------------------------------------ */
#define MRCE_CTRL_MAX_FRAME 4096
#define MRCE_SOCK_DIR "/tmp/metaroce"
#define MRCE_NO_HANDLE 0xffffffffu

struct mrce_ctrl_hdr {
	uint32_t len;     /* 0 */
	uint16_t op;      /* 4 */
	uint16_t status;  /* 6 */
	uint32_t seq;     /* 8 */
	uint16_t nfds;    /* 12 */
	uint16_t pad;     /* 14 */
};                        /* 16 */

enum mrce_ctrl_op {
	MRCE_OP_HELLO = 1,           /* req hello_req; resp hello_resp + fds [doorbell eventfd, async eventfd(, doorbell page memfd)] */
	MRCE_OP_ALLOC_PD = 2,        /* req empty; resp handle_resp */
	MRCE_OP_DEALLOC_PD = 3,      /* req handle_req; resp empty (EBUSY while objects use it) */
	MRCE_OP_REG_MR = 4,          /* req reg_mr_req; resp reg_mr_resp */
	MRCE_OP_DEREG_MR = 5,        /* req handle_req; resp empty */
	MRCE_OP_CREATE_COMP_CHANNEL = 6, /* req empty; resp handle_resp + fds [EFD_SEMAPHORE eventfd] */
	MRCE_OP_DESTROY_COMP_CHANNEL = 7, /* req handle_req; resp empty (EBUSY while a CQ uses it) */
	MRCE_OP_CREATE_CQ = 8,       /* req create_cq_req; resp create_cq_resp + fds [ring memfd] */
	MRCE_OP_DESTROY_CQ = 9,      /* req handle_req; resp empty (EBUSY while a QP uses it) */
	MRCE_OP_CREATE_QP = 10,      /* req create_qp_req; resp create_qp_resp + fds [ring memfd] */
	MRCE_OP_MODIFY_QP = 11,      /* req modify_qp_req; resp empty */
	MRCE_OP_QUERY_QP = 12,       /* req handle_req; resp qp_attr (all fields valid) */
	MRCE_OP_DESTROY_QP = 13,     /* req handle_req; resp empty */
	MRCE_OP_CREATE_SRQ = 14,     /* req create_srq_req; resp create_srq_resp + fds [ring memfd] */
	MRCE_OP_MODIFY_SRQ = 15,     /* req modify_srq_req; resp empty */
	MRCE_OP_QUERY_SRQ = 16,      /* req handle_req; resp srq_attr */
	MRCE_OP_DESTROY_SRQ = 17,    /* req handle_req; resp empty (EBUSY while a QP uses it) */
	MRCE_OP_GET_ASYNC_EVENT = 18,/* req empty; resp async_event (status EAGAIN when none is queued) */
	MRCE_OP_REREG_MR = 19,       /* req rereg_mr_req; resp reg_mr_resp (lkey/rkey may change) */
	/* The rdma_cm-style service (connection-manager.md, "Service"): */
	MRCE_OP_CM_LISTEN = 20,      /* req cm_listen_req; resp empty (EADDRINUSE: another connection binds or listens on it) */
	MRCE_OP_CM_UNLISTEN = 21,    /* req cm_listen_req; resp empty (ENOENT: this connection neither binds nor listens on it) */
	MRCE_OP_CM_CONNECT = 22,     /* req cm_connect_req; resp cm_connect_resp once the peer's application answered */
	MRCE_OP_CM_GET_REQUEST = 23, /* req cm_get_request_req; resp cm_request (EAGAIN at the timeout) */
	MRCE_OP_CM_ACCEPT = 24,      /* req cm_accept_req; resp empty once the requester took the reply */
	MRCE_OP_CM_REJECT = 25,      /* req cm_reject_req; resp empty */
	/* Sharing a context between processes (ibv_import_device/pd/mr; see below): */
	MRCE_OP_CONTEXT_FD = 26,     /* req empty; resp empty + fds [context memfd] (EEXIST: the connection has one or was imported) */
	MRCE_OP_IMPORT_CONTEXT = 27, /* req import_context_req; resp empty */
	MRCE_OP_IMPORT_PD = 28,      /* req handle_req (the PD's handle); resp empty */
	MRCE_OP_UNIMPORT_PD = 29,    /* req handle_req; resp empty (EBUSY while this connection's objects use it) */
	MRCE_OP_IMPORT_MR = 30,      /* req import_mr_req; resp import_mr_resp */
	MRCE_OP_UNIMPORT_MR = 31,    /* req handle_req; resp empty */
	/* The rdma_cm-style service, continued: */
	MRCE_OP_CM_BIND = 32,        /* req cm_listen_req; resp empty (EADDRINUSE: the service is bound or listened on here) */
	MRCE_OP_SHARE_MR = 33,       /* req share_mr_req; resp empty (opt-in: the daemon maps the region's memfd) */
	MRCE_OP_MAX = 33,
};

/*
 * Async events: the daemon queues events per connection (at most
 * MRCE_MAX_ASYNC_EVENTS; further ones are dropped and counted) and writes 1 to
 * the async eventfd of HELLO (an EFD_SEMAPHORE eventfd) for each event queued.
 * ibv_get_async_event reads the eventfd once (blocking unless the app made
 * async_fd non-blocking), then fetches the event with GET_ASYNC_EVENT.
 * event_type is enum ibv_event_type; element is the handle of the QP, CQ or
 * SRQ concerned, or the port number for port events.
 *   IBV_EVENT_QP_FATAL (1)        an RC QP went to ERR on a transport error
 *   IBV_EVENT_QP_ACCESS_ERR (3)   ... on a remote access violation it caused
 *   IBV_EVENT_COMM_EST (4)        first packet received in RTR (optional)
 *   IBV_EVENT_PORT_ACTIVE (9), IBV_EVENT_PORT_ERR (10)  the netdev's carrier
 *   IBV_EVENT_SRQ_LIMIT_REACHED (15) the SRQ fell below its armed limit
 *                                 (the limit is then disarmed: srq_limit = 0)
 *   IBV_EVENT_QP_LAST_WQE_REACHED (16) a QP on an SRQ went to ERR
 */
#define MRCE_MAX_ASYNC_EVENTS 1024

struct mrce_handle_req {
	uint32_t handle; /* 0 */
	uint32_t pad;    /* 4 */
};                       /* 8 */

struct mrce_handle_resp {
	uint32_t handle; /* 0 */
	uint32_t pad;    /* 4 */
};                       /* 8 */

struct mrce_hello_req {
	uint32_t abi_version; /* 0: MRCE_ABI_VERSION */
	uint32_t flags;       /* 4: MRCE_HELLO_DOORBELL_PAGE; other bits 0 */
};                            /* 8 */

struct mrce_hello_resp {
	uint32_t abi_version;     /* 0 */
	uint32_t daemon_pid;      /* 4: the provider calls prctl(PR_SET_PTRACER) with it */
	uint8_t gid[16];          /* 8: GID index 0, IPv4-mapped (::ffff:a.b.c.d) */
	char dev_name[16];        /* 24: "mrce0", NUL-terminated */
	char ifname[16];          /* 40: the netdev served, NUL-terminated */
	uint64_t node_guid;       /* 56: network order, as in ibv_device_attr */
	uint32_t if_mtu;          /* 64: the netdev's MTU in bytes */
	uint32_t active_mtu;      /* 68: enum ibv_mtu that fits the netdev */
	uint32_t max_mtu;         /* 72: enum ibv_mtu */
	uint32_t udp_port;        /* 76: the daemon's data UDP port */
	uint32_t max_qp;          /* 80 */
	uint32_t max_qp_wr;       /* 84 */
	uint32_t max_sge;         /* 88 */
	uint32_t max_cq;          /* 92 */
	uint32_t max_cqe;         /* 96 */
	uint32_t max_mr;          /* 100 */
	uint64_t max_mr_size;     /* 104 */
	uint32_t max_pd;          /* 112 */
	uint32_t max_inline;      /* 116 */
	uint32_t max_qp_rd_atom;  /* 120 */
	uint32_t max_comp_channel;/* 124 */
	uint32_t vendor_id;       /* 128 */
	uint32_t vendor_part_id;  /* 132 */
	uint32_t hw_ver;          /* 136 */
	uint32_t link_up;         /* 140: 1 when the netdev is up (port ACTIVE) */
	uint32_t speed_mbps;      /* 144: 0 when unknown */
	uint32_t max_srq;         /* 148 */
	uint32_t max_srq_wr;      /* 152 */
	uint32_t max_srq_sge;     /* 156 */
	uint32_t max_qp_init_rd_atom; /* 160: max_dest_rd_atomic accepted */
	uint32_t atomic_cap;      /* 164: enum ibv_atomic_cap (IBV_ATOMIC_HCA = 1) */
	uint32_t max_ah;          /* 168 */
	uint32_t pad;             /* 172 */
};                                /* 176 */

struct mrce_reg_mr_req {
	uint32_t pd;      /* 0 */
	uint32_t access;  /* 4: enum ibv_access_flags */
	uint64_t addr;    /* 8: in the caller's address space */
	uint64_t length;  /* 16 */
	uint64_t iova;    /* 24: equal to addr for ibv_reg_mr */
};                        /* 32 */

struct mrce_reg_mr_resp {
	uint32_t handle; /* 0 */
	uint32_t lkey;   /* 4 */
	uint32_t rkey;   /* 8 */
	uint32_t pad;    /* 12 */
};                       /* 16 */

struct mrce_create_cq_req {
	uint32_t cqe;          /* 0: at least this many entries */
	uint32_t channel;      /* 4: comp channel handle or MRCE_NO_HANDLE */
	uint32_t comp_vector;  /* 8 */
	uint32_t pad;          /* 12 */
};                             /* 16 */

struct mrce_create_cq_resp {
	uint32_t handle;       /* 0 */
	uint32_t cqe;          /* 4: usable entries (ring slot_count) */
	uint64_t map_size;     /* 8: bytes to mmap from the memfd, ring at offset 0 */
};                             /* 16 */

struct mrce_create_qp_req {
	uint32_t pd;               /* 0 */
	uint32_t send_cq;          /* 4 */
	uint32_t recv_cq;          /* 8 */
	uint32_t srq;              /* 12: SRQ handle or MRCE_NO_HANDLE */
	uint32_t qp_type;          /* 16: enum ibv_qp_type */
	uint32_t sq_sig_all;       /* 20 */
	uint32_t max_send_wr;      /* 24 */
	uint32_t max_recv_wr;      /* 28 */
	uint32_t max_send_sge;     /* 32 */
	uint32_t max_recv_sge;     /* 36 */
	uint32_t max_inline_data;  /* 40 */
	uint32_t pad;              /* 44 */
};                                 /* 48 */

struct mrce_create_qp_resp {
	uint32_t handle;           /* 0 */
	uint32_t qp_num;           /* 4 */
	uint32_t max_send_wr;      /* 8: actual capabilities */
	uint32_t max_recv_wr;      /* 12 */
	uint32_t max_send_sge;     /* 16 */
	uint32_t max_recv_sge;     /* 20 */
	uint32_t max_inline_data;  /* 24 */
	uint32_t sq_offset;        /* 28: SQ ring offset in the memfd */
	uint32_t rq_offset;        /* 32: RQ ring offset in the memfd */
	uint32_t pad;              /* 36 */
	uint64_t map_size;         /* 40 */
};                                 /* 48 */

struct mrce_create_srq_req {
	uint32_t pd;         /* 0 */
	uint32_t max_wr;     /* 4 */
	uint32_t max_sge;    /* 8 */
	uint32_t srq_limit;  /* 12: 0 = not armed */
};                           /* 16 */

struct mrce_create_srq_resp {
	uint32_t handle;     /* 0 */
	uint32_t max_wr;     /* 4: usable entries (ring slot_count) */
	uint32_t max_sge;    /* 8 */
	uint32_t pad;        /* 12 */
	uint64_t map_size;   /* 16: bytes to mmap from the memfd, ring at offset 0 */
};                           /* 24 */

struct mrce_modify_srq_req {
	uint32_t handle;     /* 0 */
	uint32_t attr_mask;  /* 4: enum ibv_srq_attr_mask (IBV_SRQ_MAX_WR = 1: EINVAL, resizing is not supported; IBV_SRQ_LIMIT = 2) */
	uint32_t max_wr;     /* 8 */
	uint32_t srq_limit;  /* 12: arms the limit event; > max_wr: EINVAL */
};                           /* 16 */

struct mrce_srq_attr {
	uint32_t max_wr;     /* 0 */
	uint32_t max_sge;    /* 4 */
	uint32_t srq_limit;  /* 8: 0 once the event fired */
	uint32_t pad;        /* 12 */
};                           /* 16 */

struct mrce_async_event {
	uint32_t event_type; /* 0: enum ibv_event_type */
	uint32_t element;    /* 4: QP/CQ/SRQ handle or port number */
};                           /* 8 */

struct mrce_rereg_mr_req {
	uint32_t handle;     /* 0 */
	uint32_t flags;      /* 4: enum ibv_rereg_mr_flags (CHANGE_TRANSLATION 1, CHANGE_PD 2, CHANGE_ACCESS 4) */
	uint32_t pd;         /* 8: with CHANGE_PD */
	uint32_t access;     /* 12: with CHANGE_ACCESS */
	uint64_t addr;       /* 16: with CHANGE_TRANSLATION */
	uint64_t length;     /* 24: with CHANGE_TRANSLATION */
	uint64_t iova;       /* 32: with CHANGE_TRANSLATION */
};                           /* 40 */

/* struct ibv_qp_attr, with the fields that matter to an RC/UD QP. */
struct mrce_qp_attr {
	uint32_t qp_state;            /* 0: enum ibv_qp_state */
	uint32_t cur_qp_state;        /* 4 */
	uint32_t path_mtu;            /* 8: enum ibv_mtu */
	uint32_t qkey;                /* 12 */
	uint32_t rq_psn;              /* 16 */
	uint32_t sq_psn;              /* 20 */
	uint32_t dest_qp_num;         /* 24 */
	uint32_t qp_access_flags;     /* 28 */
	uint32_t max_send_wr;         /* 32: cap */
	uint32_t max_recv_wr;         /* 36 */
	uint32_t max_send_sge;        /* 40 */
	uint32_t max_recv_sge;        /* 44 */
	uint32_t max_inline_data;     /* 48 */
	uint32_t flow_label;          /* 52: ah_attr.grh */
	uint8_t dgid[16];             /* 56: ah_attr.grh.dgid */
	uint8_t sgid_index;           /* 72 */
	uint8_t hop_limit;            /* 73 */
	uint8_t traffic_class;        /* 74 */
	uint8_t is_global;            /* 75: ah_attr.is_global */
	uint16_t dlid;                /* 76: ah_attr */
	uint8_t sl;                   /* 78 */
	uint8_t src_path_bits;        /* 79 */
	uint8_t static_rate;          /* 80 */
	uint8_t ah_port_num;          /* 81 */
	uint16_t pkey_index;          /* 82 */
	uint8_t en_sqd_async_notify;  /* 84 */
	uint8_t sq_draining;          /* 85 */
	uint8_t max_rd_atomic;        /* 86 */
	uint8_t max_dest_rd_atomic;   /* 87 */
	uint8_t min_rnr_timer;        /* 88 */
	uint8_t port_num;             /* 89 */
	uint8_t timeout;              /* 90 */
	uint8_t retry_cnt;            /* 91 */
	uint8_t rnr_retry;            /* 92 */
	uint8_t pad[3];               /* 93 */
};                                    /* 96 */

struct mrce_modify_qp_req {
	uint32_t handle;          /* 0 */
	uint32_t attr_mask;       /* 4: enum ibv_qp_attr_mask */
	struct mrce_qp_attr attr; /* 8 */
};                                /* 104 */

/*
 * The rdma_cm-style service (ops 20..25; docs/spec/control-protocol.md and
 * connection-manager.md, "Service"). A connection listens on service ids
 * (one listener per service id per daemon), takes the connection requests
 * that arrive for them with CM_GET_REQUEST (a long poll) and answers each with
 * CM_ACCEPT or CM_REJECT; another connection, on this daemon or another,
 * asks with CM_CONNECT, answered when the peer application answers. Both
 * sides then move their QPs to RTR/RTS themselves with the QPN, PSN and GID
 * exchanged. Private data: 0..MRCE_CM_PRIVATE_DATA_MAX bytes each way; the
 * bytes beyond private_data_len are zero and ignored. Addresses: peer_ipv4
 * is IPv4 in network order, like ud_dest_ipv4, and 0 for an IPv6 peer, whose
 * address is then peer_ipv6 (16 bytes, network order). QPNs and PSNs are 24-bit.
 * libmetaroce.so does not use these ops; the Java binding and
 * libmetaroce-rdmacm.so (src/rdmacm.c, the librdmacm API) do.
 */
#define MRCE_CM_PRIVATE_DATA_MAX 192
#define MRCE_CM_ACCEPTED 0           /* cm_connect_resp.result */
#define MRCE_CM_REJECTED 1           /* ... the peer application rejected; private data is its */
#define MRCE_CM_DEFAULT_BACKLOG 64   /* cm_listen_req.backlog 0 */
#define MRCE_CM_MAX_BACKLOG 1024

struct mrce_cm_listen_req {          /* CM_LISTEN, CM_UNLISTEN, CM_BIND */
	uint32_t service_id;         /* 0: nonzero */
	uint32_t backlog;            /* 4: requests kept for the application at most (0: default; UNLISTEN, BIND: ignored) */
};                                   /* 8 */

struct mrce_cm_connect_req {
	uint32_t peer_ipv4;          /* 0: the peer daemon's IPv4 address, network order; 0: peer_ipv6 */
	uint32_t service_id;         /* 4: nonzero */
	uint32_t qpn;                /* 8: the requester's QP */
	uint32_t psn;                /* 12: its first send PSN */
	uint8_t gid[16];             /* 16: its GID, passed on as given */
	uint32_t timeout_ms;         /* 32: 0: the daemon's connect timeout */
	uint32_t private_data_len;   /* 36 */
	uint8_t private_data[MRCE_CM_PRIVATE_DATA_MAX]; /* 40 */
	uint8_t peer_ipv6[16];       /* 232: the peer daemon's IPv6 address when peer_ipv4 is 0 */
};                                   /* 248 */

struct mrce_cm_connect_resp {
	uint32_t result;             /* 0: MRCE_CM_ACCEPTED or MRCE_CM_REJECTED */
	uint32_t pad;                /* 4 */
	uint32_t qpn;                /* 8: the acceptor's QP (ACCEPTED) */
	uint32_t psn;                /* 12: its first send PSN (ACCEPTED) */
	uint8_t gid[16];             /* 16: its GID (ACCEPTED) */
	uint32_t pad2;               /* 32 */
	uint32_t private_data_len;   /* 36: the acceptor's or rejecter's */
	uint8_t private_data[MRCE_CM_PRIVATE_DATA_MAX]; /* 40 */
};                                   /* 232 */

struct mrce_cm_get_request_req {
	uint32_t timeout_ms;         /* 0: 0 answers at once */
	uint32_t pad;                /* 4 */
};                                   /* 8 */

struct mrce_cm_request {             /* CM_GET_REQUEST response */
	uint32_t request;            /* 0: handle for CM_ACCEPT / CM_REJECT, per connection */
	uint32_t service_id;         /* 4 */
	uint32_t qpn;                /* 8: the requester's QP */
	uint32_t psn;                /* 12: its first send PSN */
	uint8_t gid[16];             /* 16: its GID, as it gave it */
	uint32_t peer_ipv4;          /* 32: the requester's daemon, network order; 0: IPv6 */
	uint32_t private_data_len;   /* 36 */
	uint8_t private_data[MRCE_CM_PRIVATE_DATA_MAX]; /* 40 */
	uint8_t peer_ipv6[16];       /* 232: the requester's daemon: its IPv6 address, or ::ffff:a.b.c.d */
};                                   /* 248 */

struct mrce_cm_accept_req {
	uint32_t request;            /* 0: from cm_request */
	uint32_t pad;                /* 4 */
	uint32_t qpn;                /* 8: the acceptor's QP */
	uint32_t psn;                /* 12: its first send PSN */
	uint8_t gid[16];             /* 16: its GID */
	uint32_t pad2;               /* 32 */
	uint32_t private_data_len;   /* 36 */
	uint8_t private_data[MRCE_CM_PRIVATE_DATA_MAX]; /* 40 */
};                                   /* 232 */

struct mrce_cm_reject_req {
	uint32_t request;            /* 0: from cm_request */
	uint32_t private_data_len;   /* 4 */
	uint8_t private_data[MRCE_CM_PRIVATE_DATA_MAX]; /* 8 */
};                                   /* 200 */

/*
 * Sharing a context (ops 26..31; ibv_import_device(3), ibv_import_pd(3),
 * ibv_import_mr(3)). A context is the set of connections that share one
 * handle space. CONTEXT_FD, sent once right after HELLO, makes the connection
 * the first of a context and returns the context memfd, the context's
 * cmd_fd: the daemon made it, keeps it open while a connection of the context
 * lives, and wrote an mrce_context_token into it (so a holder finds the
 * device). A process that holds a duplicate of that fd (SCM_RIGHTS, dup,
 * pidfd_getfd) opens its own connection, sends HELLO and then IMPORT_CONTEXT
 * with the fd's number in its own fd table: the daemon takes the file from
 * the caller's fd table (pidfd_getfd on the connection's pidfd) and compares
 * its inode with the memfds it issued. Errors: EBADF (no such fd in the
 * caller), EINVAL (not a context memfd of this daemon, or its context has no
 * connection left), EEXIST (the connection already has a context or
 * objects). Handles made by any connection of a context are unique in it.
 *
 * IMPORT_PD / IMPORT_MR give the caller a reference to a PD / MR another
 * connection of its context made (ENOENT: no such live object in the context,
 * or one of the caller's own; EEXIST: imported already). An imported PD takes
 * QPs, SRQs and MRs of the importer; its owner's DEALLOC_PD answers EBUSY
 * while it is imported. UNIMPORT_* drops the reference only (ENOENT when the
 * caller holds none); DEALLOC_PD / DEREG_MR of an imported handle answer
 * EPERM: an object is destroyed by the connection that made it, and goes with
 * it. Memory is always reached in the process that registered it, by QPs of
 * that process: an imported MR's rkey serves a peer's RDMA through the
 * owner's QPs on the PD; the importer's own QPs reach only its own MRs.
 * ------------------------------------------------------------------------ */
#define MRCE_CONTEXT_MAGIC 0x5854434du /* "MCTX" little-endian */

struct mrce_context_token {  /* the first bytes of the context memfd */
	uint32_t magic;      /* 0: MRCE_CONTEXT_MAGIC */
	uint32_t abi_version;/* 4: MRCE_ABI_VERSION */
	char dev_name[16];   /* 8: the device, NUL-terminated ("mrce0") */
};                           /* 24 */

struct mrce_import_context_req {
	int32_t fd;          /* 0: the context memfd's number in the caller's fd table */
	uint32_t pad;        /* 4 */
};                           /* 8 */

struct mrce_import_mr_req {
	uint32_t pd;         /* 0: a PD of the caller (own or imported) */
	uint32_t handle;     /* 4: the MR (EINVAL: it is not on that PD) */
};                           /* 8 */

/*
 * MRCE_OP_SHARE_MR (control-protocol.md, "Shared regions"): the pages of
 * region `handle` (one of the caller's own) are those of the memfd the caller
 * holds as descriptor `fd`, file offset 0 at address `base` (page-aligned, at
 * or below the region's first byte); the file is sealed against shrinking and
 * covers the region's last byte. The daemon then copies to and from the region
 * through its own mapping of the file instead of process_vm_*.
 */
struct mrce_share_mr_req {
	uint32_t handle;     /* 0: the region (ENOENT: not the caller's) */
	int32_t fd;          /* 4: a descriptor of the caller (EBADF) */
	uint64_t base;       /* 8: the address of file offset 0 */
};                           /* 16 */

struct mrce_import_mr_resp {
	uint32_t handle;     /* 0 */
	uint32_t lkey;       /* 4 */
	uint32_t rkey;       /* 8 */
	uint32_t access;     /* 12: enum ibv_access_flags */
	uint64_t addr;       /* 16: the iova the keys are used with */
	uint64_t length;     /* 24 */
};                           /* 32 */

#endif /* MRCE_ABI_H */
