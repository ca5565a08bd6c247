package io.metaroce.control.cm;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The cluster secret and what is derived from it (docs/spec/connection-manager.md section 8):
 * each side of a connection proves it holds the secret with an HMAC-SHA256 over its HELLO, its own
 * nonce and the peer's fresh nonce ({@link CmMessage.AuthProof}); both nonces key a session that
 * masks the tokens carried in CONNECT, ACCEPT and DISCONNECT. Event loop only (the {@link Mac}s
 * are not thread-safe).
 */
public final class CmAuth {
    /** Fewest and most bytes a secret file may hold. */
    public static final int MIN_SECRET = 16;

    public static final int MAX_SECRET = 4096;

    private static final byte[] PROOF_LABEL = "MRCM v3 proof".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] SESSION_LABEL = "MRCM v3 session".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] TOKEN_LABEL = "MRCM v3 token".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte DIALER = 'D';
    private static final byte ACCEPTOR = 'A';

    private final Mac secretMac;
    private final SecureRandom random = new SecureRandom();

    CmAuth(byte[] secret) {
        if (secret.length < MIN_SECRET) {
            throw new IllegalArgumentException("a cluster secret needs at least " + MIN_SECRET + " bytes");
        }
        this.secretMac = hmac(secret);
    }

    /**
     * Reads a cluster secret file: a regular file owned by root (or by the user the daemon runs
     * as) that neither group nor others may access, holding {@value #MIN_SECRET} to
     * {@value #MAX_SECRET} bytes, taken as they are.
     *
     * @throws IOException naming the file and what is wrong with it
     */
    public static byte[] loadSecret(Path file) throws IOException {
        PosixFileAttributes a;
        int uid;
        int self;
        try {
            a = Files.readAttributes(file, PosixFileAttributes.class);
            uid = (Integer) Files.getAttribute(file, "unix:uid");
            self = (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | UnsupportedOperationException e) {
            throw new IOException("cluster secret " + file + ": cannot read its attributes: " + e.getMessage(), e);
        }
        if (!a.isRegularFile()) {
            throw new IOException("cluster secret " + file + " is not a regular file");
        }
        if (uid != 0 && uid != self) {
            throw new IOException("cluster secret " + file + " is owned by uid " + uid + ": it must be owned by root"
                    + " (chown root: " + file + ")");
        }
        Set<PosixFilePermission> open = EnumSet.of(
                PosixFilePermission.GROUP_READ,
                PosixFilePermission.GROUP_WRITE,
                PosixFilePermission.GROUP_EXECUTE,
                PosixFilePermission.OTHERS_READ,
                PosixFilePermission.OTHERS_WRITE,
                PosixFilePermission.OTHERS_EXECUTE);
        open.retainAll(a.permissions());
        if (!open.isEmpty()) {
            throw new IOException(
                    "cluster secret " + file + " is accessible to group or others (" + open + "): chmod 600 " + file);
        }
        if (a.size() < MIN_SECRET || a.size() > MAX_SECRET) {
            throw new IOException("cluster secret " + file + " holds " + a.size() + " bytes: it needs " + MIN_SECRET
                    + " to " + MAX_SECRET + " (e.g. head -c 32 /dev/urandom > " + file + ")");
        }
        byte[] secret = Files.readAllBytes(file);
        if (secret.length < MIN_SECRET) {
            throw new IOException("cluster secret " + file + " holds " + secret.length + " bytes");
        }
        return secret;
    }

    /** A fresh nonce for one connection. */
    byte[] nonce() {
        byte[] n = new byte[CmMessage.AuthChallenge.NONCE_BYTES];
        random.nextBytes(n);
        return n;
    }

    /**
     * The proof the sender of {@code hello} gives on a connection it dialled ({@code dialer}) or
     * accepted: HMAC(secret, label | role | HELLO frame | sender's nonce | receiver's nonce). The
     * role keeps a proof from being reflected back to its maker; the receiver's nonce, fresh per
     * connection, keeps it from being replayed.
     */
    byte[] proof(boolean dialer, CmMessage.Hello hello, byte[] senderNonce, byte[] receiverNonce) {
        ByteBuf frame = Unpooled.buffer(CmCodec.HELLO_SIZE);
        try {
            CmCodec.encode(hello, frame);
            secretMac.update(PROOF_LABEL);
            secretMac.update(dialer ? DIALER : ACCEPTOR);
            secretMac.update(frame.nioBuffer());
            secretMac.update(senderNonce);
            secretMac.update(receiverNonce);
            return secretMac.doFinal();
        } finally {
            frame.release();
        }
    }

    /** Whether {@code mac} is the proof of {@link #proof}, compared in constant time. */
    boolean verify(byte[] mac, boolean dialer, CmMessage.Hello hello, byte[] senderNonce, byte[] receiverNonce) {
        return MessageDigest.isEqual(mac, proof(dialer, hello, senderNonce, receiverNonce));
    }

    /** The session of one authenticated connection; {@code weDialed} is this side's role. */
    Session session(boolean weDialed, byte[] dialerNonce, byte[] acceptorNonce) {
        secretMac.update(SESSION_LABEL);
        secretMac.update(dialerNonce);
        secretMac.update(acceptorNonce);
        return new Session(weDialed, secretMac.doFinal());
    }

    /**
     * Masks the tokens of one connection: the n-th token-bearing message (CONNECT, ACCEPT,
     * DISCONNECT) each way carries {@code token ^ HMAC(session key, label | sender's role | n)}
     * (its first 4 bytes), so tokens never cross the wire in clear and a mask is never reused.
     */
    static final class Session {
        private final boolean weDialed;
        private final Mac mac;
        private final ByteBuffer block = ByteBuffer.allocate(TOKEN_LABEL.length + 1 + 8);
        private long sent;
        private long received;

        Session(boolean weDialed, byte[] key) {
            this.weDialed = weDialed;
            this.mac = hmac(key);
        }

        CmMessage outbound(CmMessage m) {
            return masked(
                    m,
                    weDialed,
                    m instanceof CmMessage.Connect || m instanceof CmMessage.Accept || m instanceof CmMessage.Disconnect
                            ? sent++
                            : -1);
        }

        CmMessage inbound(CmMessage m) {
            return masked(
                    m,
                    !weDialed,
                    m instanceof CmMessage.Connect || m instanceof CmMessage.Accept || m instanceof CmMessage.Disconnect
                            ? received++
                            : -1);
        }

        private CmMessage masked(CmMessage m, boolean senderDialed, long n) {
            return switch (m) {
                case CmMessage.Connect c ->
                    new CmMessage.Connect(c.requestId(), masked(c.endpoint(), mask(senderDialed, n)));
                case CmMessage.Accept a ->
                    new CmMessage.Accept(a.requestId(), masked(a.endpoint(), mask(senderDialed, n)));
                case CmMessage.Disconnect d ->
                    new CmMessage.Disconnect(
                            d.qpn(),
                            d.peerQpn(),
                            d.reason(),
                            d.token() ^ mask(senderDialed, n),
                            d.flags(),
                            d.placedRsn());
                default -> m;
            };
        }

        private static CmMessage.Endpoint masked(CmMessage.Endpoint e, int mask) {
            return new CmMessage.Endpoint(
                    e.qpn(),
                    e.peerQpn(),
                    e.mtu(),
                    e.window(),
                    e.startPsn(),
                    e.token() ^ mask,
                    e.entropies(),
                    e.linkMtu());
        }

        int mask(boolean senderDialed, long n) {
            block.clear();
            block.put(TOKEN_LABEL)
                    .put(senderDialed ? DIALER : ACCEPTOR)
                    .putLong(n)
                    .flip();
            mac.update(block);
            return ByteBuffer.wrap(mac.doFinal()).getInt();
        }
    }

    private static Mac hmac(byte[] key) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(key, "HmacSHA256"));
            return m;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }
}
