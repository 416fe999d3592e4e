// pq-bench: ML-DSA-65 and ML-DSA-87 against ECDSA P-256, key generation and signing with swift-crypto, called as
// PinningLab's PKI calls it (Sources/PinningLabPKI/Keys.swift):
//   - ML-DSA key generation = a random 32-byte seed, then `MLDSA65.PrivateKey(seedRepresentation:publicKey: nil)`
//     and its public key's raw bytes (MLDSAKey.init: the PKI keeps the seed and the public key, not the key object);
//   - ML-DSA signing = the key expanded again from its seed for every signature, then `signature(for:)`
//     (MLDSAKey.signature: that is what signs each TBSCertificate), and, for comparison with the tools that hold an
//     expanded key (OpenSSL, Go), the same signature with the key expanded once ("held key");
//   - P-256 key generation = `P256.Signing.PrivateKey()`, signing = `signature(for:)` (ECDSA with SHA-256: what
//     swift-certificates' `Certificate.PrivateKey.sign` calls for the lab's P-256 issuers);
//   - verification of one signature, for each.
// The message is 1,500 random bytes (about a TBSCertificate carrying an ML-DSA-65 key).
//
// Usage: pq-bench [ROUNDS=7] [SCALE=1]   — each round runs every operation once, in a rotating order, for a fixed
// number of iterations (times SCALE); prints per operation the median µs per operation over the rounds (wall and
// thread CPU), min and max, and the ratios to P-256.
import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func now(_ clock: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Double(ts.tv_sec) * 1e6 + Double(ts.tv_nsec) / 1e3
}

func randomBytes(_ n: Int) -> [UInt8] {
    var g = SystemRandomNumberGenerator()
    return (0..<n).map { _ in UInt8.random(in: 0...255, using: &g) }
}

struct Operation {
    let name: String
    let iterations: Int
    let body: () throws -> Void
}

let arguments = CommandLine.arguments
let rounds = arguments.count > 1 ? Int(arguments[1]) ?? 7 : 7
let scale = arguments.count > 2 ? Double(arguments[2]) ?? 1 : 1
let message = randomBytes(1500)
var sink = 0  // keeps results alive

// Fixed keys for the signing and verification operations.
let p256Key = P256.Signing.PrivateKey()
let p256Signature = try p256Key.signature(for: message)
let seed65 = randomBytes(32)
let seed87 = randomBytes(32)
let held65 = try MLDSA65.PrivateKey(seedRepresentation: seed65, publicKey: nil)
let held87 = try MLDSA87.PrivateKey(seedRepresentation: seed87, publicKey: nil)
let signature65 = try held65.signature(for: message)
let signature87 = try held87.signature(for: message)

func n(_ base: Int) -> Int { max(1, Int(Double(base) * scale)) }

let operations: [Operation] = [
    Operation(name: "P-256 keygen", iterations: n(4000)) {
        sink &+= P256.Signing.PrivateKey().publicKey.rawRepresentation.count
    },
    Operation(name: "P-256 sign", iterations: n(4000)) {
        sink &+= try p256Key.signature(for: message).rawRepresentation.count
    },
    Operation(name: "P-256 verify", iterations: n(2000)) {
        sink &+= p256Key.publicKey.isValidSignature(p256Signature, for: message) ? 1 : 0
    },
    Operation(name: "ML-DSA-65 keygen (as the PKI: seed → key → public key)", iterations: n(1500)) {
        sink &+=
            try MLDSA65.PrivateKey(seedRepresentation: randomBytes(32), publicKey: nil).publicKey.rawRepresentation
            .count
    },
    Operation(name: "ML-DSA-65 sign (as the PKI: key re-expanded from its seed)", iterations: n(800)) {
        sink &+= try MLDSA65.PrivateKey(seedRepresentation: seed65, publicKey: nil).signature(for: message).count
    },
    Operation(name: "ML-DSA-65 sign (held key)", iterations: n(800)) {
        sink &+= try held65.signature(for: message).count
    },
    Operation(name: "ML-DSA-65 verify", iterations: n(3000)) {
        sink &+= held65.publicKey.isValidSignature(signature65, for: message) ? 1 : 0
    },
    Operation(name: "ML-DSA-87 keygen (as the PKI: seed → key → public key)", iterations: n(1000)) {
        sink &+=
            try MLDSA87.PrivateKey(seedRepresentation: randomBytes(32), publicKey: nil).publicKey.rawRepresentation
            .count
    },
    Operation(name: "ML-DSA-87 sign (as the PKI: key re-expanded from its seed)", iterations: n(600)) {
        sink &+= try MLDSA87.PrivateKey(seedRepresentation: seed87, publicKey: nil).signature(for: message).count
    },
    Operation(name: "ML-DSA-87 sign (held key)", iterations: n(600)) {
        sink &+= try held87.signature(for: message).count
    },
    Operation(name: "ML-DSA-87 verify", iterations: n(2000)) {
        sink &+= held87.publicKey.isValidSignature(signature87, for: message) ? 1 : 0
    },
]

// Warm-up: a tenth of every operation, not counted.
for op in operations { for _ in 0..<max(1, op.iterations / 10) { try op.body() } }

var wall = [String: [Double]]()
var cpu = [String: [Double]]()
for r in 0..<rounds {
    for i in 0..<operations.count {
        let op = operations[(r + i) % operations.count]
        let w0 = now(CLOCK_MONOTONIC)
        let c0 = now(CLOCK_THREAD_CPUTIME_ID)
        for _ in 0..<op.iterations { try op.body() }
        let c1 = now(CLOCK_THREAD_CPUTIME_ID)
        let w1 = now(CLOCK_MONOTONIC)
        wall[op.name, default: []].append((w1 - w0) / Double(op.iterations))
        cpu[op.name, default: []].append((c1 - c0) / Double(op.iterations))
    }
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
func f(_ x: Double) -> String { String(format: x < 10 ? "%.2f" : "%.1f", x) }

print("swift-crypto 4.5.2 (BoringSSL backend), \(rounds) rounds; µs per operation: median wall (min–max), median CPU")
let base: [String: String] = ["keygen": "P-256 keygen", "sign": "P-256 sign", "verify": "P-256 verify"]
for op in operations {
    let w = wall[op.name]!
    let c = cpu[op.name]!
    let kind = op.name.contains("keygen") ? "keygen" : op.name.contains("sign") ? "sign" : "verify"
    var ratio = ""
    if !op.name.hasPrefix("P-256"), let b = base[kind], let bw = wall[b] {
        ratio = String(format: "  %.1fx P-256 (CPU %.1fx)", median(w) / median(bw), median(c) / median(cpu[b]!))
    }
    let pad = op.name.padding(toLength: 62, withPad: " ", startingAt: 0)
    print(
        "\(pad) \(f(median(w))) µs (\(f(w.min()!))–\(f(w.max()!))), CPU \(f(median(c))) µs  ×\(op.iterations)\(ratio)")
}
if sink == 42 { print("") }
