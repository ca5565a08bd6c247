package io.metaroce.verbs;

/**
 * What {@code ibv_query_port} reports about a port (the fields applications use).
 *
 * <p>Immutable, thread-safe.
 *
 * @param state {@code enum ibv_port_state} (4 = ACTIVE)
 * @param maxMtu largest path MTU the port supports
 * @param activeMtu the port's current MTU
 * @param gidTableLength entries in the GID table
 * @param lid the port's LID (0 on Ethernet)
 * @param smLid the subnet manager's LID
 * @param linkLayer {@code IBV_LINK_LAYER_*}: 1 InfiniBand, 2 Ethernet
 * @param maxMessageSize the largest message
 * @param portCapFlags {@code IBV_PORT_*_SUP} bits
 */
public record PortAttributes(
        int state,
        Mtu maxMtu,
        Mtu activeMtu,
        int gidTableLength,
        int lid,
        int smLid,
        int linkLayer,
        long maxMessageSize,
        int portCapFlags) {

    public boolean isActive() {
        return state == Abi.IBV_PORT_ACTIVE;
    }

    public boolean isEthernet() {
        return linkLayer == Abi.IBV_LINK_LAYER_ETHERNET;
    }
}
