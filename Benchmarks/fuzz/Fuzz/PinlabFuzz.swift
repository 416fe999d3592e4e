// Fuzz targets for PinningLab's parsers: every input must end in success or in one of the project's own errors
// (which name the file, the line or field, and the fix) — never a crash, a hang or a foreign error.
//
// Built normally (`swift build --product pinlab-fuzz`) this is a replayer: `pinlab-fuzz TARGET FILE...` runs each
// file through TARGET and prints a summary (CI replays the seed corpus this way). Built with libFuzzer
// (Benchmarks/fuzz/run.sh: `-Xswiftc -DPINLAB_FUZZ -Xswiftc -sanitize=fuzzer,address`), the target comes from
// `$PINLAB_FUZZ_TARGET`.
import CPinningLabOpenSSL
import Foundation
import PinningLab
import PinningLabCore
import PinningLabGnuTLS
import PinningLabOpenSSL

#if canImport(Glibc)
import Glibc
#endif

enum FuzzTarget: String, CaseIterable {
    /// A PKI spec (`pki/*.yaml`).
    case spec
    /// A scenario file (`scenarios/*.yaml`).
    case scenario
    /// A command template: the input's lines are the words.
    case template
    /// PEM text, decoded as a certificate and as a private key.
    case pem
    /// A PKCS#12 file, opened with the lab password.
    case pkcs12
    /// A kept key file (`keys/K1.pem`) read by the PKI.
    case keyfile
    /// The fixture server's connection path on the OpenSSL engine (ServerPathFuzz.swift).
    case serverOpenSSL = "server-openssl"
    /// The same on the GnuTLS engine.
    case serverGnuTLS = "server-gnutls"
    /// The request-head scanner and parser of the servers (HeadFuzz.swift).
    case requestHead = "request-head"
    /// The CONNECT request, read by a real `pinlab intercept` proxy on 127.0.0.1.
    case connectHead = "connect-head"
    /// A DER OCSP request, read and answered by the lab's responder.
    case ocspRequest = "ocsp-request"
    /// An XML file given to `pinlab audit` (network security config, property list).
    case auditXML = "audit-xml"
}

/// What a run of one input ended in.
enum FuzzResult { case ok, projectError }

/// Runs one input. A foreign error, or a project error without a file or a fix, is a finding: it stops the process.
func fuzzOne(_ target: FuzzTarget, _ bytes: [UInt8]) -> FuzzResult {
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        switch target {
        case .spec:
            _ = try PKISpec.parse(yaml: text, file: "fuzz.yaml")
        case .scenario:
            _ = try ScenarioLoader.parse(yaml: text, file: "fuzz.yaml")
        case .template:
            let words = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            _ = try CommandTemplate(words)
        case .pem:
            _ = PEM.decode(text, label: "CERTIFICATE")
            _ = PEM.decode(text, label: "PRIVATE KEY")
            return .ok
        case .pkcs12:
            _ = try OpenSSLPKCS12.open(bytes, password: "pinninglab", file: "fuzz.p12")
        case .keyfile:
            try KeyFileHarness.shared.open(with: bytes)
        case .serverOpenSSL:
            ServerPathFuzz.openssl.run(bytes)
        case .serverGnuTLS:
            ServerPathFuzz.gnutls.run(bytes)
        case .requestHead:
            HeadFuzz.requestHead(bytes)
        case .connectHead:
            HeadFuzz.connectHead(bytes)
        case .ocspRequest:
            return HeadFuzz.ocspRequest(bytes)
        case .auditXML:
            return HeadFuzz.auditXML(bytes)
        }
        return .ok
    } catch let e as PKIError {
        require(e.file != nil || e.description.contains("fuzz"), "PKIError without a file: \(e)")
        return .projectError
    } catch let e as ScenarioError {
        require(e.description.contains("fuzz.yaml"), "ScenarioError without the file: \(e)")
        return .projectError
    } catch let e as CheckSetupError {
        require(!e.description.isEmpty, "empty CheckSetupError")
        return .projectError
    } catch {
        require(false, "a foreign error escaped (\(type(of: error))): \(error)")
        return .projectError
    }
}

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        FileHandle.standardError.write(Data("pinlab-fuzz: \(message())\n".utf8))
        abort()
    }
}

/// A one-root PKI folder whose key file is replaced by the input before each opening.
final class KeyFileHarness: @unchecked Sendable {  // used from the fuzzer's single thread only
    static let shared = KeyFileHarness()
    let directory: URL
    let spec: PKISpec
    private init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-fuzz-keys-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        spec = try! PKISpec.parse(yaml: "version: 1\nkeys:\n  K1: p256\nentities:\n  root: { role: root, key: K1 }\n", file: "fuzz-spec")
        _ = try! LabPKI.open(spec: spec, options: PKIOptions(directory: directory))
    }
    func open(with bytes: [UInt8]) throws {
        let key = directory.appendingPathComponent("keys/K1.pem")
        let fd = Glibc.open(key.path, O_WRONLY | O_TRUNC | O_CREAT, 0o600)
        require(fd >= 0, "cannot write \(key.path)")
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        var options = PKIOptions(directory: directory)
        options.reissue = true
        _ = try LabPKI.open(spec: spec, options: options)
    }
}

#if PINLAB_FUZZ
import CFuzzDriver

/// SwiftPM links an executable's entry point as `<target>_main`; hand control to libFuzzer's driver from there.
@_cdecl("pinlab_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in LLVMFuzzerTestOneInput(data, size) }
}

func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let name = ProcessInfo.processInfo.environment["PINLAB_FUZZ_TARGET"] ?? "spec"
    guard let target = FuzzTarget(rawValue: name) else {
        require(false, "PINLAB_FUZZ_TARGET=\(name): use one of \(FuzzTarget.allCases.map(\.rawValue))")
        return 0
    }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    _ = fuzzOne(target, bytes)
    return 0
}
#else
/// A small deterministic PRNG (SplitMix64), so that a mutation run can be repeated exactly.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// libFuzzer-like byte mutations: flips, random bytes, interesting values, insertions, deletions, truncation,
/// duplication of a block, and splicing with another seed; 1 to 4 of them per input.
enum Mutator {
    static func mutate(_ seed: [UInt8], _ seeds: [[UInt8]], _ rng: inout SplitMix) -> [UInt8] {
        var b = seed
        for _ in 0...(rng.next() % 4) {
            let pos = b.isEmpty ? 0 : Int(rng.next() % UInt64(b.count))
            switch rng.next() % 8 {
            case 0 where !b.isEmpty: b[pos] ^= UInt8(1 << (rng.next() % 8))
            case 1 where !b.isEmpty: b[pos] = UInt8(truncatingIfNeeded: rng.next())
            case 2 where !b.isEmpty: b[pos] = [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x16, 0x03, 0x0A, 0x0D][Int(rng.next() % 9)]
            case 3: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: pos)
            case 4 where !b.isEmpty: b.removeSubrange(pos..<min(b.count, pos + 1 + Int(rng.next() % 16)))
            case 5: b = Array(b.prefix(pos))
            case 6 where !b.isEmpty:
                let block = b[pos..<min(b.count, pos + 1 + Int(rng.next() % 64))]
                b.insert(contentsOf: block, at: Int(rng.next() % UInt64(b.count + 1)))
            default:
                let other = seeds[Int(rng.next() % UInt64(seeds.count))]
                let cut = other.isEmpty ? 0 : Int(rng.next() % UInt64(other.count))
                b = Array(b.prefix(pos)) + other[cut...]
            }
        }
        return Array(b.prefix(20_000))
    }
}

@main
struct Replay {
    static func main() {
        let args = CommandLine.arguments.dropFirst()
        guard let first = args.first, let target = FuzzTarget(rawValue: first), args.count >= 2 else {
            print("usage: pinlab-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) [--mutate N] FILE|DIR...")
            exit(2)
        }
        var rest = Array(args.dropFirst())
        var mutations = 0
        if rest.first == "--mutate", rest.count >= 3, let n = Int(rest[1]) {
            mutations = n
            rest.removeFirst(2)
        }
        var files: [URL] = []
        for a in rest {
            let u = URL(fileURLWithPath: a)
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: a, isDirectory: &isDir), isDir.boolValue {
                files += (try? FileManager.default.contentsOfDirectory(at: u, includingPropertiesForKeys: nil)) ?? []
            } else {
                files.append(u)
            }
        }
        var ok = 0, errors = 0
        let seeds = files.compactMap { try? Data(contentsOf: $0) }.map { Array($0) }
        for d in seeds {
            switch fuzzOne(target, d) {
            case .ok: ok += 1
            case .projectError: errors += 1
            }
        }
        print("\(target.rawValue): \(files.count) inputs, \(ok) accepted, \(errors) refused with a clear error, 0 crashes")
        guard mutations > 0, !seeds.isEmpty else { return }
        // Without libFuzzer: random mutations of the seeds (not coverage-guided), the same checks per input.
        var rng = SplitMix(seed: 0x5EED)
        let started = Date()
        // PINLAB_FUZZ_SAVE=FILE: each input is written there before it runs, so a crash leaves it behind.
        let save = ProcessInfo.processInfo.environment["PINLAB_FUZZ_SAVE"]
        for i in 0..<mutations {
            let input = Mutator.mutate(seeds[Int(rng.next() % UInt64(seeds.count))], seeds, &rng)
            if let save { _ = FileManager.default.createFile(atPath: save, contents: Data(input)) }
            _ = fuzzOne(target, input)
            if (i + 1) % 100_000 == 0 {
                print("\(target.rawValue): \(i + 1) mutated inputs, \(String(format: "%.0f", Date().timeIntervalSince(started))) s, 0 crashes")
            }
        }
        print("\(target.rawValue): \(mutations) mutated inputs (seed 0x5EED) in \(String(format: "%.0f", Date().timeIntervalSince(started))) s, 0 crashes, 0 findings")
    }
}
#endif
