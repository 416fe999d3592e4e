import Foundation
import PinningLab
import PinningLabCore
// A small PKI generated at test time with the openssl CLI (never checked in), and pins computed by the CLI too,
// so the clients' own hashing is checked against an independent implementation.
import PinningLabTestSupport

struct ClientTestPKIError: Error, CustomStringConvertible {
    var description: String
}

/// Runs `/bin/bash -c script` in `directory`; throws with its output when it fails. Spawned with ChildProcess
/// (close-on-exec pipes), never Foundation's Process, which can crash on Linux in a process with many descriptors.
@discardableResult
func clientTestShell(_ script: String, in directory: URL) throws -> Data {
    let quoted = "'" + directory.path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    let r = ChildProcess.runBlocking(
        ["/bin/bash", "-euo", "pipefail", "-c", "cd \(quoted) && \(script)"],
        timeout: TestTimeouts.command)
    guard r.status == 0 else {
        throw ClientTestPKIError(description: "script failed (\(r.status)): \(script.prefix(200))… \(r.stderrText)")
    }
    return Data(r.stdout)
}

/// The test PKI: files in `directory`, named `<name>.pem` (certificate), `<name>.key` (PEM key).
final class ClientTestPKI: Sendable {
    let directory: URL

    /// Generated once per test process.
    static let shared: Result<ClientTestPKI, ClientTestPKIError> = {
        do {
            return .success(try ClientTestPKI())
        } catch let error as ClientTestPKIError {
            return .failure(error)
        } catch {
            return .failure(ClientTestPKIError(description: "\(error)"))
        }
    }()

    static func get() throws -> ClientTestPKI { try shared.get() }

    private init() throws {
        directory = TestScratch.root.appendingPathComponent("pinninglab-clients-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        try clientTestShell(Self.script, in: directory)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ file: String) -> String { directory.appendingPathComponent(file).path }

    /// DER of certificate `name`.
    func der(_ name: String) throws -> [UInt8] {
        [UInt8](try clientTestShell("openssl x509 -in \(name).pem -outform der", in: directory))
    }

    /// SHA-256 of the SPKI DER of certificate `name`, computed by the openssl CLI.
    func spkiPin(_ name: String) throws -> [UInt8] {
        [UInt8](
            try clientTestShell(
                "openssl x509 -in \(name).pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary",
                in: directory))
    }

    /// SHA-256 of the DER of certificate `name`, computed by the openssl CLI.
    func certificatePin(_ name: String) throws -> [UInt8] {
        [UInt8](
            try clientTestShell(
                "openssl x509 -in \(name).pem -outform der | openssl dgst -sha256 -binary", in: directory))
    }

    /// The client credentials of certificate `name` (chain: `name` then `issuers`), key as PKCS#8 DER.
    func credentials(_ name: String, issuers: [String]) throws -> ClientCredentials {
        ClientCredentials(
            certificateChainDER: try ([name] + issuers).map { try der($0) },
            privateKeyPKCS8DER: [UInt8](try clientTestShell("openssl pkey -in \(name).key -outform der", in: directory))
        )
    }

    private static let script = #"""
        key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; chmod 600 "$1.key"; }
        rsakey() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:"$2" -out "$1.key" 2>/dev/null; chmod 600 "$1.key"; }
        ca_ext() { printf 'basicConstraints=critical,CA:true%s\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n%s' "$1" "$2"; }
        leaf_ext() { printf 'basicConstraints=critical,CA:false\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\nsubjectAltName=%s\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n' "$1" "$2"; }
        # root NAME CN [extra-ext]
        root() {
          key "$1"
          openssl req -new -x509 -key "$1.key" -subj "/CN=$2" -days 30 -sha256 -out "$1.pem" \
            -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign" ${3:+-addext "$3"}
        }
        # sign NAME KEYNAME CN ISSUER EXTFILE DAYS [DIGEST]
        sign() {
          openssl req -new -key "$2.key" -subj "/CN=$3" -out "$1.csr"
          openssl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4.key" -set_serial "0x$(openssl rand -hex 8)" \
            -days "$6" -"${7:-sha256}" -extfile "$5" -out "$1.pem" 2>/dev/null
        }
        root lab-root "PinningLab Test Root" "nameConstraints=critical,permitted;DNS:localhost,permitted;DNS:.test,permitted;IP:127.0.0.0/255.0.0.0"
        key int-a; ca_ext ",pathlen:0" "authorityKeyIdentifier=keyid" > int.ext
        sign int-a int-a "PinningLab Test Intermediate A" lab-root int.ext 30
        leaf_ext serverAuth "DNS:localhost,IP:127.0.0.1" > leaf.ext
        leaf_ext serverAuth "DNS:wrong.test" > wrong.ext
        key k1; key k2; key kp; key kr
        sign leaf-v1 k1 localhost int-a leaf.ext 30; cp k1.key leaf-v1.key
        sign leaf-v2 k1 localhost int-a leaf.ext 30; cp k1.key leaf-v2.key
        sign leaf-v3 k2 localhost int-a leaf.ext 30; cp k2.key leaf-v3.key
        sign expired k1 localhost int-a leaf.ext -1; cp k1.key expired.key
        sign wrong-host k1 wrong.test int-a wrong.ext 30; cp k1.key wrong-host.key
        rsakey weak 1024; sign weak weak localhost int-a leaf.ext 30
        rsakey rsa-2048 2048; sign rsa-2048 rsa-2048 localhost int-a leaf.ext 30
        openssl genpkey -algorithm ED25519 -out ed25519.key; chmod 600 ed25519.key
        sign ed25519 ed25519 localhost int-a leaf.ext 30
        root proxy-root "Interception Proxy Root"
        sign proxy-leaf kp localhost proxy-root leaf.ext 30; cp kp.key proxy-leaf.key
        root rogue-root "Rogue Root"
        sign rogue-leaf k1 localhost rogue-root leaf.ext 30; cp k1.key rogue-leaf.key
        root client-ca "PinningLab Test Client CA"
        leaf_ext clientAuth "DNS:client.test" > client.ext
        key client; sign client client "pinninglab-client" client-ca client.ext 30
        key client-int; sign client-int client-int "PinningLab Test Client Intermediate" client-ca int.ext 30
        key client2; sign client2 client2 "pinninglab-client-2" client-int client.ext 30
        openssl verify -CAfile lab-root.pem -untrusted int-a.pem leaf-v1.pem >/dev/null
        """#
}
