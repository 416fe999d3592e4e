import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// Real clients that check revocation, judged on the scenarios whose lab responder they reach through `{crl.url}`
/// and `{ocsp.url}`. Predictions, by reasoning from each client's documented behaviour:
///
/// - Python's `ssl` with `VERIFY_CRL_CHECK_LEAF` and the CRL it fetched from `{crl.url}` loaded into its store
///   (OpenSSL's CRL check underneath) is hard-fail for leaves: it needs a current CRL from the leaf's issuer. It
///   accepts crl-good, refuses crl-revoked-leaf ("certificate revoked"), crl-stale ("CRL has expired") and
///   ocsp-responder-unreachable (no CRL could be fetched: "unable to get certificate CRL"). It checks the leaf
///   only, so it accepts crl-revoked-intermediate, whose leaf its own CRL does not list: a deviation from the
///   hard-fail it declares, which the scenario exists to show.
/// - The same with `VERIFY_CRL_CHECK_CHAIN` (OpenSSL's `X509_V_FLAG_CRL_CHECK_ALL`) and lab-root's CRL loaded too
///   (fetched from `/lab-root.crl` on the same responder) checks every certificate of the chain, the root included
///   against its own CRL: it accepts crl-good and refuses crl-revoked-leaf and crl-revoked-intermediate ("certificate
///   revoked"), crl-stale and ocsp-responder-unreachable as the leaf-only check does.
/// - The JDK's `PKIXRevocationChecker` (OCSP at `{ocsp.url}` through `setOcspResponder`, falling back to the CRL
///   fetched from `{crl.url}` in a CertStore; end entity only): without SOFT_FAIL it refuses what Python refuses; with
///   SOFT_FAIL it accepts ocsp-responder-unreachable (a network failure) but still refuses crl-stale: SOFT_FAIL
///   forgives a status that cannot be obtained, not one that arrives out of date.
/// - The JDK configured the way most applications turn revocation on, by system properties alone:
///   `-Dcom.sun.net.ssl.checkRevocation=true -Dcom.sun.security.enableCRLDP=true
///   -Djdk.tls.client.enableStatusRequestExtension=true`, the default trust manager over a trust store holding
///   lab-root. It fetches each CRL from the URL the certificate names (`http://crl.pinning.test/…`, port 80), which
///   nothing in a test can remap to the responder's port (`jdk.net.hosts.file` maps names, not ports) — so the judge
///   also sets the JDK's standard proxy properties, `-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=PORT` with the
///   responder's address taken from `{crl.url}`, and the responder answers a proxy request (absolute form) for the lab's
///   revocation hosts as it answers the path. With `ocsp.enable` unset this is the JDK's legacy revocation mode: CRLs
///   only, hard-fail, every certificate of the path from the anchor's side down. So it refuses
///   crl-revoked-intermediate ("Certificate has been revoked", lab-root's CRL) — and also crl-good and
///   crl-revoked-leaf before it reaches their leaves: lab-intermediate-a names no CRL distribution point, and the
///   JDK demands a status for every certificate ("Could not determine revocation status"). crl-good is therefore a
///   deviation from revocation=hard as the lab defines it (a certificate that names no status has none to demand):
///   the JDK's CRLDP checking is stricter, and only works where every CA of the chain publishes a CRL.
/// - The same JDK with `com.sun.security.onlyCheckRevocationOfEECert=true`, the documented way to limit it to the
///   leaf: as a system property (`-D…`) it is silently ignored (the same refusals as above); as a security property
///   (a file passed with `-Djava.security.properties=`) the leaf alone is checked, so it accepts crl-good, refuses
///   crl-revoked-leaf ("Certificate has been revoked") and accepts crl-revoked-intermediate — the same deviation as
///   Python's leaf-only check.
@Suite("Real clients that check revocation (Python ssl, the JDK)", .serialized)
struct RevocationJudgeTests {
    static let scenarios = ["crl-good", "crl-revoked-leaf", "crl-stale", "ocsp-responder-unreachable"]

    static func run(
        _ client: CommandClient, declaring revocation: ClientChecks.Revocation,
        scenarios: [String] = scenarios
    ) async throws -> CheckReport {
        var options = CheckOptions(profiles: [.none], scenarios: scenarios, jobs: 2)
        options.clientChecks = ClientChecks(revocation: revocation)
        var report = try await TestLab.runner().run(.command(client), options: options)
        // The other profiles are reported as skipped: only `none` is run (the judges pin nothing).
        report.verdicts = report.verdicts.filter { $0.profile == PinProfile.none }
        return report
    }

    static func accepted(_ report: CheckReport) -> [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        for engine in ["openssl", "gnutls"] {
            out[engine] = Set(
                report.verdicts.filter { $0.engine == engine && $0.observed == .accepted }.map(\.scenario))
        }
        return out
    }

    static func scratch() throws -> URL {
        let dir = TestScratch.root.appendingPathComponent("pinlab-revjudge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// `leaf` or `chain`, then `{host} {ip} {port} {ca} {crl.url}`. In `chain` mode lab-root's CRL is fetched too,
    /// from the same responder as `{crl.url}`.
    static let python = #"""
        import base64, socket, ssl, sys, tempfile, urllib.request
        mode, host, ip, port, ca, crl_url = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
        ctx = ssl.create_default_context(cafile=ca)
        ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_CHAIN if mode == "chain" else ssl.VERIFY_CRL_CHECK_LEAF
        urls = [crl_url] if crl_url else []
        if crl_url and mode == "chain":
            urls.append(crl_url.rsplit("/", 1)[0] + "/lab-root.crl")
        for url in urls:
            try:
                der = urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=5).read()
                pem = "-----BEGIN X509 CRL-----\n" + base64.encodebytes(der).decode() + "-----END X509 CRL-----\n"
                with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
                    f.write(pem)
                    f.flush()
                    ctx.load_verify_locations(cafile=f.name)
            except OSError as e:
                print("no CRL:", url, e, file=sys.stderr)
        with socket.create_connection((ip, port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                tls.recv(1024)
        """#

    static let java = #"""
        import java.io.*;
        import java.net.*;
        import java.security.*;
        import java.security.cert.*;
        import java.util.*;
        import javax.net.ssl.*;

        public class RevocationJudge {
            public static void main(String[] a) throws Exception {
                String mode = a[0], host = a[1], ip = a[2], ocspURL = a[5], crlURL = a[6];
                int port = Integer.parseInt(a[3]);
                CertificateFactory cf = CertificateFactory.getInstance("X.509");
                Set<TrustAnchor> anchors = new HashSet<>();
                try (InputStream in = new FileInputStream(a[4])) {
                    for (java.security.cert.Certificate c : cf.generateCertificates(in)) anchors.add(new TrustAnchor((X509Certificate) c, null));
                }
                PKIXBuilderParameters params = new PKIXBuilderParameters(anchors, new X509CertSelector());
                PKIXRevocationChecker checker = (PKIXRevocationChecker) CertPathValidator.getInstance("PKIX").getRevocationChecker();
                EnumSet<PKIXRevocationChecker.Option> options = EnumSet.of(PKIXRevocationChecker.Option.ONLY_END_ENTITY);
                if (mode.equals("soft")) options.add(PKIXRevocationChecker.Option.SOFT_FAIL);
                checker.setOptions(options);
                if (!ocspURL.isEmpty()) checker.setOcspResponder(new URI(ocspURL));
                List<Object> crls = new ArrayList<>();
                if (!crlURL.isEmpty()) {
                    try (InputStream in = new URL(crlURL).openConnection(Proxy.NO_PROXY).getInputStream()) {
                        crls.add(cf.generateCRL(in));
                    } catch (IOException e) {
                        System.err.println("no CRL: " + e);
                    }
                }
                params.addCertStore(CertStore.getInstance("Collection", new CollectionCertStoreParameters(crls)));
                params.setRevocationEnabled(true);
                params.addCertPathChecker(checker);
                TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
                tmf.init(new CertPathTrustManagerParameters(params));
                SSLContext ctx = SSLContext.getInstance("TLS");
                ctx.init(null, tmf.getTrustManagers(), null);
                try (Socket raw = new Socket(ip, port)) {
                    raw.setSoTimeout(5000);
                    SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(raw, host, port, true);
                    SSLParameters p = s.getSSLParameters();
                    p.setEndpointIdentificationAlgorithm("HTTPS");
                    p.setServerNames(List.of(new SNIHostName(host)));
                    s.setSSLParameters(p);
                    s.startHandshake();
                    s.getOutputStream().write(("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n").getBytes());
                    s.getOutputStream().flush();
                    s.getInputStream().read();
                }
                for (String w : checker.getSoftFailExceptions().stream().map(Object::toString).toList()) System.err.println("soft-fail: " + w);
            }
        }
        """#

    static func pythonClient(_ mode: String, in dir: URL) throws -> CommandClient {
        let script = dir.appendingPathComponent("crljudge.py")
        try Self.python.write(to: script, atomically: true, encoding: .utf8)
        return CommandClient(
            name: "python-ssl-crl-check-\(mode)",
            template: try CommandTemplate([
                "python3", script.path, mode, "{host}", "{ip}", "{port}", "{ca}", "{crl.url}",
            ]),
            timeout: .seconds(30))
    }

    @Test(
        "Python ssl with VERIFY_CRL_CHECK_LEAF and the lab CRL: accepts crl-good, and crl-revoked-intermediate (leaf only)",
        .requires("python3"))
    func python() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenarios = Self.scenarios + ["crl-revoked-intermediate"]
        let report = try await Self.run(try Self.pythonClient("leaf", in: dir), declaring: .hard, scenarios: scenarios)
        #expect(report.verdicts.count == scenarios.count * 2)
        let notPassed = report.verdicts.filter { $0.status != .pass }
        // The revoked intermediate goes unseen: accepted where the hard-fail it declares refuses.
        #expect(
            Set(notPassed.map { "\($0.scenario)/\($0.engine)/\($0.status)" })
                == ["crl-revoked-intermediate/openssl/fail", "crl-revoked-intermediate/gnutls/fail"],
            "\(notPassed.map { "\($0.scenario)/\($0.engine): \($0.status) \($0.reason) \($0.clientDetail ?? "")" })")
        let accepted: Set<String> = ["crl-good", "crl-revoked-intermediate"]
        #expect(Self.accepted(report) == ["openssl": accepted, "gnutls": accepted])
        let detail = { (s: String) in
            report.verdicts.first { $0.scenario == s && $0.engine == "openssl" }?.clientDetail ?? ""
        }
        #expect(detail("crl-revoked-leaf").contains("certificate revoked"), "\(detail("crl-revoked-leaf"))")
        #expect(detail("crl-stale").contains("CRL has expired"), "\(detail("crl-stale"))")
        #expect(
            detail("ocsp-responder-unreachable").contains("unable to get certificate CRL"),
            "\(detail("ocsp-responder-unreachable"))")
    }

    @Test(
        "Python ssl with VERIFY_CRL_CHECK_CHAIN and the CRLs of the leaf's issuer and lab-root: refuses either revocation",
        .requires("python3"))
    func pythonChain() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenarios = Self.scenarios + ["crl-revoked-intermediate"]
        let report = try await Self.run(try Self.pythonClient("chain", in: dir), declaring: .hard, scenarios: scenarios)
        #expect(report.verdicts.count == scenarios.count * 2)
        let notPassed = report.verdicts.filter { $0.status != .pass }.map {
            "\($0.scenario)/\($0.engine): \($0.status) \($0.reason) \($0.clientDetail ?? "")"
        }
        #expect(notPassed.isEmpty, "\(notPassed.joined(separator: "\n"))")
        #expect(Self.accepted(report) == ["openssl": ["crl-good"], "gnutls": ["crl-good"]])
        for engine in ["openssl", "gnutls"] {
            let detail = { (s: String) in
                report.verdicts.first { $0.scenario == s && $0.engine == engine }?.clientDetail ?? ""
            }
            for s in ["crl-revoked-leaf", "crl-revoked-intermediate"] {
                #expect(detail(s).contains("certificate revoked"), "\(s)/\(engine): \(detail(s))")
            }
            #expect(detail("crl-stale").contains("CRL has expired"), "\(detail("crl-stale"))")
        }
    }

    /// The default trust manager over a trust store holding `{ca}` (lab-root); everything else is system properties.
    static let javaDefaults = #"""
        import java.io.*;
        import java.net.*;
        import java.security.*;
        import java.security.cert.*;
        import java.util.*;
        import javax.net.ssl.*;

        public class CRLDPJudge {
            public static void main(String[] a) throws Exception {
                String host = a[0], ip = a[1];
                int port = Integer.parseInt(a[2]);
                KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
                trust.load(null, null);
                try (InputStream in = new FileInputStream(a[3])) {
                    int i = 0;
                    for (java.security.cert.Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in))
                        trust.setCertificateEntry("anchor-" + i++, c);
                }
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(trust);
                SSLContext ctx = SSLContext.getInstance("TLS");
                ctx.init(null, tmf.getTrustManagers(), null);
                try (Socket raw = new Socket(ip, port)) {
                    raw.setSoTimeout(10000);
                    SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(raw, host, port, true);
                    SSLParameters p = s.getSSLParameters();
                    p.setEndpointIdentificationAlgorithm("HTTPS");
                    p.setServerNames(List.of(new SNIHostName(host)));
                    s.setSSLParameters(p);
                    s.startHandshake();
                    s.getOutputStream().write(("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n").getBytes());
                    s.getOutputStream().flush();
                    s.getInputStream().read();
                }
            }
        }
        """#

    /// `{crl.url} {host} {ip} {port} {ca}`: the JDK's proxy properties point at the responder `{crl.url}` names;
    /// `options` are more system properties.
    static func javaLauncher(options: String = "") -> String {
        let properties =
            [
                "-Dcom.sun.net.ssl.checkRevocation=true", "-Dcom.sun.security.enableCRLDP=true",
                "-Djdk.tls.client.enableStatusRequestExtension=true",
            ] + (options.isEmpty ? [] : [options])
        return """
            #!/bin/sh
            # The responder's address from {crl.url} (http://127.0.0.1:PORT/...): the JDK's HTTP proxy for the lab hosts.
            hostport=${1#http://}
            hostport=${hostport%%/*}
            shift
            exec java \(properties.joined(separator: " ")) \\
                -Dhttp.proxyHost="${hostport%:*}" -Dhttp.proxyPort="${hostport##*:}" \\
                -cp "$(dirname "$0")" CRLDPJudge "$@"

            """
    }

    /// Compiles the system-properties judge into `dir` (once) and returns a client of it launched with `options`.
    static func jdkPropertiesClient(_ name: String, options: String = "", in dir: URL) throws -> CommandClient {
        // Compiled once per folder: the launchers of one test share the class.
        if !FileManager.default.fileExists(atPath: dir.appendingPathComponent("CRLDPJudge.class").path) {
            let source = dir.appendingPathComponent("CRLDPJudge.java")
            try javaDefaults.write(to: source, atomically: true, encoding: .utf8)
            let compiled = ChildProcess.runBlocking(["javac", "-d", dir.path, source.path], timeout: .seconds(240))
            try #require(compiled.status == 0, "javac: \(String(decoding: compiled.stderr, as: UTF8.self))")
        }
        let launcher = dir.appendingPathComponent("\(name).sh")
        try javaLauncher(options: options).write(to: launcher, atomically: true, encoding: .utf8)
        return CommandClient(
            name: name,
            template: try CommandTemplate(["sh", launcher.path, "{crl.url}", "{host}", "{ip}", "{port}", "{ca}"]),
            timeout: .seconds(60))
    }

    @Test(
        "the JDK with checkRevocation and enableCRLDP fetches each certificate's CRL itself, through the responder as proxy",
        .requires("javac", "java"))
    func jdkSystemProperties() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let client = try Self.jdkPropertiesClient("jdk-crldp-system-properties", in: dir)
        let scenarios = ["crl-good", "crl-revoked-leaf", "crl-revoked-intermediate"]
        let report = try await Self.run(client, declaring: .hard, scenarios: scenarios)
        #expect(report.verdicts.count == scenarios.count * 2)
        #expect(Self.accepted(report) == ["openssl": [], "gnutls": []])
        // crl-good: lab-intermediate-a names no CRL, and the JDK demands a status for every certificate of the path.
        let notPassed = report.verdicts.filter { $0.status != .pass }
        #expect(
            Set(notPassed.map { "\($0.scenario)/\($0.engine)/\($0.status)" }) == [
                "crl-good/openssl/fail", "crl-good/gnutls/fail",
            ],
            "\(notPassed.map { "\($0.scenario)/\($0.engine): \($0.status) \($0.reason) \($0.clientDetail ?? "")" })")
        for engine in ["openssl", "gnutls"] {
            let detail = { (s: String) in
                report.verdicts.first { $0.scenario == s && $0.engine == engine }?.clientDetail ?? ""
            }
            #expect(
                detail("crl-revoked-intermediate").contains("Certificate has been revoked"),
                "\(engine): \(detail("crl-revoked-intermediate"))")
            for s in ["crl-good", "crl-revoked-leaf"] {
                #expect(detail(s).contains("Could not determine revocation status"), "\(s)/\(engine): \(detail(s))")
            }
        }
    }

    /// `com.sun.security.onlyCheckRevocationOfEECert=true` limits the JDK's check to the leaf — as a *security*
    /// property (a `java.security` override file named by `-Djava.security.properties`); as a system property (`-D`)
    /// it is silently ignored and the whole path is checked. Limited to the leaf, the JDK accepts crl-good (the leaf
    /// names its issuer's CRL, which does not list it; the intermediate's missing status no longer matters) and a
    /// good leaf under a revoked intermediate — the deviation a hard-fail declaration must show.
    @Test(
        "the JDK with onlyCheckRevocationOfEECert checks the leaf only: it accepts a good leaf under a revoked intermediate",
        .requires("javac", "java"))
    func jdkEndEntityOnly() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenarios = ["crl-good", "crl-revoked-leaf", "crl-revoked-intermediate"]
        func summary(_ report: CheckReport) -> String {
            "\(report.verdicts.map { "\($0.scenario)/\($0.engine): \($0.status) \($0.clientDetail ?? "")" })"
        }

        // As a system property: ignored (the result of the whole-path check, see jdkSystemProperties).
        let ignored = try await Self.run(
            try Self.jdkPropertiesClient(
                "jdk-crldp-ee-system-property", options: "-Dcom.sun.security.onlyCheckRevocationOfEECert=true", in: dir),
            declaring: .hard, scenarios: scenarios)
        #expect(Self.accepted(ignored) == ["openssl": [], "gnutls": []], "\(summary(ignored))")

        // As a security property: the leaf only.
        let properties = dir.appendingPathComponent("end-entity-only.security")
        try "com.sun.security.onlyCheckRevocationOfEECert=true\n".write(
            to: properties, atomically: true, encoding: .utf8)
        let report = try await Self.run(
            try Self.jdkPropertiesClient(
                "jdk-crldp-ee-security-property", options: "-Djava.security.properties=\(properties.path)", in: dir),
            declaring: .hard, scenarios: scenarios)
        #expect(report.verdicts.count == scenarios.count * 2)
        let accepted: Set<String> = ["crl-good", "crl-revoked-intermediate"]
        #expect(Self.accepted(report) == ["openssl": accepted, "gnutls": accepted], "\(summary(report))")
        let notPassed = report.verdicts.filter { $0.status != .pass }
        #expect(
            Set(notPassed.map { "\($0.scenario)/\($0.engine)/\($0.status)" })
                == ["crl-revoked-intermediate/openssl/fail", "crl-revoked-intermediate/gnutls/fail"],
            "\(summary(report))")
        for engine in ["openssl", "gnutls"] {
            let detail =
                report.verdicts.first { $0.scenario == "crl-revoked-leaf" && $0.engine == engine }?.clientDetail ?? ""
            #expect(detail.contains("Certificate has been revoked"), "crl-revoked-leaf/\(engine): \(detail)")
        }
    }

    @Test(
        "the JDK's PKIXRevocationChecker, hard-fail and soft-fail, against the lab responder",
        .requires("javac", "java"))
    func jdk() async throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("RevocationJudge.java")
        try Self.java.write(to: source, atomically: true, encoding: .utf8)
        let compiled = ChildProcess.runBlocking(["javac", "-d", dir.path, source.path], timeout: .seconds(240))
        try #require(compiled.status == 0, "javac: \(String(decoding: compiled.stderr, as: UTF8.self))")
        for mode in ["hard", "soft"] {
            let client = CommandClient(
                name: "jdk-pkix-revocation-\(mode)",
                template: try CommandTemplate([
                    "java", "-cp", dir.path, "RevocationJudge", mode, "{host}", "{ip}", "{port}", "{ca}",
                    "{ocsp.url}", "{crl.url}",
                ]),
                timeout: .seconds(60))
            let report = try await Self.run(client, declaring: mode == "hard" ? .hard : .soft)
            #expect(report.verdicts.count == Self.scenarios.count * 2)
            let notPassed = report.verdicts.filter { $0.status != .pass }
            let expected: Set<String> = mode == "hard" ? ["crl-good"] : ["crl-good", "ocsp-responder-unreachable"]
            #expect(Self.accepted(report) == ["openssl": expected, "gnutls": expected], "\(mode)")
            if mode == "hard" {
                #expect(notPassed.isEmpty, "\(notPassed.map { "\($0.scenario)/\($0.engine): \($0.reason)" })")
            } else {
                // SOFT_FAIL forgives only a status that cannot be *obtained* (a network error, some OCSP errors), as
                // its documentation says; a CRL that arrives but is past its nextUpdate still fails the path. So the
                // JDK's soft-fail is stricter than the lab's (which forgives any missing current status): crl-stale
                // is refused, and judged a deviation from revocation=soft.
                #expect(
                    Set(notPassed.map { "\($0.scenario)/\($0.engine)" }) == ["crl-stale/openssl", "crl-stale/gnutls"],
                    "\(notPassed.map { "\($0.scenario)/\($0.engine): \($0.reason)" })")
                #expect(
                    notPassed.allSatisfy {
                        ($0.clientDetail ?? "").contains("Certificate does not specify OCSP responder")
                    })
            }
        }
    }
}
