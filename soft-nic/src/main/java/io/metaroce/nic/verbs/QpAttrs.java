package io.metaroce.nic.verbs;

import static io.metaroce.abi.QpAttrDescriptor.*;

import io.metaroce.nic.transport.Qp;
import java.nio.ByteBuffer;

/** A {@code struct mrce_qp_attr} decoded from or encoded to a little-endian buffer. */
public final class QpAttrs {
    public int qpState;
    public int curQpState;
    public int pathMtu;
    public int qkey;
    public int rqPsn;
    public int sqPsn;
    public int destQpNum;
    public int qpAccessFlags;
    public int maxSendWr;
    public int maxRecvWr;
    public int maxSendSge;
    public int maxRecvSge;
    public int maxInlineData;
    public int flowLabel;
    public final byte[] dgid = new byte[16];
    public int sgidIndex;
    public int hopLimit;
    public int trafficClass;
    public int isGlobal;
    public int dlid;
    public int sl;
    public int srcPathBits;
    public int staticRate;
    public int ahPortNum;
    public int pkeyIndex;
    public int enSqdAsyncNotify;
    public int sqDraining;
    public int maxRdAtomic;
    public int maxDestRdAtomic;
    public int minRnrTimer;
    public int portNum;
    public int timeout;
    public int retryCnt;
    public int rnrRetry;

    public static QpAttrs read(ByteBuffer b, int base) {
        QpAttrs a = new QpAttrs();
        a.qpState = b.getInt(base + (int) OFF_QP_STATE);
        a.curQpState = b.getInt(base + (int) OFF_CUR_QP_STATE);
        a.pathMtu = b.getInt(base + (int) OFF_PATH_MTU);
        a.qkey = b.getInt(base + (int) OFF_QKEY);
        a.rqPsn = b.getInt(base + (int) OFF_RQ_PSN);
        a.sqPsn = b.getInt(base + (int) OFF_SQ_PSN);
        a.destQpNum = b.getInt(base + (int) OFF_DEST_QP_NUM);
        a.qpAccessFlags = b.getInt(base + (int) OFF_QP_ACCESS_FLAGS);
        a.maxSendWr = b.getInt(base + (int) OFF_MAX_SEND_WR);
        a.maxRecvWr = b.getInt(base + (int) OFF_MAX_RECV_WR);
        a.maxSendSge = b.getInt(base + (int) OFF_MAX_SEND_SGE);
        a.maxRecvSge = b.getInt(base + (int) OFF_MAX_RECV_SGE);
        a.maxInlineData = b.getInt(base + (int) OFF_MAX_INLINE_DATA);
        a.flowLabel = b.getInt(base + (int) OFF_FLOW_LABEL);
        b.get(base + (int) OFF_DGID, a.dgid);
        a.sgidIndex = b.get(base + (int) OFF_SGID_INDEX) & 0xff;
        a.hopLimit = b.get(base + (int) OFF_HOP_LIMIT) & 0xff;
        a.trafficClass = b.get(base + (int) OFF_TRAFFIC_CLASS) & 0xff;
        a.isGlobal = b.get(base + (int) OFF_IS_GLOBAL) & 0xff;
        a.dlid = b.getShort(base + (int) OFF_DLID) & 0xffff;
        a.sl = b.get(base + (int) OFF_SL) & 0xff;
        a.srcPathBits = b.get(base + (int) OFF_SRC_PATH_BITS) & 0xff;
        a.staticRate = b.get(base + (int) OFF_STATIC_RATE) & 0xff;
        a.ahPortNum = b.get(base + (int) OFF_AH_PORT_NUM) & 0xff;
        a.pkeyIndex = b.getShort(base + (int) OFF_PKEY_INDEX) & 0xffff;
        a.enSqdAsyncNotify = b.get(base + (int) OFF_EN_SQD_ASYNC_NOTIFY) & 0xff;
        a.sqDraining = b.get(base + (int) OFF_SQ_DRAINING) & 0xff;
        a.maxRdAtomic = b.get(base + (int) OFF_MAX_RD_ATOMIC) & 0xff;
        a.maxDestRdAtomic = b.get(base + (int) OFF_MAX_DEST_RD_ATOMIC) & 0xff;
        a.minRnrTimer = b.get(base + (int) OFF_MIN_RNR_TIMER) & 0xff;
        a.portNum = b.get(base + (int) OFF_PORT_NUM) & 0xff;
        a.timeout = b.get(base + (int) OFF_TIMEOUT) & 0xff;
        a.retryCnt = b.get(base + (int) OFF_RETRY_CNT) & 0xff;
        a.rnrRetry = b.get(base + (int) OFF_RNR_RETRY) & 0xff;
        return a;
    }

    /** The current attributes of a QP (engine thread). */
    public static QpAttrs of(Qp qp) {
        QpAttrs a = new QpAttrs();
        a.qpState = qp.state;
        a.curQpState = qp.state;
        a.pathMtu = qp.pathMtu;
        a.qkey = qp.qkey;
        a.rqPsn = qp.rqPsn;
        a.sqPsn = qp.sqPsn;
        a.destQpNum = qp.destQpNum;
        a.qpAccessFlags = qp.accessFlags;
        a.maxSendWr = qp.maxSendWr;
        a.maxRecvWr = qp.maxRecvWr;
        a.maxSendSge = qp.maxSendSge;
        a.maxRecvSge = qp.maxRecvSge;
        a.maxInlineData = qp.maxInlineData;
        a.flowLabel = qp.flowLabel;
        System.arraycopy(qp.dgid, 0, a.dgid, 0, 16);
        a.sgidIndex = qp.sgidIndex;
        a.hopLimit = qp.hopLimit;
        a.trafficClass = qp.trafficClass;
        a.isGlobal = qp.isGlobal ? 1 : 0;
        a.sl = qp.sl;
        a.ahPortNum = qp.ahPortNum;
        a.pkeyIndex = qp.pkeyIndex;
        a.maxRdAtomic = qp.maxRdAtomic;
        a.maxDestRdAtomic = qp.maxDestRdAtomic;
        a.minRnrTimer = qp.minRnrTimer;
        a.portNum = qp.portNum;
        a.timeout = qp.timeout;
        a.retryCnt = qp.retryCnt;
        a.rnrRetry = qp.rnrRetry;
        return a;
    }

    public void write(ByteBuffer b, int base) {
        b.putInt(base + (int) OFF_QP_STATE, qpState);
        b.putInt(base + (int) OFF_CUR_QP_STATE, curQpState);
        b.putInt(base + (int) OFF_PATH_MTU, pathMtu);
        b.putInt(base + (int) OFF_QKEY, qkey);
        b.putInt(base + (int) OFF_RQ_PSN, rqPsn);
        b.putInt(base + (int) OFF_SQ_PSN, sqPsn);
        b.putInt(base + (int) OFF_DEST_QP_NUM, destQpNum);
        b.putInt(base + (int) OFF_QP_ACCESS_FLAGS, qpAccessFlags);
        b.putInt(base + (int) OFF_MAX_SEND_WR, maxSendWr);
        b.putInt(base + (int) OFF_MAX_RECV_WR, maxRecvWr);
        b.putInt(base + (int) OFF_MAX_SEND_SGE, maxSendSge);
        b.putInt(base + (int) OFF_MAX_RECV_SGE, maxRecvSge);
        b.putInt(base + (int) OFF_MAX_INLINE_DATA, maxInlineData);
        b.putInt(base + (int) OFF_FLOW_LABEL, flowLabel);
        b.put(base + (int) OFF_DGID, dgid);
        b.put(base + (int) OFF_SGID_INDEX, (byte) sgidIndex);
        b.put(base + (int) OFF_HOP_LIMIT, (byte) hopLimit);
        b.put(base + (int) OFF_TRAFFIC_CLASS, (byte) trafficClass);
        b.put(base + (int) OFF_IS_GLOBAL, (byte) isGlobal);
        b.putShort(base + (int) OFF_DLID, (short) dlid);
        b.put(base + (int) OFF_SL, (byte) sl);
        b.put(base + (int) OFF_SRC_PATH_BITS, (byte) srcPathBits);
        b.put(base + (int) OFF_STATIC_RATE, (byte) staticRate);
        b.put(base + (int) OFF_AH_PORT_NUM, (byte) ahPortNum);
        b.putShort(base + (int) OFF_PKEY_INDEX, (short) pkeyIndex);
        b.put(base + (int) OFF_EN_SQD_ASYNC_NOTIFY, (byte) enSqdAsyncNotify);
        b.put(base + (int) OFF_SQ_DRAINING, (byte) sqDraining);
        b.put(base + (int) OFF_MAX_RD_ATOMIC, (byte) maxRdAtomic);
        b.put(base + (int) OFF_MAX_DEST_RD_ATOMIC, (byte) maxDestRdAtomic);
        b.put(base + (int) OFF_MIN_RNR_TIMER, (byte) minRnrTimer);
        b.put(base + (int) OFF_PORT_NUM, (byte) portNum);
        b.put(base + (int) OFF_TIMEOUT, (byte) timeout);
        b.put(base + (int) OFF_RETRY_CNT, (byte) retryCnt);
        b.put(base + (int) OFF_RNR_RETRY, (byte) rnrRetry);
    }
}
