package io.metaroce.verbs;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event {@code io.metaroce.verbs.CompletionError}: a work completion with an error status,
 * as a {@link CompletionPoller} saw it (the raw {@link CompletionQueue#poll} path records
 * nothing: it stays allocation-free). Enabled by default; a flush (WR_FLUSH_ERR) after a
 * connection broke records one per request.
 */
@Name("io.metaroce.verbs.CompletionError")
@Label("Work Completion Error")
@Category({"MetaRoCE", "Verbs"})
@Description("A work request completed with an error status")
@StackTrace(false)
final class CompletionErrorEvent extends jdk.jfr.Event {
    @Label("wr_id")
    long wrId;

    @Label("Status")
    String status;

    @Label("Opcode")
    String opcode;

    @Label("QP number")
    int qpNum;

    @Label("Vendor error")
    int vendorErr;

    @Label("Completion queue")
    String cq;

    static void emit(WorkCompletion.Snapshot s, CompletionQueue cq) {
        CompletionErrorEvent e = new CompletionErrorEvent();
        if (e.isEnabled()) {
            e.wrId = s.wrId();
            e.status = WorkCompletion.statusName(s.status());
            e.opcode = WorkCompletion.opcodeName(s.opcode());
            e.qpNum = s.qpNum();
            e.vendorErr = s.vendorErr();
            e.cq = cq.describe();
            e.commit();
        }
    }
}
