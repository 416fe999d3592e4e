import Foundation
import PinningLab
import PinningLabBase
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The predictions below are derived by reasoning from each client's one mistake and the scenario files; the run
/// confirms them on both engines. Cells an engine cannot serve (unsupported) are left out of the comparison.
enum Predictions {
    static let spkiProfiles: [PinProfile] = [.leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI]
    static let pinnedProfiles: [PinProfile] = [.leafCert, .leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI]

    /// Scenarios where every profile must accept and the server does not send lab-root.
    static let allAcceptRootNotSent = [
        "root-not-sent", "intermediate-renewed-same-key", "tls-v1-2", "ats-floor", "ecdsa-p384", "rsa-2048",
        "rsa-3072", "rsa-4096", "ed25519", "mtls-required-valid", "mtls-optional-missing",
        // Two connections to the genuine leaf-v1 + lab-intermediate-a, the second resumed: each client decides
        // the second time as it did the first, on the chain the first validated.
        "resumption-genuine",
        // A stapled "good" response, or a current CRL that does not list the leaf: every client accepts, whatever
        // it checks.
        "ocsp-stapled-good", "crl-good",
        // leaf-v1 with no SCT: only a client that requires CT refuses, and no built-in client does (ct=none).
        "ct-no-sct",
        // Classical key exchange only, a HelloRetryRequest for secp384r1: only a client that requires a hybrid
        // refuses, and no built-in client declares it (undeclared counts as key-exchange=any).
        "key-exchange-classical-only", "hello-retry-request",
        // A host with ECDSA and RSA certificates prefers ECDSA, which every built-in client offers: leaf-v1 is served,
        // and the RSA key is the backup.
        "dual-certificates-ecdsa-rsa",
    ]
    /// CT scenarios serving a new certificate for K1 under lab-intermediate-a (lab-root not sent): the leaf-cert pin
    /// refuses, every other profile accepts for a client that declares ct=none (every built-in reference client).
    static let ctNewCertificateSameKey = [
        "ct-embedded-valid", "ct-tls-extension-valid", "ct-one-sct", "ct-unknown-log", "ct-bad-signature",
        "ct-future-timestamp",
        "ct-ocsp-valid",
    ]
    /// Cells an engine cannot serve: GnuTLS has no API for SCTs in TLS 1.3's certificate entry (ct.md).
    /// Neither engine of this build serves ECH acceptance or retry configs (OpenSSL 4.0 would), nor ML-DSA keys
    /// (OpenSSL 3.0, GnuTLS 3.7; and the test PKI is made without the post-quantum part).
    static let unservable = [
        "ech-accepted", "ech-rejected-retry-configs", "dual-certificates-ecdsa-mldsa", "post-quantum-rekey",
        "post-quantum-rekey-pq-root",
    ]
    static let unsupported: [String: Set<Cell>] = [
        "gnutls": cells(["ct-tls-extension-valid"] + unservable, PinProfile.all),
        "openssl": cells(unservable, PinProfile.all),
    ]
    /// Scenarios every profile accepts, lab-root not sent, for a client that declares it checks no revocation
    /// (every built-in reference client); a client that declares nothing is undecided there (`expect-if`).
    static let revocationAllAccept = [
        "ocsp-stapled-revoked", "ocsp-stapled-unknown", "ocsp-stapled-expired", "ocsp-stapled-bad-signature",
        "ocsp-stapled-wrong-responder", "must-staple-missing", "crl-revoked-leaf", "crl-stale",
        "ocsp-responder-unreachable",
        // The leaf is good; lab-root's CRL lists its intermediate (K1 leaf, every pin matches: only revocation decides).
        "crl-revoked-intermediate",
    ]
    /// Scenarios where every profile must accept and the server sends the whole chain, lab-root included.
    static let allAcceptRootSent = ["baseline", "reversed-chain"]
    /// Scenarios whose root-spki cell must accept although lab-root is not on the wire.
    static let rootPinAcceptedRootNotSent =
        allAcceptRootNotSent + revocationAllAccept
        + [
            "renewal-same-key", "revoked-key-replay", "rekey", "emergency-rekey", "sibling-intermediate",
            "rotation-between-connections",
            // The CA moved: the pool's lab-intermediate-c or the new root's intermediate and cross-certificate are
            // sent, lab-root itself is not (root-rollover-new-root-trusted's root-spki cell varies by path instead).
            "intermediate-pool-rotation", "short-lived-renewal", "root-rollover-cross-signed",
            // Generation Y's shape: YR1 and YR cross-signed by lab-root are sent, lab-root is not. (In
            // intermediate-pool-rotation-gen-y the pinned root is YR, whose key the sent cross-certificate carries.)
            "root-rollover-cross-signed-gen-y",
            // The host prefers its RSA certificate: leaf-rsa-2048 and lab-intermediate-a are sent, lab-root is not.
            "dual-certificates-rsa-first",
        ] + ctNewCertificateSameKey
    /// Scenarios of two connections whose second resumes, through a trusted interceptor, a session made where no
    /// pin applied: only a client that checks pins on resumed connections refuses (every pinned profile). In
    /// early-data-to-interceptor the second sends its request as 0-RTT where the client lets it: a client that
    /// skips pins on resumption or ignores them sends it either way, and fails the same cells.
    static let resumedIntoInterceptor = [
        "resumption-after-unpinned-handshake", "resumption-cross-host", "early-data-to-interceptor",
    ]

    /// The cells each teaching client must fail; every other cell it must pass.
    static let failures: [String: Set<Cell>] = [
        "correct": [],
        // Pins are looked for among the certificates the server sent: a root pin never matches when the root is
        // not sent, the stuffed chain carries every genuine pinned certificate, and the name-collision root's
        // server sends the genuine lab-intermediate-a next to its leaf.
        "pin-presented-chain": cells(rootPinAcceptedRootNotSent, [.rootSPKI])
            .union(cells(["chain-stuffing"], pinnedProfiles))
            .union(cells(["name-collision-root"], [.intermediateSPKI])),
        // A pin match among the sent certificates replaces validation (profile none still validates).
        "pin-replaces-validation": cells(rootPinAcceptedRootNotSent, [.rootSPKI])
            .union(cells(["chain-stuffing"], pinnedProfiles))
            .union(
                cells(
                    ["expired-leaf", "not-yet-valid-leaf", "wrong-host", "pathlen-violation"],
                    [.leafSPKI, .leafSPKIBackup, .intermediateSPKI])
            )
            .union(cells(["expired-intermediate", "self-signed-pinned-key"], [.leafSPKI, .leafSPKIBackup]))
            .union(cells(["incomplete-chain"], [.leafCert, .leafSPKI, .leafSPKIBackup]))
            .union(
                cells(
                    ["non-ca-signer", "weak-rsa-1024", "sha1-signature"],
                    [.leafCert, .leafSPKI, .leafSPKIBackup, .intermediateSPKI])
            )
            // leaf-v1 itself and lab-intermediate-a are sent, for a name leaf-v1 does not cover: no host check.
            .union(cells(["pinned-cert-other-host"], [.leafCert, .leafSPKI, .leafSPKIBackup, .intermediateSPKI]))
            .union(cells(["name-collision-root"], [.intermediateSPKI]))
            // ECH rejected: the public name's certificate (K1 in one of them) from lab-intermediate-a is sent, for
            // public.pinning.test, not the host asked for: a sent pinned certificate replaces every other check.
            .union(cells(["ech-rejected-public-name", "ech-rejected-expired-public-cert"], [.intermediateSPKI]))
            .union(cells(["ech-rejected-public-cert-pinned-key"], [.leafSPKI, .leafSPKIBackup, .intermediateSPKI])),
        // The certificate for other.pinning.test is accepted wherever its key or chain is pinned (its bytes are
        // not leaf-v1's, so leaf-cert still refuses); leaf-v1 asked for as other.pinning.test is accepted
        // everywhere, even by certificate.
        "no-hostname-check": cells(["wrong-host"], [.none, .leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI])
            .union(cells(["pinned-cert-other-host"], PinProfile.all))
            // The public name's valid certificate is taken for api.pinning.test: wherever its chain or key is pinned
            // (K1 in ech-rejected-public-cert-pinned-key, as wrong-host's).
            .union(
                cells(
                    ["ech-rejected-public-cert-pinned-key"],
                    [.none, .leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI])
            )
            .union(cells(["ech-rejected-public-name"], [.none, .intermediateSPKI, .rootSPKI])),
        // SPKI pins are compared with the hash of the bare key: no SPKI pin ever matches.
        "raw-key-hash": cells(
            allAcceptRootNotSent + allAcceptRootSent + revocationAllAccept + ctNewCertificateSameKey
                + ["renewal-same-key", "revoked-key-replay"], spkiProfiles
        )
        .union(cells(["rekey"], [.leafSPKIBackup, .intermediateSPKI, .rootSPKI]))
        .union(cells(["emergency-rekey"], [.intermediateSPKI, .rootSPKI]))
        .union(cells(["sibling-intermediate"], [.leafSPKI, .leafSPKIBackup, .rootSPKI]))
        // Step 1 is leaf-v1 (every SPKI pin fails to match, as in baseline); step 2 the emergency re-key.
        .union(cells(["rotation-between-connections"], spkiProfiles))
        // Every SPKI cell a correct client accepts fails: K2 + root, root, K1 + K2 + root; root-spki of
        // root-rollover-new-root-trusted is refused on pins either way, where verifiers' paths differ (stricter).
        .union(cells(["intermediate-pool-rotation"], [.leafSPKIBackup, .rootSPKI]))
        .union(cells(["short-lived-renewal"], [.rootSPKI]))
        .union(cells(["root-rollover-cross-signed"], [.leafSPKI, .leafSPKIBackup, .rootSPKI]))
        .union(cells(["root-rollover-new-root-trusted"], [.leafSPKI, .leafSPKIBackup]))
        // The Generation-Y-shaped variants: the same cells (the pool's: K2 + YR's key through the cross-certificate).
        .union(cells(["intermediate-pool-rotation-gen-y"], [.leafSPKIBackup, .rootSPKI]))
        .union(cells(["root-rollover-cross-signed-gen-y"], [.leafSPKI, .leafSPKIBackup, .rootSPKI]))
        .union(cells(["root-rollover-new-root-trusted-gen-y"], [.leafSPKI, .leafSPKIBackup]))
        // The trusted intermediate ends the chain: the leaf and intermediate SPKI cells accept for a correct client.
        .union(cells(["intermediate-as-trust-anchor"], [.leafSPKI, .leafSPKIBackup, .intermediateSPKI]))
        // RSA served, no leaf pin holds its key: only the CA pins accept, and they hash the raw key.
        .union(cells(["dual-certificates-rsa-first"], [.intermediateSPKI, .rootSPKI])),
        // Pins are ignored: every cell that only a pin can refuse is accepted.
        "no-pinning": cells(["renewal-same-key", "revoked-key-replay"] + ctNewCertificateSameKey, [.leafCert])
            .union(cells(["rekey"], [.leafCert, .leafSPKI]))
            .union(cells(["emergency-rekey"], [.leafCert, .leafSPKI, .leafSPKIBackup]))
            .union(cells(["sibling-intermediate"], [.leafCert, .intermediateSPKI]))
            .union(
                cells(
                    [
                        "intercepting-proxy", "ct-private-anchor-exempt", "chain-stuffing",
                        "name-collision-intermediate", "name-collision-root",
                        "pin-scope-exact-host", "pin-scope-subdomain-included", "pin-scope-trailing-dot",
                        "pin-scope-upper-case", "ech-rejected-interceptor-inner-name",
                        "key-exchange-interceptor-classical",
                    ], pinnedProfiles)
            )
            // The RSA certificate is served, and only the leaf pins (K1, K2) would have refused its key.
            .union(cells(["dual-certificates-rsa-first"], [.leafCert, .leafSPKI, .leafSPKIBackup]))
            // Step 2 of the rotation is the emergency re-key, step 2 of the others a resumed interceptor session.
            .union(cells(["rotation-between-connections"], [.leafCert, .leafSPKI, .leafSPKIBackup]))
            .union(cells(resumedIntoInterceptor, pinnedProfiles))
            // Step 2 of h2-coalescing-pinned-host: the interceptor's open connection (or a new one) is trusted for
            // the pinned API.
            .union(cells(["h2-coalescing-pinned-host"], pinnedProfiles))
            // The CA moved: every cell only a pin refuses (the old certificate, the old intermediate, and the keys
            // nobody pinned) is accepted.
            .union(cells(["intermediate-pool-rotation"], [.leafCert, .leafSPKI, .intermediateSPKI]))
            .union(cells(["short-lived-renewal"], [.leafCert, .leafSPKI, .leafSPKIBackup, .intermediateSPKI]))
            .union(
                cells(
                    ["root-rollover-cross-signed", "root-rollover-new-root-trusted"], [.leafCert, .intermediateSPKI])
            )
            .union(cells(["intermediate-pool-rotation-gen-y"], [.leafCert, .leafSPKI, .intermediateSPKI]))
            .union(
                cells(
                    ["root-rollover-cross-signed-gen-y", "root-rollover-new-root-trusted-gen-y"],
                    [.leafCert, .intermediateSPKI])
            )
            // lab-root is not in the chain that ends at the trusted intermediate: only the root pin refuses.
            .union(cells(["intermediate-as-trust-anchor"], [.rootSPKI])),
        // Issuer names lead from twin-root-leaf to the genuine lab-intermediate-a that was sent with it, and from
        // there to lab-root in the trust store. Everywhere else the names lead along the validated chain
        // (name-collision-intermediate's twin is sent itself, so the walk finds the twin, not the genuine CA).
        "pins-by-issuer-name": cells(["name-collision-root"], [.intermediateSPKI, .rootSPKI]),
        // Pins applied outside their declared scope: the proxy for v2.api.pinning.test (declared for
        // api.pinning.test only) is refused, and so is the genuine CDN — except under root-spki, whose lab-root
        // also anchors the CDN's chain.
        "pins-every-host": cells(["pin-scope-subdomain-excluded"], pinnedProfiles)
            .union(cells(["pin-scope-unpinned-host"], [.leafCert, .leafSPKI, .leafSPKIBackup, .intermediateSPKI]))
            // The CDN's pins (its key, intermediate B, lab-root) applied to the genuine API (K1, intermediate A).
            .union(cells(["pins-for-other-host"], [.leafCert, .leafSPKI, .leafSPKIBackup, .intermediateSPKI]))
            // Step 1 of resumption-cross-host is the proxy's certificate for the unpinned CDN: refused.
            .union(cells(["resumption-cross-host"], pinnedProfiles))
            // So is step 1 of h2-coalescing-pinned-host, the same certificate over HTTP/2.
            .union(cells(["h2-coalescing-pinned-host"], pinnedProfiles)),
        // Pins checked on full handshakes only: a resumed session of the interceptor, made where no pin applied
        // (before the pins were in force, or for the unpinned CDN), is trusted under every pinned profile.
        "skips-pins-on-resumption": cells(resumedIntoInterceptor, pinnedProfiles),
        // The host compared with the scope byte for byte: the two spellings of api.pinning.test find no pins and
        // the interceptor is trusted. Every other scoped scenario spells its hosts in lower case without a dot.
        "case-sensitive-scope": cells(["pin-scope-trailing-dot", "pin-scope-upper-case"], pinnedProfiles),
        // A session made for the unpinned CDN, resumed for the pinned API on the same address, is trusted as the
        // CDN's decision left it. A session resumed for its own host (resumption-after-unpinned-handshake, the
        // rotation, resumption-genuine) is checked again as `correct` does.
        "shares-sessions-across-hosts": cells(["resumption-cross-host"], pinnedProfiles),
        // Declares revocation=hard but skips the check when a pin matched: every pinned profile where a hard-fail
        // client refuses on revocation is accepted (in revoked-key-replay, leaf-cert's pin is leaf-v1's certificate
        // and does not match, so it refuses on pins like every client). Under `none` no pin matches, so it checks
        // the whole chain as correct-revocation-hard does and refuses crl-revoked-intermediate's revoked CA.
        // Over HTTP/2, the connection kept open for the unpinned CDN carries the pinned API's request without a
        // pin check: every pinned profile. (Reusing a connection is no resumption: skips-pins-on-resumption and
        // shares-sessions-across-hosts check the API's pins before reusing it, as `correct` does.)
        "coalesces-without-pins": cells(["h2-coalescing-pinned-host"], pinnedProfiles),
        "trusts-revoked-backup-pin": cells(revocationAllAccept, pinnedProfiles)
            .union(cells(["revoked-key-replay"], [.leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI])),
        // Sends its request as 0-RTT before checking the session's chain against the pins now in force: only where
        // a step asks for 0-RTT and the server's ticket allows it — step 2 of early-data-to-interceptor, whose
        // session the proxy made before the pins were in force. It refuses after the handshake, but the proxy has
        // the request. Under `none` the request may go as 0-RTT. Everywhere else it is `correct`.
        "sends-early-data-on-resumption": cells(["early-data-to-interceptor"], pinnedProfiles),
    ]
}

extension Predictions {
    /// Cells each client refuses as expected but for another reason than a correct client (both engines): its
    /// own mistake makes it refuse before the check that a correct client fails (validation, or the server's
    /// client-certificate check in the mutual-TLS scenarios).
    static let mtlsRefused = [
        "mtls-required-missing", "mtls-required-untrusted", "mtls-required-expired", "mtls-required-wrong-eku",
    ]
    static let wrongReasons: [String: Set<Cell>] = [
        // A root pin never matches (lab-root is not sent), so it refuses on pins before the server can refuse it.
        "pin-presented-chain": cells(mtlsRefused, [.rootSPKI]),
        // Validation is skipped, so an invalid chain is refused only because no pin matches among the sent
        // certificates (and the hostname is not checked either).
        "pin-replaces-validation": cells(
            ["expired-leaf", "not-yet-valid-leaf", "wrong-host", "pathlen-violation"], [.leafCert, .rootSPKI]
        )
        .union(cells(["expired-intermediate", "self-signed-pinned-key"], [.leafCert, .intermediateSPKI, .rootSPKI]))
        .union(cells(["incomplete-chain"], [.intermediateSPKI, .rootSPKI]))
        .union(cells(["non-ca-signer", "weak-rsa-1024", "sha1-signature"], [.rootSPKI]))
        .union(cells(["untrusted-rogue"], pinnedProfiles))
        .union(cells(mtlsRefused, [.rootSPKI]))
        // No host check and no validation: leaf-v1 asked for as other.pinning.test is refused only because
        // lab-root is not among the sent certificates (a pin mismatch, where a correct client sees the name).
        .union(cells(["pinned-cert-other-host"], [.rootSPKI]))
        // The public name's certificates: refused where no sent certificate is pinned (a pin mismatch, where a
        // correct client sees the name); the rogue one is refused on pins, not as untrusted.
        .union(
            cells(
                ["ech-rejected-public-name", "ech-rejected-expired-public-cert"],
                [.leafCert, .leafSPKI, .leafSPKIBackup, .rootSPKI])
        )
        .union(cells(["ech-rejected-public-cert-pinned-key"], [.leafCert, .rootSPKI]))
        .union(cells(["ech-rejected-rogue-public-cert"], pinnedProfiles)),
        // The certificate for another host is refused only where its pin does not match: leaf-cert.
        "no-hostname-check": cells(["wrong-host", "ech-rejected-public-cert-pinned-key"], [.leafCert])
            .union(cells(["ech-rejected-public-name"], [.leafCert, .leafSPKI, .leafSPKIBackup]))
            // The public name's expired certificate is refused for its date, where a correct client sees the name.
            .union(cells(["ech-rejected-expired-public-cert"], PinProfile.all)),
        // SPKI pins never match, so it refuses on pins before the server can check its client certificate.
        "raw-key-hash": cells(mtlsRefused, spkiProfiles),
    ]
}

@Suite("Reference clients through the catalogue", .serialized)
struct ReferenceClientRunTests {
    /// The parameterized test runs over `BuiltInClients.names`: every built-in client has a prediction and every
    /// prediction a client, so an empty or renamed list cannot make it pass with fewer cases.
    @Test func everyBuiltInClientHasAPrediction() throws {
        try #require(!BuiltInClients.names.isEmpty)
        #expect(Set(BuiltInClients.names) == Set(Predictions.failures.keys))
        #expect(Set(Predictions.wrongReasons.keys).isSubset(of: Set(BuiltInClients.names)))
    }

    @Test(arguments: BuiltInClients.names)
    func failsExactlyThePredictedCells(client name: String) async throws {
        let expectedFailures = try #require(Predictions.failures[name], "no prediction written for \(name)")
        let client = try #require(BuiltInClients.named(name))
        let report = try await TestLab.runner().run(.inProcess(client))
        let catalogueSize = try Catalogue.bundled().scenarios.count
        #expect(report.verdicts.count == catalogueSize * PinProfile.all.count * 2)
        for engine in ["openssl", "gnutls"] {
            let unsupported = report.cells(.unsupported, engine: engine)
            let failed = report.cells(.fail, engine: engine)
            let predicted = expectedFailures.subtracting(unsupported)
            let unexpected = failed.subtracting(predicted).sorted()
            let missing = predicted.subtracting(failed).sorted()
            #expect(unexpected.isEmpty, "\(name) on \(engine) failed unpredicted cells: \(unexpected)")
            #expect(missing.isEmpty, "\(name) on \(engine) passed cells its mistake should fail: \(missing)")
            #expect(report.cells(.disagree, engine: engine).isEmpty, "client claim and server disagree")
            #expect(report.cells(.error, engine: engine).isEmpty)
            // Both engines serve the whole catalogue, legacy crypto and protocols included (security level 0), but
            // GnuTLS cannot send SCTs in the TLS extension on TLS 1.3.
            #expect(
                unsupported == Predictions.unsupported[engine] ?? [], "\(engine) unsupported: \(unsupported.sorted())")
            // Every engine serves the scenarios that teach pinning itself.
            // A refusal where verifiers legitimately differ is "stricter than required", neither pass nor fail.
            #expect(
                report.cells(.pass, engine: engine).count + failed.count + unsupported.count
                    + report.cells(.stricter, engine: engine).count == catalogueSize * PinProfile.all.count)
        }
        #expect(report.deviates == !expectedFailures.isEmpty)
        let wrongReasons = Set(
            report.verdicts.filter(\.wrongReason).map { Cell(scenario: $0.scenario, profile: $0.profile) })
        let predictedWrongReasons = Predictions.wrongReasons[name] ?? []
        #expect(wrongReasons == predictedWrongReasons, "\(name) refused for another reason: \(wrongReasons.sorted())")
    }

    @Test func refusalsAreClassified() async throws {
        let client = try #require(BuiltInClients.named("correct"))
        let report = try await TestLab.runner().run(
            .inProcess(client),
            options: CheckOptions(
                engines: [Engines.openssl],
                scenarios: ["rekey", "expired-leaf", "wrong-host", "mtls-required-missing"]))
        func verdict(_ s: String, _ p: PinProfile) throws -> Verdict {
            try #require(report.verdict(s, p, "openssl"))
        }
        #expect(try verdict("rekey", .leafSPKI).category == .pinMismatch)
        #expect(try verdict("expired-leaf", .none).category == .chainInvalid)
        #expect(try verdict("expired-leaf", .none).alert?.code == TLSAlert.certificateExpired)
        #expect(try verdict("wrong-host", .none).category == .hostname)
        #expect(try verdict("mtls-required-missing", .none).category == .clientAuth)
        #expect(try verdict("rekey", .leafSPKIBackup).observed == .accepted)
        #expect(try verdict("rekey", .leafSPKIBackup).evidence?.requestLine == "GET / HTTP/1.1")
    }

    /// `run` returns only when every server it started has stopped: the worker threads of every cell's server, seen
    /// by the client while its cell ran, are gone when `run` returns (the stops used to run detached, and
    /// `pinlab check` could exit meanwhile). Threads are followed by id, not by name or port: other suites start
    /// servers meanwhile, and one may get a port number of this run again.
    /// (A race: without the fix one run in about four shows it, so the test makes five.)
    @Test(arguments: 1...5) func runReturnsOnlyWhenEveryServerHasStopped(_ attempt: Int) async throws {
        let recorder = ThreadRecorder()
        _ = try await TestLab.runner().run(
            .inProcess(recorder), options: CheckOptions(engines: [Engines.openssl, Engines.gnutls], profiles: [.none]))
        let alive = Set(threadsByID().keys)
        let (cells, workers) = recorder.seen.withLock { ($0.cells, $0.workers) }
        #expect(cells >= 80, "a server per scenario and engine")
        // A worker names its thread as it starts, so a cell may come before the name: most are seen, not all.
        #expect(workers.count >= cells / 4, "cells saw their servers' worker threads: \(workers.count) of \(cells)")
        let left = workers.filter { alive.contains($0.key) }
        #expect(left.isEmpty, "worker threads still running after run() returned: \(left.values.sorted())")
    }

    /// Refuses every cell at once, noting the ids of the threads that serve its port (`pl<port>-<n>`) meanwhile.
    struct ThreadRecorder: PinningClient {
        let seen = Locked<(cells: Int, workers: [String: String])>((0, [:]))
        var name: String { "thread-recorder" }
        func run(_ target: ClientTarget) async -> ClientOutcome {
            let own = threadsByID().filter { $0.value.hasPrefix("pl\(target.port)-") }
            seen.withLock {
                $0.cells += 1
                $0.workers.merge(own) { a, _ in a }
            }
            return ClientOutcome(claim: .refused, detail: "recorded")
        }
    }

    /// Two PKIs in one process (other seeds, other folders) sharing one work folder, as `TestingLab.work` and a
    /// caller's `workDirectory` do: each run must get its own PKI's trust and client files. The client trusts and
    /// presents what the files hold, as a command-line client does (the files used to be written once per name, so
    /// the second PKI got the first one's).
    @Test func twoPKIsInOneProcessEachGetTheirOwnCellFiles() async throws {
        let base = TestScratch.root.appendingPathComponent("pinlab-two-pkis-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let work = base.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let correct = try #require(BuiltInClients.named("correct"))
        let catalogue = try Catalogue.bundled()
        var spki: [[UInt8]] = []
        for seed in ["first", "second"] {
            let pki = try Lab.pki(
                spec: Lab.builtInSpec(),
                options: Lab.pkiOptions(directory: base.appendingPathComponent(seed), seed: seed))
            spki.append(try pki.identity("client-valid").pins.spkiSHA256)
            let report = try await CheckRunner(pki: pki, catalogue: catalogue).run(
                .inProcess(FromFiles(inner: correct)),
                options: CheckOptions(
                    engines: [Engines.openssl], scenarios: ["mtls-required-valid", "baseline"],
                    workDirectory: work))
            #expect(report.verdicts.count == 12)
            for v in report.verdicts where v.status != .pass {
                Issue.record("\(seed): \(v.scenario) \(v.profile): \(v.status) \(v.reason)")
            }
        }
        #expect(spki[0] != spki[1], "the two PKIs differ")

        // A reference client reads certificates and keys as bytes: its run writes no trust store or key file.
        let unused = base.appendingPathComponent("unused")
        try FileManager.default.createDirectory(at: unused, withIntermediateDirectories: true)
        let direct = try await TestLab.runner().run(
            .inProcess(correct),
            options: CheckOptions(
                engines: [Engines.openssl], scenarios: ["mtls-required-valid", "baseline"], workDirectory: unused))
        #expect(direct.summary.pass == 12, "\(direct.verdicts.map(\.reason))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: unused.path) == [])

        // A PKCS#12 file that cannot be made is the cell's error, naming the identity (it used to be dropped), for
        // a client that is handed files.
        let third = try Lab.pki(
            spec: Lab.builtInSpec(), options: Lab.pkiOptions(directory: base.appendingPathComponent("third")))
        let p12 = third.files(for: "client-valid").pkcs12
        try FileManager.default.removeItem(at: p12)
        try FileManager.default.createDirectory(
            at: p12.appendingPathComponent("in-the-way"), withIntermediateDirectories: true)
        let broken = try await CheckRunner(pki: third, catalogue: catalogue).run(
            .inProcess(FromFiles(inner: correct)),
            options: CheckOptions(engines: [Engines.openssl], scenarios: ["mtls-required-valid"]))
        #expect(
            broken.verdicts.count == 6 && broken.verdicts.allSatisfy { $0.status == .error },
            "\(broken.verdicts.map(\.status))")
        let reason = broken.verdicts.first?.reason ?? ""
        #expect(reason.contains("PKCS#12") && reason.contains("client-valid"), "\(reason)")
    }

    /// Runs `inner` with the trust roots and client credentials read back from the cell's files.
    struct FromFiles: PinningClient {
        let inner: any PinningClient
        var name: String { "from-files" }
        func run(_ target: ClientTarget) async -> ClientOutcome {
            var t = target
            guard let trust = target.trustFile, let text = try? String(contentsOfFile: trust, encoding: .utf8) else {
                return .refused(.other, "no trust file")
            }
            t.trustRootsDER = PEM.decodeAll(text)
            if let c = target.clientCredentials {
                guard let certs = c.certificateFile.flatMap({ try? String(contentsOfFile: $0, encoding: .utf8) }),
                    let key = c.keyFile.flatMap({ try? String(contentsOfFile: $0, encoding: .utf8) }),
                    let keyDER = PEM.decode(key, label: "PRIVATE KEY")
                else { return .refused(.other, "no client certificate or key file") }
                t.clientCredentials = ClientCredentials(
                    certificateChainDER: PEM.decodeAll(certs), privateKeyPKCS8DER: keyDER)
            }
            return await inner.run(t)
        }
    }

    @Test func declaredProfilesAreSkippedNotFailed() async throws {
        let client = try #require(BuiltInClients.named("no-pinning"))
        let report = try await TestLab.runner().run(
            .inProcess(client),
            options: CheckOptions(engines: [Engines.gnutls], profiles: [.none], scenarios: ["rekey", "baseline"]))
        #expect(report.summary.pass == 2)
        #expect(report.summary.skipped == 10)
        #expect(!report.deviates)
    }
}
