package io.metaroce.nic.verbs;

/**
 * What one user (uid) may hold on a daemon across all its connections: QPs, MRs, registered
 * bytes, CQ entries, control connections (sessions that said HELLO), PDs, CQs and SRQs. 0 means no
 * limit. Beyond a quota a create (or a connection's HELLO) answers ENOMEM and other users are not
 * affected (the device-wide {@link Limits} still apply to everyone together).
 */
public record UserQuota(
        long qps, long mrs, long mrBytes, long cqEntries, long connections, long pds, long cqs, long srqs) {
    public static final UserQuota NONE = new UserQuota(0, 0, 0, 0, 0, 0, 0, 0);

    static final int QPS = 0;
    static final int MRS = 1;
    static final int MR_BYTES = 2;
    static final int CQ_ENTRIES = 3;
    static final int CONNECTIONS = 4;
    static final int PDS = 5;
    static final int CQS = 6;
    static final int SRQS = 7;
    static final int KINDS = 8;

    public UserQuota {
        if (qps < 0 || mrs < 0 || mrBytes < 0 || cqEntries < 0 || connections < 0 || pds < 0 || cqs < 0 || srqs < 0) {
            throw new IllegalArgumentException("negative quota");
        }
    }

    /** QPs, MRs, registered bytes and CQ entries only; the rest without limit. */
    public UserQuota(long qps, long mrs, long mrBytes, long cqEntries) {
        this(qps, mrs, mrBytes, cqEntries, 0, 0, 0, 0);
    }

    long limit(int kind) {
        return switch (kind) {
            case QPS -> qps;
            case MRS -> mrs;
            case MR_BYTES -> mrBytes;
            case CQ_ENTRIES -> cqEntries;
            case CONNECTIONS -> connections;
            case PDS -> pds;
            case CQS -> cqs;
            default -> srqs;
        };
    }
}
