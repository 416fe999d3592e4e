import Crypto
// A small pinning HTTPS client on swift-nio-ssl, written the way a server-side Swift engineer would pin.
//
// 1. The chain is validated (path to a trusted root, validity, name constraints, basic constraints, host name, a
//    modern-crypto floor) by swift-certificates' `Verifier`, inside swift-nio-ssl's custom verification callback.
// 2. Only then are the pins matched — against the *validated* chain the verifier built, never against whatever
//    the server chose to send (a stuffed chain carries the genuine pinned certificates next to a forged leaf).
// 3. Only then is the HTTP request written.
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
public import X509
import _CryptoExtras

/// An HTTPS GET with certificate pinning.
///
/// ```swift
/// let client = PinningHTTPSClient(trustRoots: roots, pins: [.spkiSHA256(hash)])
/// let response = try await client.get(host: "localhost", port: 8443)
/// ```
/// A refusal throws ``PinningClientError``; nothing is sent to a server that was refused.
public struct PinningHTTPSClient: Sendable {
    /// A pin: the SHA-256 of a DER SubjectPublicKeyInfo (the standard; OkHttp `sha256/…`, TrustKit, curl) or of
    /// a whole DER certificate.
    public enum Pin: Hashable, Sendable {
        case spkiSHA256([UInt8])
        case certificateSHA256([UInt8])
    }

    /// Where pins are looked for. Anything but `.validatedChain` is a bug kept for teaching and testing.
    public enum PinMatching: Sendable {
        /// Pins match a certificate of the chain the verifier built from the leaf to a trusted root.
        case validatedChain
        /// Pins match any certificate the server *presented* — the bug of ssl-conservatory-style code: a stuffed
        /// chain (forged leaf + the genuine pinned certificates) passes.
        case presentedChain
    }

    /// A client certificate (first) with its issuers below the root, and its PKCS#8 key, all DER.
    public struct ClientIdentity: Sendable {
        public var certificateChainDER: [[UInt8]]
        public var privateKeyPKCS8DER: [UInt8]
        public init(certificateChainDER: [[UInt8]], privateKeyPKCS8DER: [UInt8]) {
            self.certificateChainDER = certificateChainDER
            self.privateKeyPKCS8DER = privateKeyPKCS8DER
        }
    }

    public var trustRoots: [Certificate]
    /// Empty: no pinning (validation only).
    public var pins: Set<Pin>
    public var pinMatching: PinMatching
    public var clientIdentity: ClientIdentity?
    /// The whole exchange: connect, handshake, request, response.
    public var timeout: Duration

    public init(
        trustRoots: [Certificate], pins: Set<Pin> = [], pinMatching: PinMatching = .validatedChain,
        clientIdentity: ClientIdentity? = nil, timeout: Duration = .seconds(10)
    ) {
        self.trustRoots = trustRoots
        self.pins = pins
        self.pinMatching = pinMatching
        self.clientIdentity = clientIdentity
        self.timeout = timeout
    }

    /// Trust roots given as DER certificates.
    public init(
        trustRootsDER: [[UInt8]], pins: Set<Pin> = [], pinMatching: PinMatching = .validatedChain,
        clientIdentity: ClientIdentity? = nil, timeout: Duration = .seconds(10)
    ) throws {
        self.init(
            trustRoots: try trustRootsDER.map { try Certificate(derEncoded: $0) }, pins: pins,
            pinMatching: pinMatching, clientIdentity: clientIdentity, timeout: timeout)
    }

    public struct Response: Sendable {
        /// e.g. `HTTP/1.1 200 OK`.
        public var statusLine: String
        public var body: String
    }

    /// Connects to `address:port` (default: `host` itself), verifies the server as `host`, and sends
    /// `GET path HTTP/1.1` only if the server is trusted and pinned.
    public func get(host: String, port: Int, address: String? = nil, path: String = "/") async throws -> Response {
        let verifier = ChainEvaluator(
            host: host, roots: trustRoots, pins: pins, pinMatching: pinMatching)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        // App Transport Security's floor: TLS 1.2 only with forward-secret (ECDHE) suites, the CBC ones ATS lists
        // included (`ats-floor` serves one). swift-nio-ssl's default list also offers static RSA key exchange, which
        // `tls-v1-2-no-forward-secrecy` must not get.
        tls.cipherSuiteValues = [
            .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
            .TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, .TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
            .TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, .TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
        ]
        tls.certificateVerification = .fullVerification
        // The roots are the evaluator's; an empty store here keeps NIOSSLContext from loading the system's bundle.
        tls.trustRoots = .certificates([])
        // BoringSSL's client does not offer Ed25519 in signature_algorithms unless asked to (see the Compatibility
        // article): the modern algorithms, Ed25519 included, and no SHA-1.
        tls.verifySignatureAlgorithms = [
            .ecdsaSecp256R1Sha256, .ecdsaSecp384R1Sha384, .ecdsaSecp521R1Sha512, .ed25519,
            .rsaPssRsaeSha256, .rsaPssRsaeSha384, .rsaPssRsaeSha512, .rsaPkcs1Sha256, .rsaPkcs1Sha384, .rsaPkcs1Sha512,
        ]
        if let id = clientIdentity {
            tls.certificateChain = try id.certificateChainDER.map {
                .certificate(try NIOSSLCertificate(bytes: $0, format: .der))
            }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: id.privateKeyPKCS8DER, format: .der))
        }
        let context = try NIOSSLContext(configuration: tls)
        let request =
            "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: PinningNIOClient\r\nConnection: close\r\n\r\n"
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.next().makePromise(of: Response.self)
        let deadline =
            NIODeadline.now()
            + TimeAmount.nanoseconds(
                Int64(timeout.components.seconds) * 1_000_000_000
                    + timeout.components.attoseconds / 1_000_000_000)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let ssl = try NIOSSLClientHandler(
                            context: context, serverHostname: host,
                            customVerificationCallbackWithMetadata: { presented, promise in
                                promise.completeWithTask { await verifier.evaluate(presented) }
                            })
                        try channel.pipeline.syncOperations.addHandlers([
                            ssl, HTTPExchange(request: request, done: done),
                        ])
                    }
                }
                .connect(host: address ?? host, port: port).get()
        } catch {
            done.fail(error)
            throw PinningClientError(.connection, "cannot connect to \(address ?? host):\(port): \(error)")
        }
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) {
            done.fail(PinningClientError(.timeout, "no response within \(timeout)"))
            channel.close(promise: nil)
        }
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        do {
            return try await done.futureResult.get()
        } catch let e as PinningClientError {
            throw verifier.refusal ?? e
        } catch {
            // A handshake error from BoringSSL: prefer the reason our verifier recorded.
            throw verifier.refusal ?? PinningClientError(.handshake, "\(error)")
        }
    }
}

/// Why ``PinningHTTPSClient`` refused, or what went wrong.
public struct PinningClientError: Error, CustomStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        public var description: String { raw }
        /// No valid path to a trusted root, or a policy of the chain failed (validity, names, constraints, crypto).
        public static let untrusted = Code(raw: "untrusted")
        /// The chain is valid, but no pinned key or certificate is in it.
        public static let pinMismatch = Code(raw: "pin-mismatch")
        public static let handshake = Code(raw: "handshake")
        public static let connection = Code(raw: "connection")
        public static let timeout = Code(raw: "timeout")
        public static let http = Code(raw: "http")
    }
    public var code: Code
    public var reason: String
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
    public var description: String { "\(code): \(reason)" }
}

extension PinningClientError {
    /// The refusal category of PinningLab's reports (`pin-mismatch`, `chain-invalid`, `hostname`, `timeout`,
    /// `other`), and the detail to show with it.
    public var refusal: (category: String, detail: String) {
        switch code {
        case .pinMismatch: return ("pin-mismatch", reason)
        case .untrusted: return (reason.contains("host") ? "hostname" : "chain-invalid", reason)
        case .timeout: return ("timeout", reason)
        default: return ("other", description)
        }
    }
}
