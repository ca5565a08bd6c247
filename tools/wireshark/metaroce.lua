-- MetaRoCE dissector for Wireshark and tshark (Lua 5.2+, Wireshark 3.x and 4.x).
--
-- Decodes the MetaRoCE transport (wire version 2, UDP port 4793, docs/spec/transport.md) and the
-- connection manager between daemons (version 3, TCP port 4792, docs/spec/connection-manager.md):
-- every header field, the extension headers, the ACK's SACK bitmap (as the RSNs it acknowledges)
-- and path reports, NAK syndromes, UD fields, and every CM message. The CRC32C of each packet is
-- verified (spec section 12): a wrong CRC is an expert-info error.
--
-- Install: see tools/wireshark/README.md, or run once with
--   tshark -X lua_script:tools/wireshark/metaroce.lua -r capture.pcap

local bit = bit32 or bit

---------------------------------------------------------------------------------------------------
-- Transport
---------------------------------------------------------------------------------------------------

local DATA_PORT = 4793
local CM_PORT = 4792
local HEADER = 48

local OPCODES = {
    [1] = "SEND", [2] = "SEND_IMM", [3] = "WRITE", [4] = "WRITE_IMM", [5] = "READ_REQ",
    [6] = "READ_RESP", [7] = "ATOMIC_CS", [8] = "ATOMIC_FA", [9] = "ATOMIC_RESP",
    [16] = "ACK", [17] = "NAK", [18] = "PROBE", [32] = "UD_SEND", [33] = "UD_SEND_IMM",
}
local SYNDROMES = {
    [1] = "RNR", [2] = "INVALID_REQUEST", [3] = "REMOTE_OPERATIONAL", [4] = "SEQUENCE_ERROR",
    [5] = "REMOTE_ACCESS",
}
-- IBA RNR timer codes (spec section 6), in microseconds
local RNR_US = { [0] = 655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280,
    1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840,
    245760, 327680, 491520 }

local OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ_REQ = 1, 2, 3, 4, 5
local OP_READ_RESP, OP_ATOMIC_CS, OP_ATOMIC_FA, OP_ATOMIC_RESP = 6, 7, 8, 9
local OP_ACK, OP_NAK, OP_PROBE, OP_UD_SEND, OP_UD_SEND_IMM = 16, 17, 18, 32, 33

local p = Proto("metaroce", "MetaRoCE transport")

local f = {
    version = ProtoField.uint8("metaroce.version", "Version", base.DEC),
    opcode = ProtoField.uint8("metaroce.opcode", "Opcode", base.DEC, OPCODES),
    flags = ProtoField.uint8("metaroce.flags", "Flags", base.HEX),
    f_solicited = ProtoField.bool("metaroce.flags.solicited", "SOLICITED", 8, nil, 0x01),
    f_retransmit = ProtoField.bool("metaroce.flags.retransmit", "RETRANSMIT", 8, nil, 0x02),
    f_gbn = ProtoField.bool("metaroce.flags.gbn", "GBN", 8, nil, 0x04),
    f_ack_now = ProtoField.bool("metaroce.flags.ack_now", "ACK_NOW", 8, nil, 0x08),
    f_resend = ProtoField.bool("metaroce.flags.resend", "RESEND", 8, nil, 0x10),
    f_reserved = ProtoField.uint8("metaroce.flags.reserved", "Reserved", base.HEX, nil, 0xe0),
    path = ProtoField.uint8("metaroce.path", "Path id", base.DEC),
    psn = ProtoField.uint32("metaroce.psn", "Path PSN", base.DEC),
    rsn = ProtoField.uint32("metaroce.rsn", "RSN", base.DEC),
    cum_rsn = ProtoField.uint32("metaroce.cum_rsn", "Cumulative RSN", base.DEC),
    dst_qpn = ProtoField.uint32("metaroce.dst_qpn", "Destination QPN", base.HEX),
    src_qpn = ProtoField.uint32("metaroce.src_qpn", "Source QPN", base.HEX),
    token = ProtoField.uint32("metaroce.token", "Connection token", base.HEX),
    qkey = ProtoField.uint32("metaroce.qkey", "Q_Key", base.HEX),
    msn = ProtoField.uint32("metaroce.msn", "MSN", base.DEC),
    next_msn = ProtoField.uint32("metaroce.next_msn", "Next MSN", base.DEC),
    offset = ProtoField.uint32("metaroce.offset", "Byte offset", base.DEC),
    rnr_timer = ProtoField.uint32("metaroce.rnr_timer", "RNR timer code", base.DEC),
    msg_len = ProtoField.uint32("metaroce.msg_len", "Message length", base.DEC),
    reports = ProtoField.uint32("metaroce.reports", "Path reports", base.DEC),
    imm = ProtoField.uint32("metaroce.imm", "Immediate data", base.HEX),
    read_len = ProtoField.uint32("metaroce.read_len", "Bytes requested", base.DEC),
    syndrome = ProtoField.uint32("metaroce.syndrome", "NAK syndrome", base.DEC, SYNDROMES),
    reply_entropy = ProtoField.uint16("metaroce.reply_entropy", "Reply entropy", base.DEC),
    tclass = ProtoField.uint8("metaroce.tclass", "Traffic class", base.HEX),
    hop_limit = ProtoField.uint8("metaroce.hop_limit", "Hop limit", base.DEC),
    rwnd = ProtoField.uint16("metaroce.rwnd", "Receive window", base.DEC),
    crc = ProtoField.uint32("metaroce.crc", "CRC32C", base.HEX),
    crc_status = ProtoField.string("metaroce.crc.status", "CRC32C status"),
    crc_good = ProtoField.bool("metaroce.crc.good", "CRC32C good"),
    -- RETH and atomics
    rkey = ProtoField.uint32("metaroce.rkey", "rkey", base.HEX),
    resp_unit = ProtoField.uint32("metaroce.resp_unit", "Response unit", base.DEC),
    va = ProtoField.uint64("metaroce.va", "Virtual address", base.HEX),
    compare_add = ProtoField.uint64("metaroce.compare_add", "Compare / add", base.HEX),
    swap = ProtoField.uint64("metaroce.swap", "Swap", base.HEX),
    original = ProtoField.uint64("metaroce.original", "Original value", base.HEX),
    -- ACK
    sack = ProtoField.bytes("metaroce.sack", "SACK bitmap"),
    sacked_rsn = ProtoField.uint32("metaroce.sack.rsn", "SACKed RSN", base.DEC),
    report = ProtoField.bytes("metaroce.report", "Path report"),
    r_path = ProtoField.uint8("metaroce.report.path", "Path id", base.DEC),
    r_ce = ProtoField.uint8("metaroce.report.ce", "CE count", base.DEC),
    r_gaps = ProtoField.uint16("metaroce.report.gap_losses", "Gap losses", base.DEC),
    r_psn = ProtoField.uint32("metaroce.report.psn", "Highest PSN", base.DEC),
    payload = ProtoField.bytes("metaroce.payload", "Payload"),
    payload_len = ProtoField.uint32("metaroce.payload_len", "Payload length", base.DEC),
}
p.fields = f

local e = {
    bad_crc = ProtoExpert.new("metaroce.crc.bad", "Bad CRC32C", expert.group.CHECKSUM, expert.severity.ERROR),
    bad_version = ProtoExpert.new("metaroce.version.bad", "Not wire version 2 (dropped by a receiver)",
        expert.group.PROTOCOL, expert.severity.ERROR),
    short = ProtoExpert.new("metaroce.short", "Packet too short for its opcode", expert.group.MALFORMED,
        expert.severity.ERROR),
    bad_len = ProtoExpert.new("metaroce.length.bad", "Length does not match the opcode's layout",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown_op = ProtoExpert.new("metaroce.opcode.unknown", "Unknown opcode (dropped by a receiver)",
        expert.group.UNDECODED, expert.severity.WARN),
    reserved = ProtoExpert.new("metaroce.reserved", "Reserved bits set", expert.group.PROTOCOL,
        expert.severity.WARN),
    retransmit = ProtoExpert.new("metaroce.retransmission", "Retransmission", expert.group.SEQUENCE,
        expert.severity.NOTE),
    nak = ProtoExpert.new("metaroce.nak", "NAK", expert.group.RESPONSE_CODE, expert.severity.WARN),
    gap = ProtoExpert.new("metaroce.report.gap", "Path reports gap losses", expert.group.SEQUENCE,
        expert.severity.NOTE),
}
p.experts = e

p.prefs.verify_crc = Pref.bool("Verify CRC32C", true, "Check each packet's CRC32C (spec section 12)")
p.prefs.port = Pref.uint("Data port", DATA_PORT, "UDP port of the daemons' data path (mrce-nicd --udp-port)")

-- CRC-32C, reflected polynomial 0x82F63B78, init and final XOR 0xFFFFFFFF (spec section 12)
local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if bit.band(c, 1) ~= 0 then
            c = bit.bxor(bit.rshift(c, 1), 0x82F63B78)
        else
            c = bit.rshift(c, 1)
        end
    end
    CRC_TABLE[i] = c
end

local function crc32c_update(crc, bytes)
    for i = 0, bytes:len() - 1 do
        local idx = bit.band(bit.bxor(crc, bytes:get_index(i)), 0xff)
        crc = bit.bxor(bit.rshift(crc, 8), CRC_TABLE[idx])
    end
    return crc
end

-- over bytes [0, 44) and [48, end)
local function packet_crc(tvb)
    local crc = 0xffffffff
    crc = crc32c_update(crc, tvb:range(0, 44):bytes())
    if tvb:len() > HEADER then
        crc = crc32c_update(crc, tvb:range(HEADER):bytes())
    end
    return bit.bxor(crc, 0xffffffff)
end

local function opname(op)
    return OPCODES[op] or ("opcode " .. op)
end

-- fixed lengths (T-2a.1, T-6.1, T-6.7)
local function check_length(op, len, tvb)
    if op == OP_ATOMIC_CS or op == OP_ATOMIC_FA then return len == 80 end
    if op == OP_ATOMIC_RESP then return len == 56 end
    if op == OP_READ_REQ then return len == 64 end
    if op == OP_NAK or op == OP_PROBE then return len == 48 end
    if op == OP_WRITE or op == OP_WRITE_IMM then return len >= 64 end
    if op == OP_ACK then
        return len >= 80 and len == 80 + 8 * tvb:range(32, 4):uint()
    end
    if op == OP_UD_SEND or op == OP_UD_SEND_IMM then
        return len == HEADER + tvb:range(32, 4):uint()
    end
    return true
end

function p.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    pinfo.cols.protocol = "MetaRoCE"
    local t = tree:add(p, tvb(), "MetaRoCE")
    if len < HEADER then
        t:add_proto_expert_info(e.short, "Shorter than the 48-byte header (" .. len .. " bytes)")
        pinfo.cols.info = "MetaRoCE, short packet (" .. len .. " bytes)"
        return len
    end
    local version = tvb(0, 1):uint()
    local op = tvb(1, 1):uint()
    local flags = tvb(2, 1):uint()
    local ud = op == OP_UD_SEND or op == OP_UD_SEND_IMM

    local vi = t:add(f.version, tvb(0, 1))
    if version ~= 2 then
        vi:add_proto_expert_info(e.bad_version)
    end
    local oi = t:add(f.opcode, tvb(1, 1))
    if OPCODES[op] == nil then
        oi:add_proto_expert_info(e.unknown_op)
    end
    local fi = t:add(f.flags, tvb(2, 1))
    fi:add(f.f_solicited, tvb(2, 1))
    fi:add(f.f_retransmit, tvb(2, 1))
    fi:add(f.f_gbn, tvb(2, 1))
    fi:add(f.f_ack_now, tvb(2, 1))
    fi:add(f.f_resend, tvb(2, 1))
    fi:add(f.f_reserved, tvb(2, 1))
    if bit.band(flags, 0xe0) ~= 0 then
        fi:add_proto_expert_info(e.reserved)
    end
    if bit.band(flags, 0x02) ~= 0 then
        fi:add_proto_expert_info(e.retransmit)
    end
    t:add(f.path, tvb(3, 1))
    t:add(f.psn, tvb(4, 4))
    if op == OP_ACK then
        t:add(f.cum_rsn, tvb(8, 4))
    else
        t:add(f.rsn, tvb(8, 4))
    end
    t:add(f.dst_qpn, tvb(12, 4))
    t:add(f.src_qpn, tvb(16, 4))
    if ud then
        t:add(f.qkey, tvb(20, 4))
    else
        t:add(f.token, tvb(20, 4))
    end
    if op == OP_ACK or op == OP_NAK then
        t:add(f.next_msn, tvb(24, 4))
    else
        t:add(f.msn, tvb(24, 4))
    end
    if op == OP_NAK then
        local code = tvb(28, 4):uint()
        t:add(f.rnr_timer, tvb(28, 4)):append_text(RNR_US[code] and
            string.format(" (%.2f ms)", RNR_US[code] / 1000) or "")
        t:add(f.cum_rsn, tvb(32, 4))
        local si = t:add(f.syndrome, tvb(36, 4))
        si:add_proto_expert_info(e.nak, "NAK " .. (SYNDROMES[tvb(36, 4):uint()] or tvb(36, 4):uint()))
    else
        t:add(f.offset, tvb(28, 4))
        if op == OP_ACK then
            t:add(f.reports, tvb(32, 4))
        else
            t:add(f.msg_len, tvb(32, 4))
        end
        if op == OP_READ_REQ then
            t:add(f.read_len, tvb(36, 4))
        else
            t:add(f.imm, tvb(36, 4))
        end
    end
    if ud then
        local ri = t:add(f.reply_entropy, tvb(40, 2))
        ri:add(f.tclass, tvb(40, 1))
        ri:add(f.hop_limit, tvb(41, 1))
    else
        t:add(f.reply_entropy, tvb(40, 2))
    end
    t:add(f.rwnd, tvb(42, 2))
    local ci = t:add(f.crc, tvb(44, 4))
    if p.prefs.verify_crc and tvb:len() < tvb:reported_len() then
        ci:append_text(" [unverified: packet truncated by the capture]")
        t:add(f.crc_status, "Unverified"):set_generated()
    elseif p.prefs.verify_crc then
        local computed = packet_crc(tvb)
        local stored = tvb(44, 4):uint()
        if computed == stored then
            ci:append_text(" [correct]")
            t:add(f.crc_status, "Good"):set_generated()
            t:add(f.crc_good, true):set_generated()
        else
            ci:append_text(string.format(" [incorrect, should be 0x%08x]", computed))
            t:add(f.crc_status, "Bad"):set_generated()
            t:add(f.crc_good, false):set_generated()
            ci:add_proto_expert_info(e.bad_crc, string.format("Bad CRC32C: 0x%08x, computed 0x%08x", stored, computed))
        end
    end

    local length_ok = check_length(op, len, tvb)
    if not length_ok then
        t:add_proto_expert_info(e.bad_len, opname(op) .. " of " .. len .. " bytes")
    end

    -- extension headers and payload
    local pos = HEADER
    if (op == OP_WRITE or op == OP_WRITE_IMM or op == OP_READ_REQ or op == OP_ATOMIC_CS
            or op == OP_ATOMIC_FA) and len >= HEADER + 16 then
        local reth = t:add(tvb(HEADER, 16), "RETH")
        reth:add(f.rkey, tvb(48, 4))
        reth:add(f.resp_unit, tvb(52, 4))
        reth:add(f.va, tvb(56, 8))
        pos = 64
        if (op == OP_ATOMIC_CS or op == OP_ATOMIC_FA) and len >= 80 then
            local at = t:add(tvb(64, 16), "Atomic operands")
            at:add(f.compare_add, tvb(64, 8))
            at:add(f.swap, tvb(72, 8))
            pos = 80
        end
    elseif op == OP_ATOMIC_RESP and len >= 56 then
        t:add(f.original, tvb(48, 8))
        pos = 56
    elseif op == OP_ACK and len >= 80 then
        local cum = tvb(8, 4):uint()
        local si = t:add(f.sack, tvb(48, 32))
        local sacked = {}
        for byte = 0, 31 do
            local b = tvb(48 + byte, 1):uint()
            if b ~= 0 then
                for k = 0, 7 do
                    if bit.band(b, bit.lshift(1, k)) ~= 0 then
                        local rsn = (cum + byte * 8 + k) % 4294967296
                        si:add(f.sacked_rsn, tvb(48 + byte, 1), rsn):set_generated()
                        sacked[#sacked + 1] = rsn
                    end
                end
            end
        end
        si:append_text(" (" .. #sacked .. " RSNs above the cumulative one)")
        local n = tvb(32, 4):uint()
        pos = 80
        for k = 0, n - 1 do
            if pos + 8 > len then break end
            local ri = t:add(f.report, tvb(pos, 8))
            ri:set_text(string.format("Path report: path %d, highest PSN %d, CE %d, gap losses %d",
                tvb(pos, 1):uint(), tvb(pos + 4, 4):uint(), tvb(pos + 1, 1):uint(), tvb(pos + 2, 2):uint()))
            ri:add(f.r_path, tvb(pos, 1))
            ri:add(f.r_ce, tvb(pos + 1, 1))
            local gi = ri:add(f.r_gaps, tvb(pos + 2, 2))
            if tvb(pos + 2, 2):uint() > 0 then
                gi:add_proto_expert_info(e.gap)
            end
            ri:add(f.r_psn, tvb(pos + 4, 4))
            pos = pos + 8
        end
    end
    if pos < len and op ~= OP_ACK then
        t:add(f.payload_len, len - pos):set_generated()
        t:add(f.payload, tvb(pos))
    end

    -- Info column
    local info = string.format("%s QP 0x%06x -> 0x%06x", opname(op), tvb(16, 4):uint(), tvb(12, 4):uint())
    if op == OP_ACK then
        info = info .. string.format(" cum RSN %d, %d reports, rwnd %d", tvb(8, 4):uint(), tvb(32, 4):uint(),
            tvb(42, 2):uint())
    elseif op == OP_NAK then
        info = info .. string.format(" %s RSN %d", SYNDROMES[tvb(36, 4):uint()] or tostring(tvb(36, 4):uint()),
            tvb(8, 4):uint())
    elseif op == OP_PROBE then
        info = info .. string.format(" path %d PSN %d", tvb(3, 1):uint(), tvb(4, 4):uint())
    elseif op == OP_READ_RESP or op == OP_ATOMIC_RESP then
        info = info .. string.format(" RSN %d offset %d", tvb(8, 4):uint(), tvb(28, 4):uint())
    elseif ud then
        info = info .. string.format(" Q_Key 0x%08x len %d", tvb(20, 4):uint(), tvb(32, 4):uint())
    else
        info = info .. string.format(" RSN %d path %d PSN %d MSN %d offset %d/%d", tvb(8, 4):uint(),
            tvb(3, 1):uint(), tvb(4, 4):uint(), tvb(24, 4):uint(), tvb(28, 4):uint(), tvb(32, 4):uint())
    end
    if bit.band(flags, 0x10) ~= 0 then info = info .. " RESEND" end
    if bit.band(flags, 0x02) ~= 0 then info = info .. " RETRANSMIT" end
    if bit.band(flags, 0x08) ~= 0 then info = info .. " ACK_NOW" end
    pinfo.cols.info = info
    return len
end

local registered_port = DATA_PORT
DissectorTable.get("udp.port"):add(registered_port, p)

function p.prefs_changed()
    if p.prefs.port ~= registered_port then
        DissectorTable.get("udp.port"):remove(registered_port, p)
        registered_port = p.prefs.port
        DissectorTable.get("udp.port"):add(registered_port, p)
    end
end

---------------------------------------------------------------------------------------------------
-- Connection manager (TCP)
---------------------------------------------------------------------------------------------------

local CM_TYPES = {
    [1] = "HELLO", [2] = "CONNECT", [3] = "ACCEPT", [4] = "REJECT", [5] = "DISCONNECT", [6] = "PING",
    [7] = "PONG", [8] = "SVC_REQUEST", [9] = "SVC_REPLY", [10] = "SVC_REJECT", [11] = "SVC_READY",
    [12] = "SVC_CANCEL",
}
local CM_REASONS = {
    [1] = "NO_QP", [2] = "MISMATCH", [3] = "BAD_STATE", [4] = "DESTROYED", [5] = "ERROR", [6] = "SHUTDOWN",
    [7] = "TIMEOUT",
}
local SVC_REASONS = {
    [1] = "REJECTED", [2] = "NO_LISTENER", [3] = "LISTENER_GONE", [4] = "BUSY", [5] = "TIMEOUT",
    [6] = "CANCELLED",
}

local cm = Proto("metaroce_cm", "MetaRoCE connection manager")
local c = {
    length = ProtoField.uint16("metaroce_cm.length", "Length", base.DEC),
    type = ProtoField.uint8("metaroce_cm.type", "Type", base.DEC, CM_TYPES),
    flags = ProtoField.uint8("metaroce_cm.flags", "Flags", base.HEX),
    magic = ProtoField.uint32("metaroce_cm.magic", "Magic", base.HEX),
    version = ProtoField.uint16("metaroce_cm.version", "Version", base.DEC),
    reserved = ProtoField.uint16("metaroce_cm.reserved", "Reserved", base.HEX),
    capabilities = ProtoField.uint32("metaroce_cm.capabilities", "Capabilities", base.HEX),
    boot_id = ProtoField.uint64("metaroce_cm.boot_id", "Boot id", base.HEX),
    data_port = ProtoField.uint16("metaroce_cm.data_port", "Data port", base.DEC),
    heartbeat = ProtoField.uint16("metaroce_cm.heartbeat_ms", "Heartbeat (ms)", base.DEC),
    served = ProtoField.ipv4("metaroce_cm.served_address", "Served address"),
    request_id = ProtoField.uint32("metaroce_cm.request_id", "Request id", base.DEC),
    qpn = ProtoField.uint32("metaroce_cm.qpn", "QPN", base.HEX),
    ep_qpn = ProtoField.uint32("metaroce_cm.endpoint.qpn", "QPN", base.HEX),
    ep_peer_qpn = ProtoField.uint32("metaroce_cm.endpoint.peer_qpn", "Peer QPN", base.HEX),
    ep_token = ProtoField.uint32("metaroce_cm.endpoint.token", "Receive token", base.HEX),
    peer_qpn = ProtoField.uint32("metaroce_cm.peer_qpn", "Peer QPN", base.HEX),
    mtu = ProtoField.uint32("metaroce_cm.mtu", "Path MTU", base.DEC),
    window = ProtoField.uint32("metaroce_cm.window", "Window", base.DEC),
    start_psn = ProtoField.uint32("metaroce_cm.start_psn", "Start PSN", base.DEC),
    token = ProtoField.uint32("metaroce_cm.token", "Token", base.HEX),
    paths = ProtoField.uint16("metaroce_cm.paths", "Paths", base.DEC),
    link_mtu = ProtoField.uint16("metaroce_cm.link_mtu", "Link MTU", base.DEC),
    entropy = ProtoField.uint16("metaroce_cm.entropy", "Entropy", base.DEC),
    reason = ProtoField.uint16("metaroce_cm.reason", "Reason", base.DEC, CM_REASONS),
    svc_reason = ProtoField.uint16("metaroce_cm.svc_reason", "Service reason", base.DEC, SVC_REASONS),
    dflags = ProtoField.uint32("metaroce_cm.disconnect_flags", "Flags", base.HEX),
    placed_rsn = ProtoField.uint32("metaroce_cm.placed_rsn", "Placed RSN", base.DEC),
    sequence = ProtoField.uint64("metaroce_cm.sequence", "Sequence", base.DEC),
    service_id = ProtoField.uint32("metaroce_cm.service_id", "Service id", base.DEC),
    psn = ProtoField.uint32("metaroce_cm.psn", "PSN", base.DEC),
    gid = ProtoField.ipv6("metaroce_cm.gid", "GID"),
    pd_len = ProtoField.uint16("metaroce_cm.private_data_length", "Private data length", base.DEC),
    private_data = ProtoField.bytes("metaroce_cm.private_data", "Private data"),
    extension = ProtoField.bytes("metaroce_cm.extension", "Extension payload"),
}
cm.fields = c
local ce = {
    bad_len = ProtoExpert.new("metaroce_cm.length.bad", "Frame length does not match its type",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown = ProtoExpert.new("metaroce_cm.type.unknown", "Unknown type below 64 (a protocol error)",
        expert.group.PROTOCOL, expert.severity.ERROR),
    ignorable = ProtoExpert.new("metaroce_cm.type.ignorable", "Extension frame (types 64..255, skipped)",
        expert.group.UNDECODED, expert.severity.NOTE),
    bad_magic = ProtoExpert.new("metaroce_cm.magic.bad", "Bad magic", expert.group.PROTOCOL,
        expert.severity.ERROR),
}
cm.experts = ce

local function endpoint(t, tvb, pos, limit)
    if pos + 28 > limit then return false end
    local ep = t:add(tvb(pos, limit - pos), "Endpoint")
    ep:add(c.ep_qpn, tvb(pos, 4))
    ep:add(c.ep_peer_qpn, tvb(pos + 4, 4))
    ep:add(c.mtu, tvb(pos + 8, 4))
    ep:add(c.window, tvb(pos + 12, 4))
    ep:add(c.start_psn, tvb(pos + 16, 4))
    ep:add(c.ep_token, tvb(pos + 20, 4))
    local n = tvb(pos + 24, 2):uint()
    ep:add(c.paths, tvb(pos + 24, 2))
    ep:add(c.link_mtu, tvb(pos + 26, 2))
    if pos + 28 + 2 * n ~= limit then return false end
    for k = 0, n - 1 do
        ep:add(c.entropy, tvb(pos + 28 + 2 * k, 2))
    end
    ep:set_text(string.format("Endpoint: QPN 0x%06x -> 0x%06x, token 0x%08x, %d paths, link MTU %d",
        tvb(pos, 4):uint(), tvb(pos + 4, 4):uint(), tvb(pos + 20, 4):uint(), n, tvb(pos + 26, 2):uint()))
    return true
end

local function private_data(t, tvb, at, limit)
    if at + 4 > limit then return false end
    local n = tvb(at, 2):uint()
    t:add(c.pd_len, tvb(at, 2))
    if at + 4 + n ~= limit then return false end
    if n > 0 then t:add(c.private_data, tvb(at + 4, n)) end
    return true
end

-- one whole frame
local function dissect_cm_frame(tvb, pinfo, tree)
    local len = tvb:len()
    local typ = tvb(2, 1):uint()
    local name = CM_TYPES[typ] or ("type " .. typ)
    local t = tree:add(cm, tvb(), "MetaRoCE CM, " .. name)
    t:add(c.length, tvb(0, 2))
    local ti = t:add(c.type, tvb(2, 1))
    t:add(c.flags, tvb(3, 1))
    local b = 4
    local body = len - 4
    local ok = true
    local info = name
    if typ == 1 then
        ok = body == 28
        if ok then
            local mi = t:add(c.magic, tvb(b, 4))
            if tvb(b, 4):uint() ~= 0x4d52434d then mi:add_proto_expert_info(ce.bad_magic) end
            t:add(c.version, tvb(b + 4, 2))
            t:add(c.reserved, tvb(b + 6, 2))
            t:add(c.capabilities, tvb(b + 8, 4))
            t:add(c.boot_id, tvb(b + 12, 8))
            t:add(c.data_port, tvb(b + 20, 2))
            t:add(c.heartbeat, tvb(b + 22, 2))
            t:add(c.served, tvb(b + 24, 4))
            info = string.format("HELLO v%d from %s", tvb(b + 4, 2):uint(), tostring(tvb(b + 24, 4):ipv4()))
        end
    elseif typ == 2 or typ == 3 then
        ok = body >= 4
        if ok then
            t:add(c.request_id, tvb(b, 4))
            ok = endpoint(t, tvb, b + 4, len)
            if ok then
                info = string.format("%s #%d QPN 0x%06x -> 0x%06x", name, tvb(b, 4):uint(), tvb(b + 4, 4):uint(),
                    tvb(b + 8, 4):uint())
            end
        end
    elseif typ == 4 then
        ok = body == 16
        if ok then
            t:add(c.request_id, tvb(b, 4))
            t:add(c.qpn, tvb(b + 4, 4))
            t:add(c.peer_qpn, tvb(b + 8, 4))
            t:add(c.reason, tvb(b + 12, 2))
            t:add(c.reserved, tvb(b + 14, 2))
            info = "REJECT " .. (CM_REASONS[tvb(b + 12, 2):uint()] or tvb(b + 12, 2):uint())
        end
    elseif typ == 5 then
        ok = body == 24
        if ok then
            t:add(c.qpn, tvb(b, 4))
            t:add(c.peer_qpn, tvb(b + 4, 4))
            t:add(c.reason, tvb(b + 8, 2))
            t:add(c.reserved, tvb(b + 10, 2))
            t:add(c.token, tvb(b + 12, 4))
            t:add(c.dflags, tvb(b + 16, 4))
            t:add(c.placed_rsn, tvb(b + 20, 4))
            info = string.format("DISCONNECT %s QPN 0x%06x -> 0x%06x",
                CM_REASONS[tvb(b + 8, 2):uint()] or tostring(tvb(b + 8, 2):uint()), tvb(b, 4):uint(), tvb(b + 4, 4):uint())
        end
    elseif typ == 6 or typ == 7 then
        ok = body == 8
        if ok then
            t:add(c.sequence, tvb(b, 8))
            info = name .. " " .. tostring(tvb(b, 8):uint64())
        end
    elseif typ == 8 then
        ok = body >= 36
        if ok then
            t:add(c.request_id, tvb(b, 4))
            t:add(c.service_id, tvb(b + 4, 4))
            t:add(c.qpn, tvb(b + 8, 4))
            t:add(c.psn, tvb(b + 12, 4))
            t:add(c.gid, tvb(b + 16, 16))
            ok = private_data(t, tvb, b + 32, len)
            info = string.format("SVC_REQUEST #%d service %d", tvb(b, 4):uint(), tvb(b + 4, 4):uint())
        end
    elseif typ == 9 then
        ok = body >= 32
        if ok then
            t:add(c.request_id, tvb(b, 4))
            t:add(c.qpn, tvb(b + 4, 4))
            t:add(c.psn, tvb(b + 8, 4))
            t:add(c.gid, tvb(b + 12, 16))
            ok = private_data(t, tvb, b + 28, len)
            info = string.format("SVC_REPLY #%d", tvb(b, 4):uint())
        end
    elseif typ == 10 then
        ok = body >= 8 and body == 8 + tvb(b + 6, 2):uint()
        if ok then
            t:add(c.request_id, tvb(b, 4))
            t:add(c.svc_reason, tvb(b + 4, 2))
            t:add(c.pd_len, tvb(b + 6, 2))
            if body > 8 then t:add(c.private_data, tvb(b + 8)) end
            info = "SVC_REJECT " .. (SVC_REASONS[tvb(b + 4, 2):uint()] or tvb(b + 4, 2):uint())
        end
    elseif typ == 11 then
        ok = body == 4
        if ok then t:add(c.request_id, tvb(b, 4)) end
    elseif typ == 12 then
        ok = body == 8
        if ok then
            t:add(c.request_id, tvb(b, 4))
            t:add(c.svc_reason, tvb(b + 4, 2))
            t:add(c.reserved, tvb(b + 6, 2))
            info = "SVC_CANCEL " .. (SVC_REASONS[tvb(b + 4, 2):uint()] or tvb(b + 4, 2):uint())
        end
    elseif typ >= 64 then
        ti:add_proto_expert_info(ce.ignorable)
        if body > 0 then t:add(c.extension, tvb(b)) end
    else
        ti:add_proto_expert_info(ce.unknown)
    end
    if not ok then
        t:add_proto_expert_info(ce.bad_len, name .. " of " .. len .. " bytes")
    end
    return info
end

local function cm_pdu_length(tvb, pinfo, offset)
    local n = tvb(offset, 2):uint()
    if n < 4 then return 4 end -- malformed: show 4 bytes and go on
    return n
end

local function cm_pdu(tvb, pinfo, tree)
    pinfo.cols.protocol = "MetaRoCE CM"
    local info = dissect_cm_frame(tvb, pinfo, tree)
    local prev = tostring(pinfo.cols.info)
    if prev ~= "" and prev:find("^MetaRoCE CM: ") then
        pinfo.cols.info = prev .. ", " .. info
    else
        pinfo.cols.info = "MetaRoCE CM: " .. info
    end
    return tvb:len()
end

function cm.dissector(tvb, pinfo, tree)
    pinfo.cols.info = ""
    dissect_tcp_pdus(tvb, tree, 2, cm_pdu_length, cm_pdu, true)
    return tvb:len()
end

cm.prefs.port = Pref.uint("Connection-manager port", CM_PORT, "TCP port of the connection manager (mrce-nicd --cm-port)")
local registered_cm_port = CM_PORT
DissectorTable.get("tcp.port"):add(registered_cm_port, cm)

function cm.prefs_changed()
    if cm.prefs.port ~= registered_cm_port then
        DissectorTable.get("tcp.port"):remove(registered_cm_port, cm)
        registered_cm_port = cm.prefs.port
        DissectorTable.get("tcp.port"):add(registered_cm_port, cm)
    end
end
