import NIOCore
import NIOSSL
import NIOTLS

/// Writes the request once the TLS handshake (and so the verification) has completed, collects the response until
/// the server closes, and completes `done`.
final class HTTPExchange: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let request: String
    private let done: EventLoopPromise<PinningHTTPSClient.Response>
    private var received = ByteBuffer()
    private var handshakeCompleted = false

    init(request: String, done: EventLoopPromise<PinningHTTPSClient.Response>) {
        self.request = request
        self.done = done
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            handshakeCompleted = true
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        received.writeBuffer(&chunk)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A server that closes without close_notify after its response is fine.
        if case NIOSSLError.uncleanShutdown = error, received.readableBytes > 0 { return }
        done.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let text = received.readString(length: received.readableBytes) ?? ""
        if let head = text.split(separator: "\r\n", maxSplits: 1).first, head.hasPrefix("HTTP/") {
            let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
            done.succeed(.init(statusLine: String(head), body: body))
        } else {
            done.fail(
                PinningClientError(
                    handshakeCompleted ? .http : .handshake,
                    handshakeCompleted
                        ? "the server closed without an HTTP response" : "the connection closed during the handshake"))
        }
        context.fireChannelInactive()
    }
}
