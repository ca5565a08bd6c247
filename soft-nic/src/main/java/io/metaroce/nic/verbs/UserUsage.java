package io.metaroce.nic.verbs;

import java.util.Map;

/** Per-user quotas and what each user's connections hold against them (see {@link UserQuota}). */
final class UserUsage {
    private volatile UserQuota quota = UserQuota.NONE;
    /** Per uid: what its connections hold, indexed by UserQuota's kinds (guarded by itself). */
    private final Map<Integer, long[]> usage = new java.util.HashMap<>();

    /** Per-user quotas from now on (existing objects are kept). */
    void quota(UserQuota q) {
        this.quota = q;
    }

    /**
     * Takes {@code n} of {@code kind} from the session's user; false (nothing taken) when that
     * would exceed the user's quota.
     */
    boolean charge(SessionObjects s, int kind, long n) {
        long limit = quota.limit(kind);
        synchronized (usage) {
            long[] u = usage.computeIfAbsent(s.session.uid(), k -> new long[UserQuota.KINDS]);
            if (limit > 0 && u[kind] + n > limit) {
                return false;
            }
            u[kind] += n;
            return true;
        }
    }

    void discharge(SessionObjects s, int kind, long n) {
        synchronized (usage) {
            long[] u = usage.get(s.session.uid());
            if (u != null) {
                u[kind] -= n;
            }
        }
    }
}
