/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mrce.h - internal structures of libmetaroce.so, the MetaRoCE verbs provider.
 *
 * Every object embeds its generic libibverbs struct first; to_mxx() gets back
 * to ours. An object belongs to MetaRoCE iff its context's device is the one
 * static mrce_device (is_mrce_ctx()).
 */
#ifndef MRCE_H
#define MRCE_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mrce_abi.h"
#include "mrce_ring.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define MRCE_PORT 1
/*
 * GID table slots of the port (gid_tbl_len): room for every address of the
 * interface, as a NIC's table has more slots than addresses.
 */
#define MRCE_GID_TBL_LEN 16
/* libibverbs-internal: enum ibv_gid_type_sysfs, not in the public headers. */
#define MRCE_GID_TYPE_SYSFS_ROCE_V2 1
/*
 * How long ibv_get_device_list waits for a daemon that accepted the connection
 * to answer HELLO. A missing or dead daemon fails at once (ENOENT,
 * ECONNREFUSED); a live one may be slow to answer its first HELLO (cold JIT
 * on a loaded machine: 2 s was not enough under CI load), and skipping mrce0
 * then would fail the application for good.
 */
#define MRCE_PROBE_TIMEOUT_MS 20000
#define MRCE_CMD_TIMEOUT_MS 30000

/* One control connection to the daemon (mrce_ctrl.c). */
struct mrce_conn {
	int fd;
	uint32_t seq;
	bool dead;             /* the daemon went away: every call is EIO */
	pthread_mutex_t lock;  /* one request/response at a time */
};

/*
 * rdma-core's struct verbs_device and struct verbs_device_ops (libibverbs/
 * driver.h of rdma-core 44, private to rdma-core and not installed by
 * Debian), field for field. Every device libibverbs lists is one, and code
 * that probes a device (middleware, debuggers) may read these fields past
 * struct ibv_device: ours are valid memory with honest values. The pointers
 * we have no use for are NULL; sysfs is NULL because no kernel device stands
 * behind mrce0.
 */
struct mrce_list_node {
	struct mrce_list_node *next, *prev;
};

struct mrce_verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const void *match_table;
	const void **static_providers;
	bool (*match_device)(void *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	void *(*alloc_device)(void *sysfs_dev);
	void (*uninit_device)(void *device);
};

struct mrce_verbs_device {
	struct ibv_device device; /* must be first */
	const struct mrce_verbs_device_ops *ops;
	int refcount;             /* atomic_int in rdma-core */
	struct mrce_list_node entry;
	void *sysfs;              /* struct verbs_sysfs_dev *: none here */
	uint64_t core_support;
};

/*
 * One verbs device per daemon control socket of this netns (docs/multi-nic.md):
 * mrce0 at nicd-<ino>.sock, any other NAME at nicd-<ino>-NAME.sock. A slot is
 * given to a device name the first time a list shows it and keeps it, so an
 * ibv_device pointer stays the same device across lists.
 */
#define MRCE_MAX_DEVS 16
#define MRCE_SOCK_PATH_MAX 108 /* sun_path */

struct mrce_device {
	struct mrce_verbs_device vdev;   /* what libibverbs' own devices are */
	struct mrce_hello_resp hello;    /* from the latest probe */
	char sock[MRCE_SOCK_PATH_MAX];   /* its daemon's control socket */
	bool used;                       /* this slot has a device name */
	bool listed;                     /* a device list has shown it */
};

struct mrce_cq;
struct mrce_qp;
struct mrce_srq;

struct mrce_context {
	struct verbs_context vctx;
	struct mrce_conn conn;
	struct mrce_hello_resp hello;
	int doorbell_fd;
	/*
	 * The doorbell page (mrce_abi.h): where a post to a ring that asks for
	 * a wakeup marks its QP, so the daemon finds it without reading every
	 * idle QP's rings. Mapped shared, MRCE_DB_PAGE_SIZE bytes.
	 */
	uint8_t *db_page;
	/*
	 * Async events: the daemon's eventfd (HELLO's, made non-blocking), and
	 * when the provider could open one, a netlink socket that hears the
	 * interface's address changes (IBV_EVENT_GID_CHANGE). context.async_fd is
	 * then an epoll fd over both, so an app that polls it wakes for either.
	 */
	int async_efd;
	int nl_fd;
	bool nl_on;
	uint64_t doorbells;   /* doorbell writes, printed with METAROCE_DEBUG=1 */
	bool debug;
	bool fatal_reported;  /* IBV_EVENT_DEVICE_FATAL was delivered */
	/*
	 * The objects of this context by daemon handle, to turn the element of
	 * an async event into the app's pointer. Control path only.
	 */
	pthread_mutex_t obj_lock;
	struct mrce_qp *qps;
	struct mrce_cq *cqs;
	struct mrce_srq *srqs;
	uint32_t num_ah;      /* address handles alive (max_ah of HELLO) */
};

struct mrce_pd {
	struct ibv_pd ibv_pd;
	bool imported;          /* ibv_import_pd: another process's PD */
};

struct mrce_mr {
	struct ibv_mr ibv_mr;
	bool imported;          /* ibv_import_mr */
	/* METAROCE_SHARED_MR (mrce_shared_mr.c): the daemon maps share_fd's pages */
	bool shared;
	int share_fd;
	uintptr_t share_start, share_end; /* the pages moved into the file */
	struct mrce_mr *share_next;       /* the live shared regions */
};

struct mrce_comp_channel {
	struct ibv_comp_channel ibv_chan;
	uint32_t handle;
	pthread_mutex_t lock;   /* guards cqs */
	struct mrce_cq *cqs;    /* CQs bound to this channel */
};

/*
 * struct ibv_cq_ex starts with the fields of struct ibv_cq, so every CQ is
 * made as an ibv_cq_ex: ibv_create_cq and ibv_create_cq_ex share the code.
 */
struct mrce_cq {
	union {
		struct ibv_cq ibv_cq;
		struct ibv_cq_ex ibv_cq_ex;
	};
	struct mrce_ring ring;  /* consumer side; guarded by lock */
	pthread_spinlock_t lock;
	void *map;
	size_t map_size;
	const struct mrce_cqe *cur; /* start_poll .. end_poll: the entry read */
	uint32_t seen_notify;   /* notify_count values turned into events */
	uint32_t events_given;  /* events returned by ibv_get_cq_event */
	uint32_t async_given;   /* async events returned for this CQ */
	uint32_t empty_polls;   /* to check for a dead daemon now and then */
	struct mrce_cq *next_in_chan;
	struct mrce_cq *next_in_ctx;
};

struct mrce_srq {
	struct ibv_srq ibv_srq;
	struct mrce_ring ring;  /* producer side; guarded by lock */
	pthread_spinlock_t lock;
	uint32_t max_wr;
	uint32_t max_sge;
	void *map;
	size_t map_size;
	uint32_t async_given;   /* async events returned for this SRQ */
	struct mrce_srq *next_in_ctx;
};

/* An address handle lives in the provider only: it becomes WQE fields. */
struct mrce_ah {
	struct ibv_ah ibv_ah;
	struct ibv_ah_attr attr;
	uint32_t dest_ipv4;     /* dgid bytes 12..15, network order; 0: IPv6 */
};

/* struct ibv_qp_ex starts with a struct ibv_qp, so every QP is one. */
struct mrce_qp {
	union {
		struct ibv_qp ibv_qp;
		struct ibv_qp_ex ibv_qp_ex;
	};
	struct mrce_ring sq;    /* producer side; guarded by sq_lock */
	struct mrce_ring rq;    /* producer side; guarded by rq_lock */
	pthread_spinlock_t sq_lock;
	pthread_spinlock_t rq_lock;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	bool has_rq;            /* false on a QP that takes receives from an SRQ */
	bool is_qp_ex;          /* made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
	uint64_t send_ops_flags;
	/* ibv_wr_* state between wr_start and wr_complete/wr_abort. */
	uint32_t wr_first;      /* sq.cached_prod at wr_start */
	struct mrce_wqe *wr_cur;
	int wr_err;
	uint32_t async_given;   /* async events returned for this QP */
	void *map;
	size_t map_size;
	struct mrce_qp *next_in_ctx;
};

/* Removes an object from one of the context's lists (under obj_lock). */
#define MRCE_UNLINK(head, obj)                                         \
	do {                                                           \
		__typeof__(obj) *pp_;                                  \
		for (pp_ = &(head); *pp_; pp_ = &(*pp_)->next_in_ctx) { \
			if (*pp_ == (obj)) {                           \
				*pp_ = (obj)->next_in_ctx;             \
				break;                                 \
			}                                              \
		}                                                      \
	} while (0)

static inline struct mrce_context *to_mctx(struct ibv_context *ctx)
{
	return container_of(container_of(ctx, struct verbs_context, context),
			    struct mrce_context, vctx);
}

static inline struct mrce_pd *to_mpd(struct ibv_pd *pd)
{
	return container_of(pd, struct mrce_pd, ibv_pd);
}

static inline struct mrce_mr *to_mmr(struct ibv_mr *mr)
{
	return container_of(mr, struct mrce_mr, ibv_mr);
}

static inline struct mrce_cq *to_mcq(struct ibv_cq *cq)
{
	return container_of(cq, struct mrce_cq, ibv_cq);
}

static inline struct mrce_qp *to_mqp(struct ibv_qp *qp)
{
	return container_of(qp, struct mrce_qp, ibv_qp);
}

static inline struct mrce_qp *to_mqpx(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct mrce_qp, ibv_qp_ex);
}

static inline struct mrce_cq *to_mcqx(struct ibv_cq_ex *cqx)
{
	return container_of(cqx, struct mrce_cq, ibv_cq_ex);
}

static inline struct mrce_srq *to_msrq(struct ibv_srq *srq)
{
	return container_of(srq, struct mrce_srq, ibv_srq);
}

static inline struct mrce_ah *to_mah(struct ibv_ah *ah)
{
	return container_of(ah, struct mrce_ah, ibv_ah);
}

static inline struct mrce_comp_channel *
to_mchan(struct ibv_comp_channel *chan)
{
	return container_of(chan, struct mrce_comp_channel, ibv_chan);
}

/* mrce_device.c */
extern struct mrce_device mrce_devs[MRCE_MAX_DEVS];
#define mrce_dev (mrce_devs[0]) /* the first slot: mrce0 on a one-NIC host */

/* Our device behind DEV, or NULL when DEV is not one of ours. */
static inline struct mrce_device *to_mdev(const struct ibv_device *dev)
{
	uintptr_t p = (uintptr_t)dev, base = (uintptr_t)&mrce_devs[0];

	if (p < base || p >= base + sizeof(mrce_devs) ||
	    (p - base) % sizeof(struct mrce_device))
		return NULL;
	return &mrce_devs[(p - base) / sizeof(struct mrce_device)];
}

static inline bool is_mrce_dev(const struct ibv_device *dev)
{
	return to_mdev(dev) != NULL;
}

static inline bool is_mrce_ctx(const struct ibv_context *ctx)
{
	return ctx && is_mrce_dev(ctx->device);
}

struct ibv_device **mrce_wrap_device_list(struct ibv_device **real,
					  int *num_devices);
struct ibv_device **mrce_unwrap_device_list(struct ibv_device **list);
struct ibv_context *mrce_open_device(struct ibv_device *dev);
struct ibv_device *mrce_context_fd_device(int cmd_fd);
struct ibv_context *mrce_import_device(struct ibv_device *dev, int cmd_fd);
int mrce_close_device(struct ibv_context *ctx);
int mrce_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr);
int mrce_query_port(struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr, size_t attr_len);
int mrce_query_gid(struct ibv_context *ctx, uint8_t port, int index,
		   union ibv_gid *gid);
int mrce_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		      struct ibv_gid_entry *entry, size_t entry_size);
ssize_t mrce_query_gid_table(struct ibv_context *ctx,
			     struct ibv_gid_entry *entries, size_t max,
			     size_t entry_size);
int mrce_query_gid_type(struct ibv_context *ctx, uint8_t port,
			unsigned int index, int *type);
struct ifaddrs;
unsigned int mrce_gid_table_build(const uint8_t gid0[16],
				  const struct ifaddrs *ifa_list,
				  const char *ifname, union ibv_gid *tbl,
				  unsigned int max);
int mrce_query_pkey(struct ibv_context *ctx, uint8_t port, int index,
		    __be16 *pkey);
int mrce_query_device_ex(struct ibv_context *ctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
void mrce_odp_caps(struct ibv_odp_caps *caps, enum ibv_atomic_cap atomic);
int mrce_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev);
bool mrce_nl_addr_change(const void *buf, size_t len, int ifindex);
int mrce_nl_filter(int fd, int ifindex);
void mrce_async_fds_init(struct mrce_context *ctx, int efd);
void mrce_ack_async_event(struct ibv_async_event *ev);
bool mrce_translate_async_event(struct mrce_context *ctx,
				const struct mrce_async_event *in,
				struct ibv_async_event *out);

/* mrce_verbs.c: control-path verbs */
struct ibv_pd *mrce_alloc_pd(struct ibv_context *ctx);
int mrce_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *mrce_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t iova, unsigned int access);
int mrce_dereg_mr(struct ibv_mr *mr);

/* mrce_shared_mr.c: opt-in regions the daemon maps (METAROCE_SHARED_MR=1) */
struct mrce_conn;
void mrce_share_mr(struct mrce_conn *conn, struct mrce_mr *mr, unsigned int access);
void mrce_unshare_mr(struct mrce_mr *mr);
struct ibv_pd *mrce_import_pd(struct ibv_context *ctx, uint32_t pd_handle);
void mrce_unimport_pd(struct ibv_pd *pd);
struct ibv_mr *mrce_import_mr(struct ibv_pd *pd, uint32_t mr_handle);
void mrce_unimport_mr(struct ibv_mr *mr);
int mrce_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
int mrce_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		  size_t length, int access);
struct ibv_comp_channel *mrce_create_comp_channel(struct ibv_context *ctx);
int mrce_destroy_comp_channel(struct ibv_comp_channel *chan);
struct ibv_cq *mrce_create_cq(struct ibv_context *ctx, int cqe,
			      void *cq_context, struct ibv_comp_channel *chan,
			      int comp_vector);
struct ibv_cq_ex *mrce_create_cq_ex(struct ibv_context *ctx,
				   struct ibv_cq_init_attr_ex *attr);
int mrce_destroy_cq(struct ibv_cq *cq);
bool mrce_wait_restarts(void);
int mrce_get_cq_event(struct ibv_comp_channel *chan, struct ibv_cq **cq,
		      void **cq_context);
void mrce_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);
struct ibv_qp *mrce_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr);
int mrce_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int mrce_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr);
int mrce_destroy_qp(struct ibv_qp *qp);
struct ibv_qp *mrce_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr);
struct ibv_qp_ex *mrce_qp_to_qp_ex(struct ibv_qp *qp);

/* mrce_srq_ah.c: shared receive queues and address handles */
struct ibv_srq *mrce_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
struct ibv_srq *mrce_create_srq_ex(struct ibv_context *ctx,
				   struct ibv_srq_init_attr_ex *attr);
int mrce_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int mrce_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int mrce_destroy_srq(struct ibv_srq *srq);
int mrce_ah_attr_check(const struct mrce_context *ctx,
		       const struct ibv_ah_attr *attr, uint32_t *dest_ipv4);
struct ibv_ah *mrce_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int mrce_destroy_ah(struct ibv_ah *ah);
int mrce_init_ah_from_wc(struct ibv_context *ctx, uint8_t port_num,
			 const struct ibv_wc *wc, const struct ibv_grh *grh,
			 struct ibv_ah_attr *ah_attr);
struct ibv_ah *mrce_create_ah_from_wc(struct ibv_pd *pd,
				      const struct ibv_wc *wc,
				      const struct ibv_grh *grh,
				      uint8_t port_num);

/* mrce_datapath.c: the context.ops entries */
int mrce_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int mrce_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int mrce_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int mrce_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int mrce_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
bool mrce_ctx_check_dead(struct mrce_context *ctx);
int mrce_build_send_wqe(struct mrce_qp *qp, struct mrce_wqe *wqe,
			const struct ibv_send_wr *wr);
void mrce_qp_ex_init(struct mrce_qp *qp);
void mrce_cq_ex_init(struct mrce_cq *cq);
/* wc_flags of ibv_create_cq_ex that our CQEs carry. */
#define MRCE_CQ_EX_WC_FLAGS ((uint64_t)IBV_WC_STANDARD_FLAGS)
/* send_ops_flags of ibv_create_qp_ex per QP type. */
#define MRCE_RC_SEND_OPS                                                  \
	((uint64_t)(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |  \
		    IBV_QP_EX_WITH_RDMA_WRITE |                            \
		    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                   \
		    IBV_QP_EX_WITH_RDMA_READ |                             \
		    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                    \
		    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
#define MRCE_UD_SEND_OPS \
	((uint64_t)(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM))

/* mrce_ctrl.c: the local control protocol */
int mrce_sock_path(char *buf, size_t len);
int mrce_sock_paths(char (*paths)[MRCE_SOCK_PATH_MAX], int max);
int mrce_conn_open_at(struct mrce_conn *conn, const char *path,
		      int timeout_ms);
int mrce_conn_open(struct mrce_conn *conn, int timeout_ms);
/* Whole-buffer send and exact-length receive on a control socket (EIO when it breaks). */
int mrce_send_all(int fd, const void *buf, size_t len);
int mrce_recv_exact(int fd, void *buf, size_t len, int *fds, unsigned int max,
		    unsigned int *nfds);
void mrce_conn_close(struct mrce_conn *conn);
int mrce_conn_call(struct mrce_conn *conn, uint16_t op, const void *req,
		   uint32_t req_len, void *resp, uint32_t resp_len, int *fds,
		   unsigned int nfds);
int mrce_hello(struct mrce_conn *conn, struct mrce_hello_resp *resp,
	       int *fds, uint32_t flags);

#endif /* MRCE_H */
