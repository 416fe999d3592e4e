// Plumbing shared by the Swift lab clients (swift-nio-ssl + swift-certificates). Nothing in here decides whether
// to trust a server: the lab file does, in three steps that mirror the Python clients:
//
//   1. validate(presented:cell:)            during the handshake (swift-nio-ssl's custom verification callback);
//                                            returns the chain it validated, or throws to abort the handshake;
//   2. checkPins(presented:validated:cell:) after the handshake, before anything is sent;
//   3. clientIdentity(cell:)                the client certificate to present, if any.
//
// Exit status: 0 = the client trusted the server and sent its request; 1 = it refused (reason on stderr).
import Crypto
import Foundation
import NIOCore
import NIOPosix
public import NIOSSL
import NIOTLS
import SwiftASN1
public import X509

/// The settings of one graded cell, from the environment `pinlab lab check` sets (PINLAB_HOST, PINLAB_PORT, ...).
public struct Cell: Sendable {
    public var host: String
    public var port: Int
    /// The roots the device trusts in this scenario (from PINLAB_CA).
    public var trustRoots: [Certificate]
    /// SHA-256 pins, base64 (PINLAB_PINS). Empty under the profile `none`.
    public var pins: [String]
    /// SHA-256 (hex) of the pinned identities' whole DER certificates (PINLAB_CERTPINS_HEX).
    public var certificatePinsHex: [String]
    /// PEM files of the client certificate (with its issuers) and its key; empty when the cell gives none.
    public var clientCertificateFile: String
    public var clientKeyFile: String
    /// The same client certificate and key as a PKCS#12 bundle, and its password.
    public var clientPKCS12File: String
    public var clientPKCS12Password: String

    public static func fromEnvironment() throws -> Cell {
        let env = ProcessInfo.processInfo.environment
        func list(_ k: String) -> [String] { (env[k] ?? "").split(separator: ",").map(String.init) }
        var roots: [Certificate] = []
        if let ca = env["PINLAB_CA"], !ca.isEmpty {
            let pem = try Array(Data(contentsOf: URL(fileURLWithPath: ca)))
            roots = try NIOSSLCertificate.fromPEMBytes(pem).map { try Certificate(derEncoded: $0.toDERBytes()) }
        }
        return Cell(
            host: env["PINLAB_HOST"] ?? "localhost", port: Int(env["PINLAB_PORT"] ?? "") ?? 443, trustRoots: roots,
            pins: list("PINLAB_PINS"), certificatePinsHex: list("PINLAB_CERTPINS_HEX"),
            clientCertificateFile: env["PINLAB_CLIENT_CERT"] ?? "", clientKeyFile: env["PINLAB_CLIENT_KEY"] ?? "",
            clientPKCS12File: env["PINLAB_CLIENT_P12"] ?? "", clientPKCS12Password: env["PINLAB_CLIENT_PASSWORD"] ?? "")
    }
}

/// A refusal: the client does not trust the server. Say why.
public struct Refusal: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A client certificate chain and its key, ready for swift-nio-ssl.
public struct ClientIdentity {
    public var certificateChain: [NIOSSLCertificate]
    public var privateKey: NIOSSLPrivateKey
    public init(certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}

/// One lab's client: the three decisions. The defaults are the correct ones; a lab file spells out the one it
/// teaches.
public protocol LabClient: SendableMetatype {
    static func validate(presented: [Certificate], cell: Cell) async throws -> [Certificate]
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws
    static func clientIdentity(cell: Cell) throws -> ClientIdentity?
}

extension LabClient {
    public static func validate(presented: [Certificate], cell: Cell) async throws -> [Certificate] {
        try await LabKit.validatedChain(presented: presented, cell: cell)
    }
    public static func clientIdentity(cell: Cell) throws -> ClientIdentity? { nil }
}

public enum LabKit {
    /// Full validation with swift-certificates: a path from the leaf to one of the cell's roots, validity dates,
    /// basic and name constraints (RFC 5280), and the host name. Returns the validated chain, leaf first, root last.
    public static func validatedChain(presented: [Certificate], cell: Cell) async throws -> [Certificate] {
        guard let leaf = presented.first else { throw Refusal("the server sent no certificate") }
        var verifier = Verifier(rootCertificates: CertificateStore(cell.trustRoots)) {
            RFC5280Policy()
            ServerIdentityPolicy(serverHostname: cell.host, serverIP: nil)
        }
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore(presented.dropFirst())) {
        case .validCertificate(let chain):
            return Array(chain)
        case .couldNotValidate(let failures):
            let why = failures.map { "\($0.policyFailureReason)" }.joined(separator: "; ")
            throw Refusal("certificate verify failed: " + (why.isEmpty ? "no path to a trusted root" : why))
        }
    }

    /// SHA-256 of the certificate's DER SubjectPublicKeyInfo (algorithm identifier and key), base64: the standard pin.
    public static func spkiSHA256(_ c: Certificate) throws -> String {
        var s = DER.Serializer()
        try s.serialize(c.publicKey)
        return Data(SHA256.hash(data: s.serializedBytes)).base64EncodedString()
    }

    /// SHA-256 of the bare key bytes, base64 — what hashing SecKeyCopyExternalRepresentation's output gives.
    /// (swift-certificates calls these bytes `subjectPublicKeyInfoBytes`, but they are only the BIT STRING's contents.)
    public static func bareKeySHA256(_ c: Certificate) -> String {
        Data(SHA256.hash(data: Array(c.publicKey.subjectPublicKeyInfoBytes))).base64EncodedString()
    }

    /// SHA-256 of the whole DER certificate, lower-case hex.
    public static func certificateSHA256Hex(_ c: Certificate) throws -> String {
        var s = DER.Serializer()
        try s.serialize(c)
        return SHA256.hash(data: s.serializedBytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Runs one cell with `client` and exits: 0 after sending the request and reading a response, 1 on refusal.
    public static func main(_ client: any LabClient.Type) async -> Never {
        do {
            let cell = try Cell.fromEnvironment()
            let status = try await exchange(client, cell: cell)
            print(status)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("refused: \(error)\n".utf8))
            exit(1)
        }
    }

    static func exchange(_ client: any LabClient.Type, cell: Cell) async throws -> String {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.trustRoots = .certificates([])  // the lab's validate() decides; never the system's bundle
        // BoringSSL would check the host name itself after the callback; the lab's validate() decides that too
        // (lab 6 is about a client that does not).
        tls.certificateVerification = .noHostnameVerification
        tls.verifySignatureAlgorithms = [
            .ecdsaSecp256R1Sha256, .ecdsaSecp384R1Sha384, .ecdsaSecp521R1Sha512, .ed25519,
            .rsaPssRsaeSha256, .rsaPssRsaeSha384, .rsaPssRsaeSha512, .rsaPkcs1Sha256, .rsaPkcs1Sha384, .rsaPkcs1Sha512,
        ]
        if let id = try client.clientIdentity(cell: cell) {
            tls.certificateChain = id.certificateChain.map { .certificate($0) }
            tls.privateKey = .privateKey(id.privateKey)
        }
        let context = try NIOSSLContext(configuration: tls)
        let state = ExchangeState()
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.next().makePromise(of: String.self)
        let request = "GET / HTTP/1.1\r\nHost: \(cell.host)\r\nConnection: close\r\n\r\n"
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let ssl = try NIOSSLClientHandler(
                        context: context, serverHostname: cell.host,
                        customVerificationCallbackWithMetadata: { presentedNIO, promise in
                            promise.completeWithTask {
                                do {
                                    let presented = try presentedNIO.map {
                                        try Certificate(derEncoded: $0.toDERBytes())
                                    }
                                    let validated = try await client.validate(presented: presented, cell: cell)
                                    state.set(presented: presented, validated: validated)
                                    return .certificateVerified(VerificationMetadata(nil))
                                } catch {
                                    state.fail(error)
                                    return .failed
                                }
                            }
                        })
                    try channel.pipeline.syncOperations.addHandlers([
                        ssl,
                        Exchange(request: request, done: done) {
                            let (presented, validated) = state.chains
                            try client.checkPins(presented: presented, validated: validated, cell: cell)
                        },
                    ])
                }
            }
            .connect(host: cell.host, port: cell.port).get()
        let timer = channel.eventLoop.scheduleTask(in: .seconds(8)) {
            done.fail(Refusal("no response within 8 s"))
            channel.close(promise: nil)
        }
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        do {
            return try await done.futureResult.get()
        } catch {
            throw state.failure ?? error
        }
    }
}

/// What the verification callback learned, read after the handshake.
final class ExchangeState: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var presented: [Certificate] = []
    private var validated: [Certificate] = []
    private var error: (any Error)?

    func set(presented: [Certificate], validated: [Certificate]) {
        lock.withLock {
            self.presented = presented
            self.validated = validated
        }
    }
    func fail(_ e: any Error) { lock.withLock { error = e } }
    var failure: (any Error)? { lock.withLock { error } }
    var chains: ([Certificate], [Certificate]) { lock.withLock { (presented, validated) } }
}

/// After the handshake: run the pin check, then write the request (or close without writing), and read the reply.
final class Exchange: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let request: String
    private let done: EventLoopPromise<String>
    private let check: () throws -> Void
    private var received = ByteBuffer()

    init(request: String, done: EventLoopPromise<String>, check: @escaping () throws -> Void) {
        self.request = request
        self.done = done
        self.check = check
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            do {
                try check()
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
            } catch {
                done.fail(error)
                context.close(promise: nil)
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        received.writeBuffer(&chunk)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case NIOSSLError.uncleanShutdown = error, received.readableBytes > 0 { return }
        done.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let text = received.readString(length: received.readableBytes) ?? ""
        if let head = text.split(separator: "\r\n", maxSplits: 1).first, head.hasPrefix("HTTP/") {
            done.succeed(String(head))
        } else {
            done.fail(Refusal("the server closed the connection without an HTTP response"))
        }
        context.fireChannelInactive()
    }
}
