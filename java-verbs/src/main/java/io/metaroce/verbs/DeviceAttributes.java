package io.metaroce.verbs;

/**
 * What {@code ibv_query_device} reports (the limits applications size their objects by).
 *
 * <p>Immutable, thread-safe.
 *
 * @param firmwareVersion {@code fw_ver}
 * @param nodeGuid the node GUID (host order)
 * @param vendorId the vendor id
 * @param vendorPartId the vendor part id
 * @param maxMrSize largest memory region
 * @param maxQp queue pairs
 * @param maxQpWr work requests per queue
 * @param maxSge scatter/gather entries per work request
 * @param maxCq completion queues
 * @param maxCqe entries per completion queue
 * @param maxMr memory regions
 * @param maxPd protection domains
 * @param maxQpRdAtomic outstanding RDMA READ/atomic per QP as target
 * @param maxQpInitRdAtomic outstanding RDMA READ/atomic per QP as initiator
 * @param atomicCap {@code enum ibv_atomic_cap}: 0 none, 1 HCA, 2 global
 * @param maxAh address handles
 * @param maxSrq shared receive queues
 * @param maxSrqWr work requests per SRQ
 * @param maxSrqSge scatter/gather entries per SRQ work request
 * @param physPortCount ports
 */
public record DeviceAttributes(
        String firmwareVersion,
        long nodeGuid,
        int vendorId,
        int vendorPartId,
        long maxMrSize,
        int maxQp,
        int maxQpWr,
        int maxSge,
        int maxCq,
        int maxCqe,
        int maxMr,
        int maxPd,
        int maxQpRdAtomic,
        int maxQpInitRdAtomic,
        int atomicCap,
        int maxAh,
        int maxSrq,
        int maxSrqWr,
        int maxSrqSge,
        int physPortCount) {}
