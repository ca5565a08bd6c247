package io.metaroce.nic.verbs;

/**
 * What one user (uid) may hold on a daemon across all its connections: QPs, MRs, registered
 * bytes, CQ entries. 0 means no limit. Beyond a quota a create answers ENOMEM and other users are
 * not affected (the device-wide {@link Limits} still apply to everyone together).
 */
public record UserQuota(long qps, long mrs, long mrBytes, long cqEntries) {
    public static final UserQuota NONE = new UserQuota(0, 0, 0, 0);

    static final int QPS = 0;
    static final int MRS = 1;
    static final int MR_BYTES = 2;
    static final int CQ_ENTRIES = 3;

    public UserQuota {
        if (qps < 0 || mrs < 0 || mrBytes < 0 || cqEntries < 0) {
            throw new IllegalArgumentException("negative quota");
        }
    }

    long limit(int kind) {
        return switch (kind) {
            case QPS -> qps;
            case MRS -> mrs;
            case MR_BYTES -> mrBytes;
            default -> cqEntries;
        };
    }
}
