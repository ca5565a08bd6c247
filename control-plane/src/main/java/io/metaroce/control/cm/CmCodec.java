package io.metaroce.control.cm;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.MessageToByteEncoder;
import java.util.List;

/**
 * Frames of the connection manager (docs/spec/connection-manager.md): {@code u16 length} (of the
 * whole frame, header included), {@code u8 type}, {@code u8 flags = 0}, then the type's payload,
 * big-endian. A frame of a wrong length for its type, an unknown type, a nonzero flags byte or a
 * field out of range is a protocol error: the decoder throws {@link CmProtocolException} and the
 * connection is closed. Types {@link #FIRST_IGNORABLE_TYPE}..255 are reserved for extensions a
 * receiver that does not know them skips (connection-manager.md section 2.3, CM-2.9): they decode
 * to nothing.
 */
public final class CmCodec {
    public static final int HEADER = 4;
    public static final int MAGIC = 0x4d52434d; // "MRCM"
    public static final int VERSION = 3;
    public static final int MAX_PATHS = 256;
    public static final int HELLO_SIZE = HEADER + 4 + 2 + 2 + 4 + 8 + 2 + 2 + 4;
    static final int ENDPOINT_FIXED = 4 + 4 + 4 + 4 + 4 + 4 + 2 + 2;
    /** The smallest link MTU an endpoint may announce (IPv4's minimum datagram every host takes). */
    public static final int MIN_LINK_MTU = 576;

    public static final int MAX_FRAME = HEADER + 4 + ENDPOINT_FIXED + 2 * MAX_PATHS;
    /** Fixed parts of the service payloads (before the private data). */
    static final int SVC_REQUEST_FIXED = 4 + 4 + 4 + 4 + 16 + 2 + 2;

    static final int SVC_REPLY_FIXED = 4 + 4 + 4 + 16 + 2 + 2;
    private static final int QPN_MASK = 0xffffff;
    /** Unknown types from here on are skipped, not a protocol error (extensions, CM-2.9). */
    public static final int FIRST_IGNORABLE_TYPE = 64;

    private CmCodec() {}

    public static void encode(CmMessage m, ByteBuf out) {
        int start = out.writerIndex();
        out.writeShort(0).writeByte(m.type()).writeByte(0);
        switch (m) {
            case CmMessage.Hello h ->
                out.writeInt(MAGIC)
                        .writeShort(h.version())
                        .writeShort(0)
                        .writeInt(h.capabilities())
                        .writeLong(h.bootId())
                        .writeShort(h.dataPort())
                        .writeShort(h.heartbeatMs())
                        .writeInt(h.servedIp());
            case CmMessage.Connect c -> endpoint(out.writeInt(c.requestId()), c.endpoint());
            case CmMessage.Accept a -> endpoint(out.writeInt(a.requestId()), a.endpoint());
            case CmMessage.Reject r ->
                out.writeInt(r.requestId())
                        .writeInt(r.qpn())
                        .writeInt(r.peerQpn())
                        .writeShort(r.reason())
                        .writeShort(0);
            case CmMessage.Disconnect d ->
                out.writeInt(d.qpn())
                        .writeInt(d.peerQpn())
                        .writeShort(d.reason())
                        .writeShort(0)
                        .writeInt(d.token())
                        .writeInt(d.flags())
                        .writeInt(d.placedRsn());
            case CmMessage.Ping p -> out.writeLong(p.sequence());
            case CmMessage.Pong p -> out.writeLong(p.sequence());
            case CmMessage.SvcRequest r -> {
                out.writeInt(r.requestId())
                        .writeInt(r.serviceId())
                        .writeInt(r.qpn())
                        .writeInt(r.psn())
                        .writeBytes(r.gid());
                privateData(out, r.privateData());
            }
            case CmMessage.SvcReply r -> {
                out.writeInt(r.requestId()).writeInt(r.qpn()).writeInt(r.psn()).writeBytes(r.gid());
                privateData(out, r.privateData());
            }
            case CmMessage.SvcReject r -> {
                byte[] pd = r.privateData();
                out.writeInt(r.requestId())
                        .writeShort(r.reason())
                        .writeShort(pd.length)
                        .writeBytes(pd);
            }
            case CmMessage.SvcReady r -> out.writeInt(r.requestId());
            case CmMessage.SvcCancel c ->
                out.writeInt(c.requestId()).writeShort(c.reason()).writeShort(0);
            case CmMessage.AuthChallenge c -> out.writeBytes(c.nonce());
            case CmMessage.AuthProof p -> out.writeBytes(p.mac());
        }
        out.setShort(start, out.writerIndex() - start);
    }

    private static void endpoint(ByteBuf out, CmMessage.Endpoint e) {
        out.writeInt(e.qpn())
                .writeInt(e.peerQpn())
                .writeInt(e.mtu())
                .writeInt(e.window())
                .writeInt(e.startPsn())
                .writeInt(e.token())
                .writeShort(e.paths())
                .writeShort(e.linkMtu());
        for (int x : e.entropies()) {
            out.writeShort(x);
        }
    }

    private static void privateData(ByteBuf out, byte[] pd) {
        out.writeShort(pd.length).writeShort(0).writeBytes(pd);
    }

    /**
     * Decodes one whole frame ({@code len} bytes at the reader index, already known to be there).
     *
     * @throws CmProtocolException on anything malformed
     */
    public static CmMessage decode(ByteBuf in, int len) {
        CmMessage m = decodeOrSkip(in, len);
        if (m == null) {
            throw new CmProtocolException("ignorable type " + in.getUnsignedByte(in.readerIndex() - len + 2));
        }
        return m;
    }

    /**
     * As {@link #decode}, but a frame of an unknown type at or above {@link #FIRST_IGNORABLE_TYPE}
     * (a well-formed frame whatever its flags) is skipped and gives {@code null}.
     */
    public static CmMessage decodeOrSkip(ByteBuf in, int len) {
        if (len >= HEADER
                && len <= MAX_FRAME
                && !CmConformanceBreak.CLOSE_ON_EXTENSION
                && in.getUnsignedByte(in.readerIndex() + 2)
                        >= (CmConformanceBreak.SKIP_BAD_FRAME ? 13 : FIRST_IGNORABLE_TYPE)) {
            in.skipBytes(len);
            return null;
        }
        if (len < HEADER || len > MAX_FRAME) {
            throw new CmProtocolException("frame length " + len + " out of range");
        }
        int base = in.readerIndex();
        int type = in.getUnsignedByte(base + 2);
        if (in.getUnsignedByte(base + 3) != 0) {
            throw new CmProtocolException("nonzero flags");
        }
        int p = base + HEADER;
        int body = len - HEADER;
        CmMessage m = switch (type) {
            case CmMessage.TYPE_HELLO -> {
                size(type, body, HELLO_SIZE - HEADER);
                if (in.getInt(p) != MAGIC) {
                    throw new CmProtocolException("bad magic");
                }
                int version = in.getUnsignedShort(p + 4);
                int hb = in.getUnsignedShort(p + 22);
                if (hb == 0) {
                    throw new CmProtocolException("heartbeat 0");
                }
                yield new CmMessage.Hello(
                        version,
                        in.getInt(p + 8),
                        in.getLong(p + 12),
                        in.getUnsignedShort(p + 20),
                        hb,
                        in.getInt(p + 24));
            }
            case CmMessage.TYPE_CONNECT -> new CmMessage.Connect(in.getInt(p), endpoint(in, p + 4, body - 4));
            case CmMessage.TYPE_ACCEPT -> new CmMessage.Accept(in.getInt(p), endpoint(in, p + 4, body - 4));
            case CmMessage.TYPE_REJECT -> {
                size(type, body, 16);
                yield new CmMessage.Reject(
                        in.getInt(p),
                        qpn(in.getInt(p + 4)),
                        qpn(in.getInt(p + 8)),
                        reason(in.getUnsignedShort(p + 12)));
            }
            case CmMessage.TYPE_DISCONNECT -> {
                size(type, body, 24);
                int flags = in.getInt(p + 16);
                if ((flags & ~CmMessage.Disconnect.FLAG_PLACED) != 0) {
                    throw new CmProtocolException("DISCONNECT flags " + Integer.toHexString(flags));
                }
                yield new CmMessage.Disconnect(
                        qpn(in.getInt(p)),
                        qpn(in.getInt(p + 4)),
                        reason(in.getUnsignedShort(p + 8)),
                        in.getInt(p + 12),
                        flags,
                        in.getInt(p + 20));
            }
            case CmMessage.TYPE_PING -> {
                size(type, body, 8);
                yield new CmMessage.Ping(in.getLong(p));
            }
            case CmMessage.TYPE_PONG -> {
                size(type, body, 8);
                yield new CmMessage.Pong(in.getLong(p));
            }
            case CmMessage.TYPE_SVC_REQUEST -> {
                byte[] pd = privateData(in, type, p + 32, body, SVC_REQUEST_FIXED);
                int service = in.getInt(p + 4);
                if (service == 0) {
                    throw new CmProtocolException("service id 0");
                }
                yield new CmMessage.SvcRequest(
                        in.getInt(p), service, qpn(in.getInt(p + 8)), psn(in.getInt(p + 12)), gid(in, p + 16), pd);
            }
            case CmMessage.TYPE_SVC_REPLY -> {
                byte[] pd = privateData(in, type, p + 28, body, SVC_REPLY_FIXED);
                yield new CmMessage.SvcReply(
                        in.getInt(p), qpn(in.getInt(p + 4)), psn(in.getInt(p + 8)), gid(in, p + 12), pd);
            }
            case CmMessage.TYPE_SVC_REJECT -> {
                if (body < 8) {
                    throw new CmProtocolException("type " + type + " payload " + body + " bytes, expected at least 8");
                }
                int n = in.getUnsignedShort(p + 6);
                if (n > CmMessage.SVC_PRIVATE_DATA_MAX || body != 8 + n) {
                    throw new CmProtocolException("private data length " + n + " in a payload of " + body + " bytes");
                }
                byte[] pd = new byte[n];
                in.getBytes(p + 8, pd);
                yield new CmMessage.SvcReject(in.getInt(p), svcReason(in.getUnsignedShort(p + 4)), pd);
            }
            case CmMessage.TYPE_SVC_READY -> {
                size(type, body, 4);
                yield new CmMessage.SvcReady(in.getInt(p));
            }
            case CmMessage.TYPE_SVC_CANCEL -> {
                size(type, body, 8);
                yield new CmMessage.SvcCancel(in.getInt(p), svcReason(in.getUnsignedShort(p + 4)));
            }
            case CmMessage.TYPE_AUTH_CHALLENGE -> {
                size(type, body, CmMessage.AuthChallenge.NONCE_BYTES);
                byte[] nonce = new byte[CmMessage.AuthChallenge.NONCE_BYTES];
                in.getBytes(p, nonce);
                yield new CmMessage.AuthChallenge(nonce);
            }
            case CmMessage.TYPE_AUTH_PROOF -> {
                size(type, body, CmMessage.AuthProof.MAC_BYTES);
                byte[] mac = new byte[CmMessage.AuthProof.MAC_BYTES];
                in.getBytes(p, mac);
                yield new CmMessage.AuthProof(mac);
            }
            default -> throw new CmProtocolException("unknown type " + type);
        };
        in.skipBytes(len);
        return m;
    }

    private static CmMessage.Endpoint endpoint(ByteBuf in, int p, int body) {
        if (body < ENDPOINT_FIXED) {
            throw new CmProtocolException("endpoint too short: " + body);
        }
        int paths = in.getUnsignedShort(p + 24);
        if (paths < 1 || paths > MAX_PATHS || body != ENDPOINT_FIXED + 2 * paths) {
            throw new CmProtocolException("endpoint with " + paths + " paths in " + body + " bytes");
        }
        int mtu = in.getInt(p + 8);
        if (mtu < 256 || mtu > 4096 || Integer.bitCount(mtu) != 1) {
            throw new CmProtocolException("bad mtu " + mtu);
        }
        int window = in.getInt(p + 12);
        if (window < 1 || window > 65536) {
            throw new CmProtocolException("bad window " + window);
        }
        int linkMtu = in.getUnsignedShort(p + 26);
        if (linkMtu != 0 && linkMtu < MIN_LINK_MTU) {
            throw new CmProtocolException("bad link mtu " + linkMtu);
        }
        int[] entropies = new int[paths];
        for (int i = 0; i < paths; i++) {
            entropies[i] = in.getUnsignedShort(p + ENDPOINT_FIXED + 2 * i);
        }
        return new CmMessage.Endpoint(
                qpn(in.getInt(p)),
                qpn(in.getInt(p + 4)),
                mtu,
                window,
                in.getInt(p + 16),
                in.getInt(p + 20),
                entropies,
                linkMtu);
    }

    /** Private data: {@code len u16 | reserved u16} at {@code at}, then the bytes, which end the payload. */
    private static byte[] privateData(ByteBuf in, int type, int at, int body, int fixed) {
        if (body < fixed) {
            throw new CmProtocolException("type " + type + " payload " + body + " bytes, expected at least " + fixed);
        }
        int n = in.getUnsignedShort(at);
        if (n > CmMessage.SVC_PRIVATE_DATA_MAX || body != fixed + n) {
            throw new CmProtocolException("private data length " + n + " in a payload of " + body + " bytes");
        }
        byte[] pd = new byte[n];
        in.getBytes(at + 4, pd);
        return pd;
    }

    private static byte[] gid(ByteBuf in, int at) {
        byte[] g = new byte[16];
        in.getBytes(at, g);
        return g;
    }

    private static int psn(int v) {
        if ((v & ~QPN_MASK) != 0) {
            throw new CmProtocolException("PSN out of range: " + Integer.toUnsignedString(v));
        }
        return v;
    }

    private static int svcReason(int r) {
        if (r < CmMessage.SVC_REJECTED || r > CmMessage.SVC_CANCELLED) {
            throw new CmProtocolException("unknown service reason " + r);
        }
        return r;
    }

    private static void size(int type, int body, int expected) {
        if (body != expected) {
            throw new CmProtocolException("type " + type + " payload " + body + " bytes, expected " + expected);
        }
    }

    private static int qpn(int v) {
        if ((v & ~QPN_MASK) != 0) {
            throw new CmProtocolException("QPN out of range: " + Integer.toUnsignedString(v));
        }
        return v;
    }

    private static int reason(int r) {
        if (r < CmMessage.REASON_NO_QP || r > CmMessage.REASON_TIMEOUT) {
            throw new CmProtocolException("unknown reason " + r);
        }
        return r;
    }

    /** Netty decoder: frames to messages. */
    public static final class Decoder extends ByteToMessageDecoder {
        private boolean failed;

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
            if (failed) {
                in.skipBytes(in.readableBytes()); // the connection is being closed: ignore the rest
                return;
            }
            while (in.readableBytes() >= 2) {
                int len = in.getUnsignedShort(in.readerIndex());
                if (in.readableBytes() < len && len >= HEADER && len <= MAX_FRAME) {
                    return;
                }
                try {
                    CmMessage m = CmCodec.decodeOrSkip(in, len);
                    if (m != null) {
                        out.add(m);
                    }
                } catch (CmProtocolException e) {
                    failed = true;
                    in.skipBytes(in.readableBytes());
                    throw e;
                }
            }
        }
    }

    /** Netty encoder: messages to frames. */
    @Sharable
    public static final class Encoder extends MessageToByteEncoder<CmMessage> {
        public static final Encoder INSTANCE = new Encoder();

        @Override
        protected void encode(ChannelHandlerContext ctx, CmMessage msg, ByteBuf out) {
            CmCodec.encode(msg, out);
        }
    }
}
