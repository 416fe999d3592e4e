// Two verifier stacks of PinningLab's compatibility suite (Compatibility/README.md):
//   compat-verify --stack boringssl --mode handshake CASES.json   BoringSSL's default verification through
//                                                                 swift-nio-ssl: chain, host name, a real handshake
//   compat-verify --stack swift-certificates --mode path CASES.json
//                                                                 swift-certificates' Verifier: RFC5280Policy plus
//                                                                 ServerIdentityPolicy (or clientAuth EKU)
// One JSON line per case on standard output: {"id": …, "result": "accept"|"refuse"|"n/a", "detail": …}.
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import SwiftASN1
import X509

struct Case: Decodable {
    var id: String
    var chain: [String]
    var roots: [String]
    var host: String
    var purpose: String
    var port: Int?
}

struct Line: Encodable {
    var id: String
    var result: String
    var detail: String
}

func pemCertificates(_ paths: [String]) throws -> [Certificate] {
    try paths.flatMap { path -> [Certificate] in
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try PEMDocument.parseMultiple(pemString: text).map { try Certificate(pemDocument: $0) }
    }
}

/// The extended key usage a client certificate must allow (RFC5280Policy does not check it).
struct ClientAuthPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.extendedKeyUsage]
    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard let eku = try? chain.leaf.extensions.extendedKeyUsage else { return .meetsPolicy }
        return eku.contains(.clientAuth)
            ? .meetsPolicy : .failsToMeetPolicy(reason: "the EKU does not allow clientAuth")
    }
}

func swiftCertificates(_ c: Case) async -> Line {
    do {
        let chain = try pemCertificates(c.chain)
        let roots = try pemCertificates(c.roots)
        guard let leaf = chain.first else { return Line(id: c.id, result: "refuse", detail: "empty chain") }
        let isIP = c.host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" }
        let result: CertificateValidationResult
        if c.purpose == "client" {
            var v = Verifier(rootCertificates: CertificateStore(roots)) {
                RFC5280Policy()
                ClientAuthPolicy()
            }
            result = await v.validate(leaf: leaf, intermediates: CertificateStore(chain.dropFirst()))
        } else {
            var v = Verifier(rootCertificates: CertificateStore(roots)) {
                RFC5280Policy()
                ServerIdentityPolicy(serverHostname: isIP ? nil : c.host, serverIP: isIP ? c.host : nil)
            }
            result = await v.validate(leaf: leaf, intermediates: CertificateStore(chain.dropFirst()))
        }
        switch result {
        case .validCertificate: return Line(id: c.id, result: "accept", detail: "validated")
        case .couldNotValidate(let failures):
            let why = failures.map { "\($0.policyFailureReason)" }.first ?? "no path to a trusted root"
            return Line(id: c.id, result: "refuse", detail: why)
        }
    } catch {
        return Line(id: c.id, result: "refuse", detail: "\(error)")
    }
}

/// Completes the TLS handshake (and so BoringSSL's verification) or fails.
final class HandshakeWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let done: EventLoopPromise<Void>
    init(done: EventLoopPromise<Void>) { self.done = done }
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? TLSUserEvent, case .handshakeCompleted = e { done.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.close(promise: nil)
    }
    func channelInactive(context: ChannelHandlerContext) {
        done.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}

func boringSSL(_ c: Case) async -> Line {
    guard let port = c.port, port > 0 else { return Line(id: c.id, result: "n/a", detail: "no server for this case") }
    do {
        var tls = TLSConfiguration.makeClientConfiguration()  // BoringSSL's defaults: full verification
        tls.trustRoots = .certificates(try c.roots.flatMap { try NIOSSLCertificate.fromPEMFile($0) })
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.next().makePromise(of: Void.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            try NIOSSLClientHandler(context: context, serverHostname: c.host),
                            HandshakeWatcher(done: done),
                        ])
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
        } catch {
            done.fail(error)
            throw error
        }
        let timer = channel.eventLoop.scheduleTask(in: .seconds(5)) {
            done.fail(ChannelError.connectTimeout(.seconds(5)))
        }
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        try await done.futureResult.get()
        return Line(id: c.id, result: "accept", detail: "handshake completed")
    } catch {
        return Line(id: c.id, result: "refuse", detail: "\(error)")
    }
}

@main
struct CompatVerify {
    static func main() async {
        let args = Array(CommandLine.arguments.dropFirst())
        func value(_ flag: String) -> String? {
            args.firstIndex(of: flag).flatMap { args.indices.contains($0 + 1) ? args[$0 + 1] : nil }
        }
        guard let stack = value("--stack"), ["boringssl", "swift-certificates"].contains(stack) else {
            FileHandle.standardError.write(
                Data(
                    "usage: compat-verify --stack boringssl|swift-certificates [--version | --mode path|handshake CASES.json]\n"
                        .utf8))
            exit(2)
        }
        if args.contains("--version") {
            print(stack == "boringssl" ? "BoringSSL via swift-nio-ssl 2.37" : "swift-certificates 1.21 Verifier")
            return
        }
        guard let mode = value("--mode"), let file = args.last, let data = FileManager.default.contents(atPath: file),
            let cases = try? JSONDecoder().decode([Case].self, from: data)
        else {
            FileHandle.standardError.write(
                Data("compat-verify: cannot read the case file (\(args.last ?? "none")): a JSON array of cases\n".utf8))
            exit(2)
        }
        let encoder = JSONEncoder()
        for c in cases {
            let line: Line
            switch (stack, mode) {
            case ("boringssl", "handshake"):
                line =
                    c.purpose == "client"
                    ? Line(id: c.id, result: "n/a", detail: "client certificates are judged by path validation")
                    : await boringSSL(c)
            case ("swift-certificates", "path"):
                line = await swiftCertificates(c)
            default:
                line = Line(
                    id: c.id, result: "n/a",
                    detail: "\(stack) is judged by \(stack == "boringssl" ? "handshake" : "path")")
            }
            print(String(decoding: try! encoder.encode(line), as: UTF8.self))
        }
    }
}
