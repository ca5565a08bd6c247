package io.metaroce.control;

import io.netty.handler.codec.CorruptedFrameException;

/** A frame broke the local control protocol; the connection that sent it is closed. */
final class ControlProtocolException extends CorruptedFrameException {

    ControlProtocolException(String reason) {
        super(reason);
    }
}
