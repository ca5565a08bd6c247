/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prints every offset and size of mrce_abi.h as "struct.field offset" lines
 * (and "struct.__size size"), for the Java side's agreement test.
 */
#include <stddef.h>
#include <stdio.h>

#include "mrce_abi.h"

#define F(s, f) printf("%s.%s %zu\n", #s, #f, offsetof(struct s, f))
#define SZ(s) printf("%s.__size %zu\n", #s, sizeof(struct s))
#define C(n) printf("const.%s %lu\n", #n, (unsigned long)(n))

int main(void)
{
	F(mrce_ring_header, magic); F(mrce_ring_header, version);
	F(mrce_ring_header, kind); F(mrce_ring_header, slot_size);
	F(mrce_ring_header, slot_count); F(mrce_ring_header, producer);
	F(mrce_ring_header, consumer); F(mrce_ring_header, flags);
	F(mrce_ring_header, arm); F(mrce_ring_header, notify_count); F(mrce_ring_header, notify_seq);
	SZ(mrce_ring_header);

	F(mrce_sge, addr); F(mrce_sge, length); F(mrce_sge, lkey); SZ(mrce_sge);

	F(mrce_wqe, wr_id); F(mrce_wqe, opcode); F(mrce_wqe, send_flags);
	F(mrce_wqe, num_sge); F(mrce_wqe, imm_data); F(mrce_wqe, length);
	F(mrce_wqe, rkey); F(mrce_wqe, remote_addr); F(mrce_wqe, compare_add);
	F(mrce_wqe, swap); F(mrce_wqe, ud_remote_qpn); F(mrce_wqe, ud_remote_qkey);
	F(mrce_wqe, ud_dest_ipv4); F(mrce_wqe, ud_traffic_class);
	F(mrce_wqe, ud_hop_limit); F(mrce_wqe, data); SZ(mrce_wqe);

	F(mrce_cqe, wr_id); F(mrce_cqe, status); F(mrce_cqe, opcode);
	F(mrce_cqe, vendor_err); F(mrce_cqe, byte_len); F(mrce_cqe, imm_data);
	F(mrce_cqe, qp_num); F(mrce_cqe, src_qp); F(mrce_cqe, wc_flags);
	F(mrce_cqe, pkey_index); F(mrce_cqe, slid); F(mrce_cqe, sl);
	F(mrce_cqe, dlid_path_bits); SZ(mrce_cqe);

	F(mrce_ctrl_hdr, len); F(mrce_ctrl_hdr, op); F(mrce_ctrl_hdr, status);
	F(mrce_ctrl_hdr, seq); F(mrce_ctrl_hdr, nfds); SZ(mrce_ctrl_hdr);

	F(mrce_handle_req, handle); SZ(mrce_handle_req);
	F(mrce_handle_resp, handle); SZ(mrce_handle_resp);
	F(mrce_hello_req, abi_version); F(mrce_hello_req, flags); SZ(mrce_hello_req);

	F(mrce_hello_resp, abi_version); F(mrce_hello_resp, daemon_pid);
	F(mrce_hello_resp, gid); F(mrce_hello_resp, dev_name);
	F(mrce_hello_resp, ifname); F(mrce_hello_resp, node_guid);
	F(mrce_hello_resp, if_mtu); F(mrce_hello_resp, active_mtu);
	F(mrce_hello_resp, max_mtu); F(mrce_hello_resp, udp_port);
	F(mrce_hello_resp, max_qp); F(mrce_hello_resp, max_qp_wr);
	F(mrce_hello_resp, max_sge); F(mrce_hello_resp, max_cq);
	F(mrce_hello_resp, max_cqe); F(mrce_hello_resp, max_mr);
	F(mrce_hello_resp, max_mr_size); F(mrce_hello_resp, max_pd);
	F(mrce_hello_resp, max_inline); F(mrce_hello_resp, max_qp_rd_atom);
	F(mrce_hello_resp, max_comp_channel); F(mrce_hello_resp, vendor_id);
	F(mrce_hello_resp, vendor_part_id); F(mrce_hello_resp, hw_ver);
	F(mrce_hello_resp, link_up); F(mrce_hello_resp, speed_mbps);
	F(mrce_hello_resp, max_srq); F(mrce_hello_resp, max_srq_wr);
	F(mrce_hello_resp, max_srq_sge); F(mrce_hello_resp, max_qp_init_rd_atom);
	F(mrce_hello_resp, atomic_cap); F(mrce_hello_resp, max_ah);
	SZ(mrce_hello_resp);

	F(mrce_reg_mr_req, pd); F(mrce_reg_mr_req, access);
	F(mrce_reg_mr_req, addr); F(mrce_reg_mr_req, length);
	F(mrce_reg_mr_req, iova); SZ(mrce_reg_mr_req);
	F(mrce_reg_mr_resp, handle); F(mrce_reg_mr_resp, lkey);
	F(mrce_reg_mr_resp, rkey); SZ(mrce_reg_mr_resp);

	F(mrce_create_cq_req, cqe); F(mrce_create_cq_req, channel);
	F(mrce_create_cq_req, comp_vector); SZ(mrce_create_cq_req);
	F(mrce_create_cq_resp, handle); F(mrce_create_cq_resp, cqe);
	F(mrce_create_cq_resp, map_size); SZ(mrce_create_cq_resp);

	F(mrce_create_qp_req, pd); F(mrce_create_qp_req, send_cq);
	F(mrce_create_qp_req, recv_cq); F(mrce_create_qp_req, srq);
	F(mrce_create_qp_req, qp_type); F(mrce_create_qp_req, sq_sig_all);
	F(mrce_create_qp_req, max_send_wr); F(mrce_create_qp_req, max_recv_wr);
	F(mrce_create_qp_req, max_send_sge); F(mrce_create_qp_req, max_recv_sge);
	F(mrce_create_qp_req, max_inline_data); SZ(mrce_create_qp_req);

	F(mrce_create_qp_resp, handle); F(mrce_create_qp_resp, qp_num);
	F(mrce_create_qp_resp, max_send_wr); F(mrce_create_qp_resp, max_recv_wr);
	F(mrce_create_qp_resp, max_send_sge); F(mrce_create_qp_resp, max_recv_sge);
	F(mrce_create_qp_resp, max_inline_data); F(mrce_create_qp_resp, sq_offset);
	F(mrce_create_qp_resp, rq_offset); F(mrce_create_qp_resp, map_size);
	SZ(mrce_create_qp_resp);

	F(mrce_create_srq_req, pd); F(mrce_create_srq_req, max_wr);
	F(mrce_create_srq_req, max_sge); F(mrce_create_srq_req, srq_limit);
	SZ(mrce_create_srq_req);
	F(mrce_create_srq_resp, handle); F(mrce_create_srq_resp, max_wr);
	F(mrce_create_srq_resp, max_sge); F(mrce_create_srq_resp, map_size);
	SZ(mrce_create_srq_resp);
	F(mrce_modify_srq_req, handle); F(mrce_modify_srq_req, attr_mask);
	F(mrce_modify_srq_req, max_wr); F(mrce_modify_srq_req, srq_limit);
	SZ(mrce_modify_srq_req);
	F(mrce_srq_attr, max_wr); F(mrce_srq_attr, max_sge);
	F(mrce_srq_attr, srq_limit); SZ(mrce_srq_attr);
	F(mrce_async_event, event_type); F(mrce_async_event, element);
	SZ(mrce_async_event);
	F(mrce_rereg_mr_req, handle); F(mrce_rereg_mr_req, flags);
	F(mrce_rereg_mr_req, pd); F(mrce_rereg_mr_req, access);
	F(mrce_rereg_mr_req, addr); F(mrce_rereg_mr_req, length);
	F(mrce_rereg_mr_req, iova); SZ(mrce_rereg_mr_req);

	F(mrce_cm_listen_req, service_id); F(mrce_cm_listen_req, backlog);
	SZ(mrce_cm_listen_req);
	F(mrce_cm_connect_req, peer_ipv4); F(mrce_cm_connect_req, service_id);
	F(mrce_cm_connect_req, qpn); F(mrce_cm_connect_req, psn);
	F(mrce_cm_connect_req, gid); F(mrce_cm_connect_req, timeout_ms);
	F(mrce_cm_connect_req, private_data_len);
	F(mrce_cm_connect_req, private_data); F(mrce_cm_connect_req, peer_ipv6);
	SZ(mrce_cm_connect_req);
	F(mrce_cm_connect_resp, result); F(mrce_cm_connect_resp, qpn);
	F(mrce_cm_connect_resp, psn); F(mrce_cm_connect_resp, gid);
	F(mrce_cm_connect_resp, private_data_len);
	F(mrce_cm_connect_resp, private_data); SZ(mrce_cm_connect_resp);
	F(mrce_cm_get_request_req, timeout_ms); SZ(mrce_cm_get_request_req);
	F(mrce_cm_request, request); F(mrce_cm_request, service_id);
	F(mrce_cm_request, qpn); F(mrce_cm_request, psn); F(mrce_cm_request, gid);
	F(mrce_cm_request, peer_ipv4); F(mrce_cm_request, private_data_len);
	F(mrce_cm_request, private_data); F(mrce_cm_request, peer_ipv6);
	SZ(mrce_cm_request);
	F(mrce_cm_accept_req, request); F(mrce_cm_accept_req, qpn);
	F(mrce_cm_accept_req, psn); F(mrce_cm_accept_req, gid);
	F(mrce_cm_accept_req, private_data_len);
	F(mrce_cm_accept_req, private_data); SZ(mrce_cm_accept_req);
	F(mrce_cm_reject_req, request); F(mrce_cm_reject_req, private_data_len);
	F(mrce_cm_reject_req, private_data); SZ(mrce_cm_reject_req);

	F(mrce_qp_attr, qp_state); F(mrce_qp_attr, cur_qp_state);
	F(mrce_qp_attr, path_mtu); F(mrce_qp_attr, qkey); F(mrce_qp_attr, rq_psn);
	F(mrce_qp_attr, sq_psn); F(mrce_qp_attr, dest_qp_num);
	F(mrce_qp_attr, qp_access_flags); F(mrce_qp_attr, max_send_wr);
	F(mrce_qp_attr, max_recv_wr); F(mrce_qp_attr, max_send_sge);
	F(mrce_qp_attr, max_recv_sge); F(mrce_qp_attr, max_inline_data);
	F(mrce_qp_attr, flow_label); F(mrce_qp_attr, dgid);
	F(mrce_qp_attr, sgid_index); F(mrce_qp_attr, hop_limit);
	F(mrce_qp_attr, traffic_class); F(mrce_qp_attr, is_global);
	F(mrce_qp_attr, dlid); F(mrce_qp_attr, sl); F(mrce_qp_attr, src_path_bits);
	F(mrce_qp_attr, static_rate); F(mrce_qp_attr, ah_port_num);
	F(mrce_qp_attr, pkey_index); F(mrce_qp_attr, en_sqd_async_notify);
	F(mrce_qp_attr, sq_draining); F(mrce_qp_attr, max_rd_atomic);
	F(mrce_qp_attr, max_dest_rd_atomic); F(mrce_qp_attr, min_rnr_timer);
	F(mrce_qp_attr, port_num); F(mrce_qp_attr, timeout);
	F(mrce_qp_attr, retry_cnt); F(mrce_qp_attr, rnr_retry);
	SZ(mrce_qp_attr);

	F(mrce_modify_qp_req, handle); F(mrce_modify_qp_req, attr_mask);
	F(mrce_modify_qp_req, attr); SZ(mrce_modify_qp_req);

	F(mrce_context_token, magic); F(mrce_context_token, abi_version);
	F(mrce_context_token, dev_name); SZ(mrce_context_token);
	F(mrce_import_context_req, fd); SZ(mrce_import_context_req);
	F(mrce_import_mr_req, pd); F(mrce_import_mr_req, handle);
	SZ(mrce_import_mr_req);
	F(mrce_import_mr_resp, handle); F(mrce_import_mr_resp, lkey);
	F(mrce_import_mr_resp, rkey); F(mrce_import_mr_resp, access);
	F(mrce_import_mr_resp, addr); F(mrce_import_mr_resp, length);
	SZ(mrce_import_mr_resp);
	F(mrce_share_mr_req, handle); F(mrce_share_mr_req, fd); F(mrce_share_mr_req, base);
	SZ(mrce_share_mr_req);

	C(MRCE_ABI_VERSION); C(MRCE_RING_MAGIC); C(MRCE_RING_VERSION);
	C(MRCE_HELLO_DOORBELL_PAGE); C(MRCE_QP_INDEX_MASK); C(MRCE_DB_PAGE_SIZE);
	C(MRCE_DB_SLEEPING_OFF); C(MRCE_DB_SUMMARY_OFF); C(MRCE_DB_SUMMARY_WORDS);
	C(MRCE_DB_BITS_OFF); C(MRCE_DB_BITS_WORDS);
	C(MRCE_RING_SLOTS_OFF); C(MRCE_WQE_SIZE); C(MRCE_WQE_DATA_OFF);
	C(MRCE_MAX_SGE); C(MRCE_MAX_INLINE); C(MRCE_CQE_SIZE);
	C(MRCE_CTRL_MAX_FRAME); C(MRCE_NO_HANDLE); C(MRCE_OP_MAX);
	C(MRCE_OP_HELLO);
	C(MRCE_OP_ALLOC_PD);
	C(MRCE_OP_DEALLOC_PD);
	C(MRCE_OP_REG_MR);
	C(MRCE_OP_DEREG_MR);
	C(MRCE_OP_CREATE_COMP_CHANNEL);
	C(MRCE_OP_DESTROY_COMP_CHANNEL);
	C(MRCE_OP_CREATE_CQ);
	C(MRCE_OP_DESTROY_CQ);
	C(MRCE_OP_CREATE_QP);
	C(MRCE_OP_MODIFY_QP);
	C(MRCE_OP_QUERY_QP);
	C(MRCE_OP_DESTROY_QP);
	C(MRCE_OP_CREATE_SRQ);
	C(MRCE_OP_MODIFY_SRQ);
	C(MRCE_OP_QUERY_SRQ);
	C(MRCE_OP_DESTROY_SRQ);
	C(MRCE_OP_GET_ASYNC_EVENT);
	C(MRCE_OP_REREG_MR);
	C(MRCE_OP_CM_LISTEN);
	C(MRCE_OP_CM_UNLISTEN);
	C(MRCE_OP_CM_CONNECT);
	C(MRCE_OP_CM_GET_REQUEST);
	C(MRCE_OP_CM_ACCEPT);
	C(MRCE_OP_CM_REJECT);
	C(MRCE_OP_CM_BIND);
	C(MRCE_OP_SHARE_MR);
	C(MRCE_OP_CONTEXT_FD);
	C(MRCE_OP_IMPORT_CONTEXT);
	C(MRCE_OP_IMPORT_PD);
	C(MRCE_OP_UNIMPORT_PD);
	C(MRCE_OP_IMPORT_MR);
	C(MRCE_OP_UNIMPORT_MR);
	C(MRCE_CONTEXT_MAGIC);
	C(MRCE_CM_PRIVATE_DATA_MAX); C(MRCE_CM_ACCEPTED); C(MRCE_CM_REJECTED);
	C(MRCE_CM_DEFAULT_BACKLOG); C(MRCE_CM_MAX_BACKLOG);
	C(MRCE_RING_KIND_SQ); C(MRCE_RING_KIND_RQ); C(MRCE_RING_KIND_CQ);
	C(MRCE_RING_KIND_SRQ); C(MRCE_RING_NEED_WAKEUP); C(MRCE_CQ_ARM_NEXT);
	C(MRCE_CQ_ARM_SOLICITED); C(MRCE_MAX_ASYNC_EVENTS);
	return 0;
}
