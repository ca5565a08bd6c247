package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.dma.DmaBatch;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.model.Pd;

/**
 * The scatter/gather list of one work request, validated once when the WQE is read (the
 * application may rewrite its ring slot afterwards) and kept as application addresses with the
 * region each piece was checked against. Engine thread only.
 */
final class SgeList {
    int count;
    final long[] appAddr = new long[AbiConstants.MRCE_MAX_SGE];
    final int[] length = new int[AbiConstants.MRCE_MAX_SGE];
    /** The region of each piece: a copy checks it is still registered. */
    final Mr[] region = new Mr[AbiConstants.MRCE_MAX_SGE];

    /**
     * Reads {@code numSge} SGEs of {@code wqe}: each lkey must name a region of the QP's PD and
     * process that holds the range and grants {@code access} (0 for none). Empty SGEs are dropped.
     * Returns the total length, or -1 on a protection error (then nothing is kept).
     */
    long load(MrTable mrs, Qp qp, WqeFlyweight wqe, int numSge, int access) {
        return load(mrs, qp.pd, qp.pid, wqe, numSge, access);
    }

    /** As above, against protection domain {@code pd} of process {@code pid} (an SRQ's). */
    long load(MrTable mrs, Pd pd, int pid, WqeFlyweight wqe, int numSge, int access) {
        count = 0;
        long total = 0;
        for (int i = 0; i < numSge; i++) {
            long addr = wqe.sgeAddr(i);
            long len = wqe.sgeLength(i) & 0xffffffffL;
            if (len == 0) {
                continue;
            }
            Mr mr = mrs.byLkey(wqe.sgeLkey(i));
            if (mr == null
                    || mr.pd != pd
                    || mr.pid != pid
                    || !mr.contains(addr, len)
                    || (mr.access & access) != access) {
                count = 0;
                return -1;
            }
            appAddr[count] = mr.translate(addr);
            region[count] = mr;
            length[count] = (int) len;
            count++;
            total += len;
        }
        return total;
    }

    /**
     * Adds to {@code batch} the copies of bytes [{@code offset}, {@code offset + len}) of the list
     * to or from {@code local}, one entry per piece; a piece of a deregistered region becomes a
     * failed entry and is not copied.
     */
    void copy(DmaBatch batch, long offset, int len, long local, int tag) {
        long skip = offset;
        int remaining = len;
        for (int i = 0; i < count && remaining > 0; i++) {
            int sl = length[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            int n = (int) Math.min(sl - skip, remaining);
            if (region[i].live()) {
                batch.add(local, appAddr[i] + skip, n, tag);
            } else {
                batch.addFailed(tag);
            }
            local += n;
            remaining -= n;
            skip = 0;
        }
    }
}
