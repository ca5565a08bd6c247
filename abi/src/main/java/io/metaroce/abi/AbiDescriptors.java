package io.metaroce.abi;

import java.lang.foreign.StructLayout;
import java.util.List;

/** Every Java descriptor of an mrce_abi.h struct; MrceAbiAgreementTest checks each against the C compiler. */
public final class AbiDescriptors {
    public static final List<StructLayout> ALL = List.of(
            CtrlHdrDescriptor.LAYOUT,
            RingHeaderDescriptor.LAYOUT,
            SgeDescriptor.LAYOUT,
            WqeDescriptor.LAYOUT,
            CqeDescriptor.LAYOUT,
            HandleReqDescriptor.LAYOUT,
            HandleRespDescriptor.LAYOUT,
            HelloReqDescriptor.LAYOUT,
            HelloRespDescriptor.LAYOUT,
            RegMrReqDescriptor.LAYOUT,
            RegMrRespDescriptor.LAYOUT,
            CreateCqReqDescriptor.LAYOUT,
            CreateCqRespDescriptor.LAYOUT,
            CreateQpReqDescriptor.LAYOUT,
            CreateQpRespDescriptor.LAYOUT,
            QpAttrDescriptor.LAYOUT,
            ModifyQpReqDescriptor.LAYOUT,
            CreateSrqReqDescriptor.LAYOUT,
            CreateSrqRespDescriptor.LAYOUT,
            ModifySrqReqDescriptor.LAYOUT,
            SrqAttrDescriptor.LAYOUT,
            AsyncEventDescriptor.LAYOUT,
            ReregMrReqDescriptor.LAYOUT,
            CmListenReqDescriptor.LAYOUT,
            CmConnectReqDescriptor.LAYOUT,
            CmConnectRespDescriptor.LAYOUT,
            CmGetRequestReqDescriptor.LAYOUT,
            CmRequestDescriptor.LAYOUT,
            CmAcceptReqDescriptor.LAYOUT,
            CmRejectReqDescriptor.LAYOUT,
            ContextTokenDescriptor.LAYOUT,
            ImportContextReqDescriptor.LAYOUT,
            ImportMrReqDescriptor.LAYOUT,
            ImportMrRespDescriptor.LAYOUT,
            ShareMrReqDescriptor.LAYOUT);

    private AbiDescriptors() {}
}
