package io.metaroce.nic.transport;

import io.metaroce.nic.model.Mr;
import java.lang.foreign.MemorySegment;

/**
 * The READ requests an RC responder is answering (docs/spec/transport.md section 8a): a ring of
 * read jobs, each the response packets still to send for one request or one re-request of a
 * range, served a burst at a time. Originals count against max_dest_rd_atomic; re-requests leave
 * room for them (spec T-5.13).
 *
 * <p>Engine thread only; one per {@link RcResponder}.
 */
final class ReadJobs {
    /** Read jobs queued at most (requests being answered plus re-requests). */
    static final int CAPACITY = 32;

    private static final int MASK = CAPACITY - 1;
    private static final int BURST = Datapath.RESPONSE_BURST;

    /** One READ request (or re-request) being answered: response packets still to send. */
    static final class ReadJob {
        int rsn;
        Mr mr;
        /** Application address of the READ's byte 0. */
        long base;

        long next;
        long end;
        long msgLen;
        int unit;
        /** Packets still to send (a zero-length READ sends one empty response). */
        int left;
        /** An original request (counts against max_dest_rd_atomic), not a re-request. */
        boolean original;
    }

    private final ReadJob[] jobs = new ReadJob[CAPACITY];
    private int head;
    private int tail;
    /** Original requests among the jobs. */
    private int originals;

    private final int[] responseLen = new int[BURST];
    private final int[] responseJob = new int[BURST];

    ReadJobs() {
        for (int i = 0; i < CAPACITY; i++) {
            jobs[i] = new ReadJob();
        }
    }

    void clear() {
        for (int i = head; i != tail; i++) {
            jobs[i & MASK].mr = null;
        }
        head = tail = 0;
        originals = 0;
    }

    boolean isEmpty() {
        return head == tail;
    }

    /** Whether an original READ may start: fewer than {@code maxDestRdAtomic} outstanding, and room. */
    boolean admitsOriginal(int maxDestRdAtomic) {
        return originals < maxDestRdAtomic && tail - head < CAPACITY;
    }

    /** Whether a re-request fits while leaving room for the originals max_dest_rd_atomic admits. */
    boolean admitsResend(int maxDestRdAtomic) {
        return tail - head < CAPACITY - Math.max(0, maxDestRdAtomic - originals);
    }

    /** Whether byte {@code offset} of READ {@code rsn} is still to be sent by a queued job. */
    boolean answering(int rsn, long offset) {
        for (int i = head; i != tail; i++) {
            ReadJob j = jobs[i & MASK];
            if (j.rsn == rsn && j.next <= offset && offset < j.end) {
                return true;
            }
        }
        return false;
    }

    /**
     * Queues the responses for bytes [{@code offset}, {@code offset + len}) of READ {@code rsn} of
     * {@code msgLen} bytes whose byte 0 is at application address {@code base} in {@code mr}
     * (null for a zero-length READ), {@code unit} bytes a packet. The caller checked the room.
     */
    void add(int rsn, Mr mr, long base, long offset, int len, long msgLen, int unit, boolean original) {
        ReadJob j = jobs[tail & MASK];
        j.rsn = rsn;
        j.mr = mr;
        j.base = base;
        j.next = offset;
        j.end = offset + len;
        j.msgLen = msgLen;
        j.unit = unit;
        j.left = Math.max(1, (int) ((len + (long) unit - 1) / unit));
        j.original = original;
        tail++;
        if (original) {
            originals++;
        }
    }

    /**
     * Sends up to a burst of READ response packets: the payloads are gathered from the
     * application with one process_vm_readv, then copied into port frames. A job whose region
     * was deregistered, or whose memory cannot be read, fails its request through the responder.
     */
    int serve(Datapath dp, Qp qp, RcResponder responder) {
        dp.gather.begin(qp.pid);
        int n = 0;
        for (int i = head; i != tail && n < BURST; i++) {
            ReadJob j = jobs[i & MASK];
            if (j.mr != null && !j.mr.live()) {
                responder.fail(dp, j.rsn, Wire.NAK_REMOTE_ACCESS); // deregistered while being read
                return n;
            }
            while (j.left > 0 && n < BURST) {
                int len = (int) Math.min(j.unit, j.end - j.next);
                MemorySegment f = dp.responseFrames[n];
                Wire.header(
                        f,
                        Wire.OP_READ_RESP,
                        0,
                        0,
                        0,
                        j.rsn + (ConformanceBreak.READ_RESP_WRONG_RSN ? 1 : 0),
                        qp.destQpNum,
                        qp.qpn,
                        qp.txToken,
                        0,
                        (int) j.next,
                        (int) j.msgLen,
                        0,
                        0,
                        0);
                if (len > 0) {
                    dp.gather.add(f.address() + Wire.HEADER_SIZE, j.base + j.next, len, n);
                }
                responseLen[n] = Wire.HEADER_SIZE + len;
                responseJob[n] = j.rsn;
                j.next += len;
                j.left--;
                n++;
            }
        }
        if (dp.gather.count() > 0 && dp.gather.flush() > 0) {
            for (int i = 0; i < dp.gather.count(); i++) {
                if (dp.gather.failed(i)) {
                    responder.fail(dp, responseJob[dp.gather.tag(i)], Wire.NAK_REMOTE_OPERATIONAL);
                    return n;
                }
            }
        }
        while (head != tail && jobs[head & MASK].left == 0) {
            if (jobs[head & MASK].original) {
                originals--;
            }
            jobs[head & MASK].mr = null;
            head++;
        }
        for (int i = 0; i < n; i++) {
            int len = responseLen[i];
            MemorySegment out = dp.port.claim();
            MemorySegment.copy(dp.responseFrames[i], 0, out, 0, len);
            dp.sendClaimed(out, len, qp.peerIp, qp.peerPort, responder.responseEntropy(dp));
        }
        dp.counters.responsesTx += n;
        return n;
    }
}
