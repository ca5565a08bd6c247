// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_interpose.c - every exported ibv_* verb that can see a MetaRoCE device
 * or object. Loaded with LD_PRELOAD, these definitions come before
 * libibverbs' own: each one serves our objects and hands everything else to
 * the real libibverbs, found lazily with dlvsym(RTLD_NEXT, name, version).
 *
 * libmetaroce.map gives each symbol the default version libibverbs gives it,
 * so apps linked against those versions bind here and old IBVERBS_1.0
 * callers keep libibverbs' compat path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mrce.h"

/* verbs.h turns these into inline wrappers; we define the symbols. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define EXPORT __attribute__((visibility("default")))

#ifndef MRCE_PRIVATE_VER
#define MRCE_PRIVATE_VER "IBVERBS_PRIVATE_34"
#endif

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type);

#define MRCE_REAL_SYMS(X)                                   \
	X(ibv_get_device_list, "IBVERBS_1.1")               \
	X(ibv_free_device_list, "IBVERBS_1.1")              \
	X(ibv_get_device_name, "IBVERBS_1.1")               \
	X(ibv_get_device_guid, "IBVERBS_1.1")               \
	X(ibv_get_device_index, "IBVERBS_1.9")              \
	X(ibv_open_device, "IBVERBS_1.1")                   \
	X(ibv_close_device, "IBVERBS_1.1")                  \
	X(ibv_get_async_event, "IBVERBS_1.1")               \
	X(ibv_ack_async_event, "IBVERBS_1.1")               \
	X(ibv_fork_init, "IBVERBS_1.1")                     \
	X(ibv_query_device, "IBVERBS_1.1")                  \
	X(ibv_query_port, "IBVERBS_1.1")                    \
	X(ibv_query_gid, "IBVERBS_1.1")                     \
	X(_ibv_query_gid_ex, "IBVERBS_1.11")                \
	X(_ibv_query_gid_table, "IBVERBS_1.11")             \
	X(ibv_query_gid_type, MRCE_PRIVATE_VER)             \
	X(ibv_query_pkey, "IBVERBS_1.1")                    \
	X(ibv_get_pkey_index, "IBVERBS_1.5")                \
	X(ibv_alloc_pd, "IBVERBS_1.1")                      \
	X(ibv_dealloc_pd, "IBVERBS_1.1")                    \
	X(ibv_reg_mr, "IBVERBS_1.1")                        \
	X(ibv_reg_mr_iova, "IBVERBS_1.7")                   \
	X(ibv_reg_mr_iova2, "IBVERBS_1.8")                  \
	X(ibv_reg_dmabuf_mr, "IBVERBS_1.12")                \
	X(ibv_rereg_mr, "IBVERBS_1.1")                      \
	X(ibv_dereg_mr, "IBVERBS_1.1")                      \
	X(ibv_import_device, "IBVERBS_1.10")                \
	X(ibv_import_pd, "IBVERBS_1.10")                    \
	X(ibv_unimport_pd, "IBVERBS_1.10")                  \
	X(ibv_import_mr, "IBVERBS_1.10")                    \
	X(ibv_unimport_mr, "IBVERBS_1.10")                  \
	X(ibv_import_dm, "IBVERBS_1.13")                    \
	X(ibv_unimport_dm, "IBVERBS_1.13")                  \
	X(ibv_create_comp_channel, "IBVERBS_1.0")           \
	X(ibv_destroy_comp_channel, "IBVERBS_1.0")          \
	X(ibv_create_cq, "IBVERBS_1.1")                     \
	X(ibv_resize_cq, "IBVERBS_1.1")                     \
	X(ibv_destroy_cq, "IBVERBS_1.1")                    \
	X(ibv_get_cq_event, "IBVERBS_1.1")                  \
	X(ibv_ack_cq_events, "IBVERBS_1.1")                 \
	X(ibv_create_srq, "IBVERBS_1.1")                    \
	X(ibv_modify_srq, "IBVERBS_1.1")                    \
	X(ibv_query_srq, "IBVERBS_1.1")                     \
	X(ibv_destroy_srq, "IBVERBS_1.1")                   \
	X(ibv_create_qp, "IBVERBS_1.1")                     \
	X(ibv_modify_qp, "IBVERBS_1.1")                     \
	X(ibv_query_qp, "IBVERBS_1.1")                      \
	X(ibv_destroy_qp, "IBVERBS_1.1")                    \
	X(ibv_qp_to_qp_ex, "IBVERBS_1.6")                   \
	X(ibv_query_qp_data_in_order, "IBVERBS_1.14")       \
	X(ibv_query_ece, "IBVERBS_1.10")                    \
	X(ibv_set_ece, "IBVERBS_1.10")                      \
	X(ibv_create_ah, "IBVERBS_1.1")                     \
	X(ibv_destroy_ah, "IBVERBS_1.1")                    \
	X(ibv_init_ah_from_wc, "IBVERBS_1.1")               \
	X(ibv_create_ah_from_wc, "IBVERBS_1.1")             \
	X(ibv_attach_mcast, "IBVERBS_1.1")                  \
	X(ibv_detach_mcast, "IBVERBS_1.1")                  \
	X(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1")

static struct {
#define MRCE_REAL_FIELD(name, ver) __typeof__(&name) name;
	MRCE_REAL_SYMS(MRCE_REAL_FIELD)
#undef MRCE_REAL_FIELD
} real;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void mrce_resolve_real(void)
{
#define MRCE_REAL_RESOLVE(name, ver) \
	real.name = (__typeof__(&name))dlvsym(RTLD_NEXT, #name, ver);
	MRCE_REAL_SYMS(MRCE_REAL_RESOLVE)
#undef MRCE_REAL_RESOLVE
}

/*
 * The real libibverbs function, or `fail` with errno ENOSYS when this
 * libibverbs lacks it.
 */
#define REAL(name, fail, ...)                                       \
	({                                                          \
		pthread_once(&real_once, mrce_resolve_real);        \
		real.name ? real.name(__VA_ARGS__) :                \
			    (errno = ENOSYS, (__typeof__(fail))(fail)); \
	})

#define REAL_VOID(name, ...)                                 \
	do {                                                 \
		pthread_once(&real_once, mrce_resolve_real); \
		if (real.name)                               \
			real.name(__VA_ARGS__);              \
	} while (0)

/* The verbs convention for our unsupported verbs. */
#define MRCE_NULL_ERRNO(e) \
	({                 \
		errno = (e);       \
		NULL;              \
	})

/* ------------------------------------------------------------ devices */

EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list, **all;
	int saved;

	list = REAL(ibv_get_device_list, (struct ibv_device **)NULL, NULL);
	saved = errno;
	all = mrce_wrap_device_list(list, num_devices);
	if (!all) {
		if (list)
			REAL_VOID(ibv_free_device_list, list);
		return NULL;
	}
	if (!list && !all[0]) {
		/* Neither a real device nor ours: keep libibverbs' answer. */
		mrce_unwrap_device_list(all);
		errno = saved;
		return NULL;
	}
	return all;
}

EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	struct ibv_device **real_list;

	if (!list)
		return;
	real_list = mrce_unwrap_device_list(list);
	if (real_list)
		REAL_VOID(ibv_free_device_list, real_list);
}

EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	if (is_mrce_dev(device))
		return device->name;
	return REAL(ibv_get_device_name, (const char *)NULL, device);
}

EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	if (is_mrce_dev(device))
		return to_mdev(device)->hello.node_guid;
	return REAL(ibv_get_device_guid, (__be64)0, device);
}

EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	if (is_mrce_dev(device))
		return -1; /* no kernel device behind it */
	return REAL(ibv_get_device_index, -1, device);
}

EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (is_mrce_dev(device))
		return mrce_open_device(device);
	return REAL(ibv_open_device, (struct ibv_context *)NULL, device);
}

EXPORT int ibv_close_device(struct ibv_context *context)
{
	if (is_mrce_ctx(context))
		return mrce_close_device(context);
	return REAL(ibv_close_device, -1, context);
}

EXPORT int ibv_get_async_event(struct ibv_context *context,
			       struct ibv_async_event *event)
{
	if (is_mrce_ctx(context))
		return mrce_get_async_event(context, event);
	return REAL(ibv_get_async_event, -1, context, event);
}

static bool mrce_event_is_ours(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq && is_mrce_ctx(ev->element.cq->context);
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return ev->element.srq &&
		       is_mrce_ctx(ev->element.srq->context);
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return ev->element.qp && is_mrce_ctx(ev->element.qp->context);
	default:
		return false; /* port/device/WQ events: nothing to count here */
	}
}

EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	if (mrce_event_is_ours(event))
		mrce_ack_async_event(event);
	else
		REAL_VOID(ibv_ack_async_event, event);
}

/*
 * Fork safety matters for memory a NIC DMAs into: the kernel pins it, and a
 * copy-on-write fault after fork() would leave the device writing to the
 * parent's old page. MetaRoCE pins nothing: the daemon reads and writes
 * registered memory with process_vm_readv/writev, which always resolve the
 * process's current pages. So for mrce0 there is nothing to set up; the
 * real ibv_fork_init still runs for any real device next to it.
 */
EXPORT int ibv_fork_init(void)
{
	/* A libibverbs without it: nothing to do for mrce0 either. */
	return REAL(ibv_fork_init, 0);
}

EXPORT int ibv_query_device(struct ibv_context *context,
			    struct ibv_device_attr *device_attr)
{
	if (is_mrce_ctx(context))
		return mrce_query_device(context, device_attr);
	return REAL(ibv_query_device, ENOSYS, context, device_attr);
}

/* Old binaries pass the pre-port_cap_flags2 layout. */
EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			  struct _compat_ibv_port_attr *port_attr)
{
	if (is_mrce_ctx(context))
		return mrce_query_port(context, port_num,
				       (struct ibv_port_attr *)port_attr,
				       offsetof(struct ibv_port_attr,
						port_cap_flags2));
	return REAL(ibv_query_port, ENOSYS, context, port_num, port_attr);
}

EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			 int index, union ibv_gid *gid)
{
	int ret;

	if (!is_mrce_ctx(context))
		return REAL(ibv_query_gid, -1, context, port_num, index, gid);
	ret = mrce_query_gid(context, port_num, index, gid);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
			     uint32_t gid_index, struct ibv_gid_entry *entry,
			     uint32_t flags, size_t entry_size)
{
	if (!is_mrce_ctx(context))
		return REAL(_ibv_query_gid_ex, ENOSYS, context, port_num,
			    gid_index, entry, flags, entry_size);
	if (flags)
		return EINVAL;
	return mrce_query_gid_ex(context, port_num, gid_index, entry,
				 entry_size);
}

EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
				    struct ibv_gid_entry *entries,
				    size_t max_entries, uint32_t flags,
				    size_t entry_size)
{
	if (!is_mrce_ctx(context))
		return REAL(_ibv_query_gid_table, (ssize_t)-ENOSYS, context,
			    entries, max_entries, flags, entry_size);
	if (flags)
		return -EINVAL;
	return mrce_query_gid_table(context, entries, max_entries,
				    entry_size);
}

EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
			      unsigned int index, int *type)
{
	int ret;

	if (!is_mrce_ctx(context))
		return REAL(ibv_query_gid_type, -1, context, port_num, index,
			    type);
	ret = mrce_query_gid_type(context, port_num, index, type);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			  int index, __be16 *pkey)
{
	int ret;

	if (!is_mrce_ctx(context))
		return REAL(ibv_query_pkey, -1, context, port_num, index,
			    pkey);
	ret = mrce_query_pkey(context, port_num, index, pkey);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
			      __be16 pkey)
{
	if (!is_mrce_ctx(context))
		return REAL(ibv_get_pkey_index, -1, context, port_num, pkey);
	if (port_num != MRCE_PORT || be16toh(pkey) != 0xffff) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* ----------------------------------------------------------- PD and MR */

EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	if (is_mrce_ctx(context))
		return mrce_alloc_pd(context);
	return REAL(ibv_alloc_pd, (struct ibv_pd *)NULL, context);
}

EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (is_mrce_ctx(pd->context))
		return mrce_dealloc_pd(pd);
	return REAL(ibv_dealloc_pd, ENOSYS, pd);
}

EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
				 int access)
{
	if (is_mrce_ctx(pd->context))
		return mrce_reg_mr(pd, addr, length, (uintptr_t)addr,
				   (unsigned int)access &
					   ~IBV_ACCESS_OPTIONAL_RANGE);
	return REAL(ibv_reg_mr, (struct ibv_mr *)NULL, pd, addr, length,
		    access);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
				      size_t length, uint64_t iova, int access)
{
	if (is_mrce_ctx(pd->context))
		return mrce_reg_mr(pd, addr, length, iova,
				   (unsigned int)access &
					   ~IBV_ACCESS_OPTIONAL_RANGE);
	return REAL(ibv_reg_mr_iova, (struct ibv_mr *)NULL, pd, addr, length,
		    iova, access);
}

EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
				       size_t length, uint64_t iova,
				       unsigned int access)
{
	if (is_mrce_ctx(pd->context))
		return mrce_reg_mr(pd, addr, length, iova,
				   access & ~IBV_ACCESS_OPTIONAL_RANGE);
	return REAL(ibv_reg_mr_iova2, (struct ibv_mr *)NULL, pd, addr,
		    length, iova, access);
}

EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access)
{
	if (is_mrce_ctx(pd->context))
		return MRCE_NULL_ERRNO(EOPNOTSUPP);
	return REAL(ibv_reg_dmabuf_mr, (struct ibv_mr *)NULL, pd, offset,
		    length, iova, fd, access);
}

EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access)
{
	if (is_mrce_ctx(mr->context))
		return mrce_rereg_mr(mr, flags, pd, addr, length, access);
	return REAL(ibv_rereg_mr, IBV_REREG_MR_ERR_INPUT, mr, flags, pd, addr,
		    length, access);
}

EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (is_mrce_ctx(mr->context))
		return mrce_dereg_mr(mr);
	return REAL(ibv_dereg_mr, ENOSYS, mr);
}

/*
 * An mrce context's cmd_fd is the context memfd the daemon made for it
 * (mrce_abi.h, "Sharing a context"); any other fd is the real libibverbs'.
 */
EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_device *dev = mrce_context_fd_device(cmd_fd);

	if (dev)
		return mrce_import_device(dev, cmd_fd);
	if (errno)
		return NULL; /* a context memfd of a device not seen here */
	return REAL(ibv_import_device, (struct ibv_context *)NULL, cmd_fd);
}

EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
				    uint32_t pd_handle)
{
	if (is_mrce_ctx(context))
		return mrce_import_pd(context, pd_handle);
	return REAL(ibv_import_pd, (struct ibv_pd *)NULL, context, pd_handle);
}

EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (is_mrce_ctx(pd->context))
		mrce_unimport_pd(pd);
	else
		REAL_VOID(ibv_unimport_pd, pd);
}

EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	if (is_mrce_ctx(pd->context))
		return mrce_import_mr(pd, mr_handle);
	return REAL(ibv_import_mr, (struct ibv_mr *)NULL, pd, mr_handle);
}

EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (is_mrce_ctx(mr->context))
		mrce_unimport_mr(mr);
	else
		REAL_VOID(ibv_unimport_mr, mr);
}

EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
				    uint32_t dm_handle)
{
	if (is_mrce_ctx(context))
		return MRCE_NULL_ERRNO(EOPNOTSUPP);
	return REAL(ibv_import_dm, (struct ibv_dm *)NULL, context, dm_handle);
}

EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	if (!is_mrce_ctx(dm->context))
		REAL_VOID(ibv_unimport_dm, dm);
}

/* ----------------------------------------------------- CQs and channels */

EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	if (is_mrce_ctx(context))
		return mrce_create_comp_channel(context);
	return REAL(ibv_create_comp_channel, (struct ibv_comp_channel *)NULL,
		    context);
}

EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (is_mrce_ctx(channel->context))
		return mrce_destroy_comp_channel(channel);
	return REAL(ibv_destroy_comp_channel, ENOSYS, channel);
}

EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
				    void *cq_context,
				    struct ibv_comp_channel *channel,
				    int comp_vector)
{
	if (is_mrce_ctx(context))
		return mrce_create_cq(context, cqe, cq_context, channel,
				      comp_vector);
	return REAL(ibv_create_cq, (struct ibv_cq *)NULL, context, cqe,
		    cq_context, channel, comp_vector);
}

EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (is_mrce_ctx(cq->context))
		return EOPNOTSUPP;
	return REAL(ibv_resize_cq, ENOSYS, cq, cqe);
}

EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (is_mrce_ctx(cq->context))
		return mrce_destroy_cq(cq);
	return REAL(ibv_destroy_cq, ENOSYS, cq);
}

EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
			    struct ibv_cq **cq, void **cq_context)
{
	if (is_mrce_ctx(channel->context))
		return mrce_get_cq_event(channel, cq, cq_context);
	return REAL(ibv_get_cq_event, -1, channel, cq, cq_context);
}

EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (is_mrce_ctx(cq->context))
		mrce_ack_cq_events(cq, nevents);
	else
		REAL_VOID(ibv_ack_cq_events, cq, nevents);
}

/* ------------------------------------------------------------------ SRQ */

EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr)
{
	if (is_mrce_ctx(pd->context))
		return mrce_create_srq(pd, srq_init_attr);
	return REAL(ibv_create_srq, (struct ibv_srq *)NULL, pd, srq_init_attr);
}

EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask)
{
	if (is_mrce_ctx(srq->context))
		return mrce_modify_srq(srq, srq_attr, srq_attr_mask);
	return REAL(ibv_modify_srq, ENOSYS, srq, srq_attr, srq_attr_mask);
}

EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	if (is_mrce_ctx(srq->context))
		return mrce_query_srq(srq, srq_attr);
	return REAL(ibv_query_srq, ENOSYS, srq, srq_attr);
}

EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	if (is_mrce_ctx(srq->context))
		return mrce_destroy_srq(srq);
	return REAL(ibv_destroy_srq, ENOSYS, srq);
}

/* ------------------------------------------------------------------- QP */

EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *qp_init_attr)
{
	if (is_mrce_ctx(pd->context))
		return mrce_create_qp(pd, qp_init_attr);
	return REAL(ibv_create_qp, (struct ibv_qp *)NULL, pd, qp_init_attr);
}

EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask)
{
	if (is_mrce_ctx(qp->context))
		return mrce_modify_qp(qp, attr, attr_mask);
	return REAL(ibv_modify_qp, ENOSYS, qp, attr, attr_mask);
}

EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	if (is_mrce_ctx(qp->context))
		return mrce_query_qp(qp, attr, attr_mask, init_attr);
	return REAL(ibv_query_qp, ENOSYS, qp, attr, attr_mask, init_attr);
}

EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (is_mrce_ctx(qp->context))
		return mrce_destroy_qp(qp);
	return REAL(ibv_destroy_qp, ENOSYS, qp);
}

EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (is_mrce_ctx(qp->context))
		return mrce_qp_to_qp_ex(qp);
	return REAL(ibv_qp_to_qp_ex, (struct ibv_qp_ex *)NULL, qp);
}

EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags)
{
	/* Packets are placed as they arrive: no ordering promise. */
	if (is_mrce_ctx(qp->context))
		return 0;
	return REAL(ibv_query_qp_data_in_order, 0, qp, op, flags);
}

EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (is_mrce_ctx(qp->context))
		return EOPNOTSUPP;
	return REAL(ibv_query_ece, ENOSYS, qp, ece);
}

EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (is_mrce_ctx(qp->context))
		return EOPNOTSUPP;
	return REAL(ibv_set_ece, ENOSYS, qp, ece);
}

EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid)
{
	if (is_mrce_ctx(qp->context))
		return EOPNOTSUPP;
	return REAL(ibv_attach_mcast, ENOSYS, qp, gid, lid);
}

EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid)
{
	if (is_mrce_ctx(qp->context))
		return EOPNOTSUPP;
	return REAL(ibv_detach_mcast, ENOSYS, qp, gid, lid);
}

/* ------------------------------------------------------------------- AH */

EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	if (is_mrce_ctx(pd->context))
		return mrce_create_ah(pd, attr);
	return REAL(ibv_create_ah, (struct ibv_ah *)NULL, pd, attr);
}

EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (is_mrce_ctx(ah->context))
		return mrce_destroy_ah(ah);
	return REAL(ibv_destroy_ah, ENOSYS, ah);
}

EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
			       struct ibv_wc *wc, struct ibv_grh *grh,
			       struct ibv_ah_attr *ah_attr)
{
	if (is_mrce_ctx(context)) {
		int ret = mrce_init_ah_from_wc(context, port_num, wc, grh,
					       ah_attr);

		if (ret) {
			errno = ret;
			return -1;
		}
		return 0;
	}
	return REAL(ibv_init_ah_from_wc, -1, context, port_num, wc, grh,
		    ah_attr);
}

EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
					    struct ibv_wc *wc,
					    struct ibv_grh *grh,
					    uint8_t port_num)
{
	if (is_mrce_ctx(pd->context))
		return mrce_create_ah_from_wc(pd, wc, grh, port_num);
	return REAL(ibv_create_ah_from_wc, (struct ibv_ah *)NULL, pd, wc, grh,
		    port_num);
}

EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				       struct ibv_ah_attr *attr,
				       uint8_t eth_mac[ETHERNET_LL_SIZE],
				       uint16_t *vid)
{
	if (is_mrce_ctx(context))
		return EOPNOTSUPP;
	return REAL(ibv_resolve_eth_l2_from_gid, ENOSYS, context, attr,
		    eth_mac, vid);
}
