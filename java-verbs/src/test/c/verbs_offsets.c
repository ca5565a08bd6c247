// SPDX-License-Identifier: Apache-2.0
/*
 * verbs_offsets.c - prints the size and field offsets of every struct of
 * <infiniband/verbs.h> that java-verbs reads or writes, one "NAME VALUE" line
 * each, so LayoutAgreementTest can compare them with io.metaroce.verbs.Abi.
 * NAME is "struct.field" (nested fields with '.') or "struct.sizeof".
 */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#define OFF(s, f) printf("%s.%s %zu\n", #s, #f, offsetof(struct s, f))
#define CONST(c) printf("const.%s %lld\n", #c, (long long)(c))
#define SIZE(s) printf("%s.sizeof %zu\n", #s, sizeof(struct s))

int main(void)
{
	SIZE(ibv_context);
	OFF(ibv_context, device);
	OFF(ibv_context, ops);
	OFF(ibv_context, cmd_fd);
	OFF(ibv_context, async_fd);
	OFF(ibv_context, num_comp_vectors);
	OFF(ibv_context_ops, poll_cq);
	OFF(ibv_context_ops, req_notify_cq);
	OFF(ibv_context_ops, post_srq_recv);
	OFF(ibv_context_ops, post_send);
	OFF(ibv_context_ops, post_recv);

	OFF(ibv_device, node_type);
	OFF(ibv_device, transport_type);
	OFF(ibv_device, name);

	OFF(ibv_pd, context);
	OFF(ibv_pd, handle);

	OFF(ibv_mr, context);
	OFF(ibv_mr, pd);
	OFF(ibv_mr, addr);
	OFF(ibv_mr, length);
	OFF(ibv_mr, handle);
	OFF(ibv_mr, lkey);
	OFF(ibv_mr, rkey);

	OFF(ibv_comp_channel, context);
	OFF(ibv_comp_channel, fd);

	OFF(ibv_cq, context);
	OFF(ibv_cq, channel);
	OFF(ibv_cq, cq_context);
	OFF(ibv_cq, handle);
	OFF(ibv_cq, cqe);

	OFF(ibv_srq, context);
	OFF(ibv_srq, srq_context);
	OFF(ibv_srq, pd);
	OFF(ibv_srq, handle);

	OFF(ibv_qp, context);
	OFF(ibv_qp, qp_context);
	OFF(ibv_qp, pd);
	OFF(ibv_qp, send_cq);
	OFF(ibv_qp, recv_cq);
	OFF(ibv_qp, srq);
	OFF(ibv_qp, handle);
	OFF(ibv_qp, qp_num);
	OFF(ibv_qp, state);
	OFF(ibv_qp, qp_type);

	OFF(ibv_ah, context);
	OFF(ibv_ah, pd);
	OFF(ibv_ah, handle);

	SIZE(ibv_sge);
	OFF(ibv_sge, addr);
	OFF(ibv_sge, length);
	OFF(ibv_sge, lkey);

	SIZE(ibv_send_wr);
	OFF(ibv_send_wr, wr_id);
	OFF(ibv_send_wr, next);
	OFF(ibv_send_wr, sg_list);
	OFF(ibv_send_wr, num_sge);
	OFF(ibv_send_wr, opcode);
	OFF(ibv_send_wr, send_flags);
	OFF(ibv_send_wr, imm_data);
	OFF(ibv_send_wr, invalidate_rkey);
	OFF(ibv_send_wr, wr.rdma.remote_addr);
	OFF(ibv_send_wr, wr.rdma.rkey);
	OFF(ibv_send_wr, wr.atomic.remote_addr);
	OFF(ibv_send_wr, wr.atomic.compare_add);
	OFF(ibv_send_wr, wr.atomic.swap);
	OFF(ibv_send_wr, wr.atomic.rkey);
	OFF(ibv_send_wr, wr.ud.ah);
	OFF(ibv_send_wr, wr.ud.remote_qpn);
	OFF(ibv_send_wr, wr.ud.remote_qkey);

	SIZE(ibv_recv_wr);
	OFF(ibv_recv_wr, wr_id);
	OFF(ibv_recv_wr, next);
	OFF(ibv_recv_wr, sg_list);
	OFF(ibv_recv_wr, num_sge);

	SIZE(ibv_async_event);
	OFF(ibv_async_event, element);
	OFF(ibv_async_event, event_type);
	CONST(IBV_EVENT_CQ_ERR);
	CONST(IBV_EVENT_QP_FATAL);
	CONST(IBV_EVENT_QP_REQ_ERR);
	CONST(IBV_EVENT_QP_ACCESS_ERR);
	CONST(IBV_EVENT_COMM_EST);
	CONST(IBV_EVENT_SQ_DRAINED);
	CONST(IBV_EVENT_PATH_MIG);
	CONST(IBV_EVENT_PATH_MIG_ERR);
	CONST(IBV_EVENT_DEVICE_FATAL);
	CONST(IBV_EVENT_PORT_ACTIVE);
	CONST(IBV_EVENT_PORT_ERR);
	CONST(IBV_EVENT_LID_CHANGE);
	CONST(IBV_EVENT_PKEY_CHANGE);
	CONST(IBV_EVENT_SM_CHANGE);
	CONST(IBV_EVENT_SRQ_ERR);
	CONST(IBV_EVENT_SRQ_LIMIT_REACHED);
	CONST(IBV_EVENT_QP_LAST_WQE_REACHED);
	CONST(IBV_EVENT_CLIENT_REREGISTER);
	CONST(IBV_EVENT_GID_CHANGE);
	CONST(IBV_EVENT_WQ_FATAL);

	SIZE(ibv_wc);
	OFF(ibv_wc, wr_id);
	OFF(ibv_wc, status);
	OFF(ibv_wc, opcode);
	OFF(ibv_wc, vendor_err);
	OFF(ibv_wc, byte_len);
	OFF(ibv_wc, imm_data);
	OFF(ibv_wc, qp_num);
	OFF(ibv_wc, src_qp);
	OFF(ibv_wc, wc_flags);
	OFF(ibv_wc, pkey_index);
	OFF(ibv_wc, slid);
	OFF(ibv_wc, sl);
	OFF(ibv_wc, dlid_path_bits);

	SIZE(ibv_qp_cap);
	OFF(ibv_qp_cap, max_send_wr);
	OFF(ibv_qp_cap, max_recv_wr);
	OFF(ibv_qp_cap, max_send_sge);
	OFF(ibv_qp_cap, max_recv_sge);
	OFF(ibv_qp_cap, max_inline_data);

	SIZE(ibv_qp_init_attr);
	OFF(ibv_qp_init_attr, qp_context);
	OFF(ibv_qp_init_attr, send_cq);
	OFF(ibv_qp_init_attr, recv_cq);
	OFF(ibv_qp_init_attr, srq);
	OFF(ibv_qp_init_attr, cap);
	OFF(ibv_qp_init_attr, qp_type);
	OFF(ibv_qp_init_attr, sq_sig_all);

	SIZE(ibv_global_route);
	OFF(ibv_global_route, dgid);
	OFF(ibv_global_route, flow_label);
	OFF(ibv_global_route, sgid_index);
	OFF(ibv_global_route, hop_limit);
	OFF(ibv_global_route, traffic_class);

	SIZE(ibv_ah_attr);
	OFF(ibv_ah_attr, grh);
	OFF(ibv_ah_attr, dlid);
	OFF(ibv_ah_attr, sl);
	OFF(ibv_ah_attr, src_path_bits);
	OFF(ibv_ah_attr, static_rate);
	OFF(ibv_ah_attr, is_global);
	OFF(ibv_ah_attr, port_num);

	SIZE(ibv_qp_attr);
	OFF(ibv_qp_attr, qp_state);
	OFF(ibv_qp_attr, cur_qp_state);
	OFF(ibv_qp_attr, path_mtu);
	OFF(ibv_qp_attr, path_mig_state);
	OFF(ibv_qp_attr, qkey);
	OFF(ibv_qp_attr, rq_psn);
	OFF(ibv_qp_attr, sq_psn);
	OFF(ibv_qp_attr, dest_qp_num);
	OFF(ibv_qp_attr, qp_access_flags);
	OFF(ibv_qp_attr, cap);
	OFF(ibv_qp_attr, ah_attr);
	OFF(ibv_qp_attr, alt_ah_attr);
	OFF(ibv_qp_attr, pkey_index);
	OFF(ibv_qp_attr, alt_pkey_index);
	OFF(ibv_qp_attr, en_sqd_async_notify);
	OFF(ibv_qp_attr, sq_draining);
	OFF(ibv_qp_attr, max_rd_atomic);
	OFF(ibv_qp_attr, max_dest_rd_atomic);
	OFF(ibv_qp_attr, min_rnr_timer);
	OFF(ibv_qp_attr, port_num);
	OFF(ibv_qp_attr, timeout);
	OFF(ibv_qp_attr, retry_cnt);
	OFF(ibv_qp_attr, rnr_retry);
	OFF(ibv_qp_attr, alt_port_num);
	OFF(ibv_qp_attr, alt_timeout);
	OFF(ibv_qp_attr, rate_limit);

	SIZE(ibv_srq_attr);
	OFF(ibv_srq_attr, max_wr);
	OFF(ibv_srq_attr, max_sge);
	OFF(ibv_srq_attr, srq_limit);
	SIZE(ibv_srq_init_attr);
	OFF(ibv_srq_init_attr, srq_context);
	OFF(ibv_srq_init_attr, attr);

	SIZE(ibv_port_attr);
	OFF(ibv_port_attr, state);
	OFF(ibv_port_attr, max_mtu);
	OFF(ibv_port_attr, active_mtu);
	OFF(ibv_port_attr, gid_tbl_len);
	OFF(ibv_port_attr, port_cap_flags);
	OFF(ibv_port_attr, max_msg_sz);
	OFF(ibv_port_attr, lid);
	OFF(ibv_port_attr, sm_lid);
	OFF(ibv_port_attr, active_width);
	OFF(ibv_port_attr, active_speed);
	OFF(ibv_port_attr, phys_state);
	OFF(ibv_port_attr, link_layer);

	SIZE(ibv_device_attr);
	OFF(ibv_device_attr, fw_ver);
	OFF(ibv_device_attr, node_guid);
	OFF(ibv_device_attr, sys_image_guid);
	OFF(ibv_device_attr, max_mr_size);
	OFF(ibv_device_attr, vendor_id);
	OFF(ibv_device_attr, vendor_part_id);
	OFF(ibv_device_attr, max_qp);
	OFF(ibv_device_attr, max_qp_wr);
	OFF(ibv_device_attr, device_cap_flags);
	OFF(ibv_device_attr, max_sge);
	OFF(ibv_device_attr, max_cq);
	OFF(ibv_device_attr, max_cqe);
	OFF(ibv_device_attr, max_mr);
	OFF(ibv_device_attr, max_pd);
	OFF(ibv_device_attr, max_qp_rd_atom);
	OFF(ibv_device_attr, max_qp_init_rd_atom);
	OFF(ibv_device_attr, atomic_cap);
	OFF(ibv_device_attr, max_ah);
	OFF(ibv_device_attr, max_srq);
	OFF(ibv_device_attr, max_srq_wr);
	OFF(ibv_device_attr, max_srq_sge);
	OFF(ibv_device_attr, phys_port_cnt);

	printf("ibv_gid.sizeof %zu\n", sizeof(union ibv_gid));

	/* enum and flag values, printed as "const.NAME VALUE" */
	CONST(IBV_WR_RDMA_WRITE);
	CONST(IBV_WR_RDMA_WRITE_WITH_IMM);
	CONST(IBV_WR_SEND);
	CONST(IBV_WR_SEND_WITH_IMM);
	CONST(IBV_WR_RDMA_READ);
	CONST(IBV_WR_ATOMIC_CMP_AND_SWP);
	CONST(IBV_WR_ATOMIC_FETCH_AND_ADD);
	CONST(IBV_WC_SEND);
	CONST(IBV_WC_RDMA_WRITE);
	CONST(IBV_WC_RDMA_READ);
	CONST(IBV_WC_COMP_SWAP);
	CONST(IBV_WC_FETCH_ADD);
	CONST(IBV_WC_RECV);
	CONST(IBV_WC_RECV_RDMA_WITH_IMM);
	CONST(IBV_WC_WITH_IMM);
	CONST(IBV_WC_GRH);
	CONST(IBV_WC_SUCCESS);
	CONST(IBV_WC_LOC_LEN_ERR);
	CONST(IBV_WC_LOC_QP_OP_ERR);
	CONST(IBV_WC_LOC_PROT_ERR);
	CONST(IBV_WC_WR_FLUSH_ERR);
	CONST(IBV_WC_REM_INV_REQ_ERR);
	CONST(IBV_WC_REM_ACCESS_ERR);
	CONST(IBV_WC_REM_OP_ERR);
	CONST(IBV_WC_RETRY_EXC_ERR);
	CONST(IBV_WC_RNR_RETRY_EXC_ERR);
	CONST(IBV_WC_GENERAL_ERR);
	CONST(IBV_WC_LOC_EEC_OP_ERR);
	CONST(IBV_WC_MW_BIND_ERR);
	CONST(IBV_WC_BAD_RESP_ERR);
	CONST(IBV_WC_LOC_ACCESS_ERR);
	CONST(IBV_WC_LOC_RDD_VIOL_ERR);
	CONST(IBV_WC_REM_INV_RD_REQ_ERR);
	CONST(IBV_WC_REM_ABORT_ERR);
	CONST(IBV_WC_INV_EECN_ERR);
	CONST(IBV_WC_INV_EEC_STATE_ERR);
	CONST(IBV_WC_FATAL_ERR);
	CONST(IBV_WC_RESP_TIMEOUT_ERR);
	CONST(IBV_WC_TM_ERR);
	CONST(IBV_WC_TM_RNDV_INCOMPLETE);
	CONST(IBV_SEND_FENCE);
	CONST(IBV_SEND_SIGNALED);
	CONST(IBV_SEND_SOLICITED);
	CONST(IBV_SEND_INLINE);
	CONST(IBV_ACCESS_LOCAL_WRITE);
	CONST(IBV_ACCESS_REMOTE_WRITE);
	CONST(IBV_ACCESS_REMOTE_READ);
	CONST(IBV_ACCESS_REMOTE_ATOMIC);
	CONST(IBV_QPT_RC);
	CONST(IBV_QPT_UC);
	CONST(IBV_QPT_UD);
	CONST(IBV_QPS_RESET);
	CONST(IBV_QPS_INIT);
	CONST(IBV_QPS_RTR);
	CONST(IBV_QPS_RTS);
	CONST(IBV_QPS_SQD);
	CONST(IBV_QPS_SQE);
	CONST(IBV_QPS_ERR);
	CONST(IBV_QP_STATE);
	CONST(IBV_QP_CUR_STATE);
	CONST(IBV_QP_ACCESS_FLAGS);
	CONST(IBV_QP_PKEY_INDEX);
	CONST(IBV_QP_PORT);
	CONST(IBV_QP_QKEY);
	CONST(IBV_QP_AV);
	CONST(IBV_QP_PATH_MTU);
	CONST(IBV_QP_TIMEOUT);
	CONST(IBV_QP_RETRY_CNT);
	CONST(IBV_QP_RNR_RETRY);
	CONST(IBV_QP_RQ_PSN);
	CONST(IBV_QP_MAX_QP_RD_ATOMIC);
	CONST(IBV_QP_MIN_RNR_TIMER);
	CONST(IBV_QP_SQ_PSN);
	CONST(IBV_QP_MAX_DEST_RD_ATOMIC);
	CONST(IBV_QP_CAP);
	CONST(IBV_QP_DEST_QPN);
	CONST(IBV_MTU_256);
	CONST(IBV_MTU_512);
	CONST(IBV_MTU_1024);
	CONST(IBV_MTU_2048);
	CONST(IBV_MTU_4096);
	CONST(IBV_LINK_LAYER_UNSPECIFIED);
	CONST(IBV_LINK_LAYER_INFINIBAND);
	CONST(IBV_LINK_LAYER_ETHERNET);
	CONST(IBV_PORT_ACTIVE);
	CONST(IBV_SRQ_MAX_WR);
	CONST(IBV_SRQ_LIMIT);
	CONST(IBV_ATOMIC_NONE);
	CONST(IBV_ATOMIC_HCA);
	CONST(IBV_ATOMIC_GLOB);
	return 0;
}
