import Foundation
import PinningLabCore
import PinningLab

/// The ten teaching labs, as data: scenarios, profiles, the starter's mistake, and per-cell explanations.
/// The pages are `labs/NN-slug/README.md`; keep both in step.
public enum TeachingLabs {
    public static let all: [TeachingLab] = [
        whyPin, certVersusKey, rotation, whereToPin, chainStuffing, pinPlusValidation, mutualTLS, rightBytes,
        stateBetweenConnections, pinnedKeyStolen,
    ]

    /// The lab numbered `text` (`3`, `03`) or named by its folder (`03-rotation`).
    public static func named(_ text: String) throws -> TeachingLab {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let n = Int(t), let lab = all.first(where: { $0.number == n }) { return lab }
        if let lab = all.first(where: { $0.slug == t }) { return lab }
        throw UnknownLabError(given: text)
    }

    // MARK: 1

    static let whyPin = TeachingLab(
        number: 1, slug: "01-why-pin", title: "Why pin: the intercepting proxy",
        goal: "See an unpinned client hand its traffic to a proxy whose root the user installed, and make a pinned "
            + "client refuse it.",
        scenarios: ["baseline", "intercepting-proxy", "untrusted-rogue"],
        profiles: [.none, .leafSPKI],
        pythonFile: "lab01_why_pin.py",
        mistake: "The client validates the chain but never checks its pins.",
        starterFails: [LabCell("intercepting-proxy", .leafSPKI)],
        explanations: [
            CellExplanation(
                "intercepting-proxy", .leafSPKI,
                shouldHave: "Refuse: the proxy's certificate is valid on this device (its user installed "
                    + "proxy-root), but its key is not the pinned K1.",
                missed: "Validation answers \"does some root on this device vouch for this certificate?\" — and on a "
                    + "device with a proxy root, or after a CA mis-issues (DigiNotar, Comodo 2011), the answer is "
                    + "yes for the attacker too. Only the pin asks \"is this the key my server holds?\"."),
            CellExplanation(
                "intercepting-proxy", PinProfile.none,
                shouldHave: "Accept: without pins the client cannot tell a trusted proxy from the real server.",
                missed: "Under the profile `none` the client holds no pins; refusing here means it refuses valid "
                    + "chains for another reason (check the trust file you load)."),
            CellExplanation(
                "baseline",
                shouldHave: "Accept: the server presents exactly the certificate the app was built for.",
                missed: "A client that refuses the baseline is broken for every user. Hash the leaf's whole "
                    + "SubjectPublicKeyInfo (not the certificate, not the bare key) and compare it with every pin."),
            CellExplanation(
                "untrusted-rogue",
                shouldHave: "Refuse: rogue-root is in no trust store of the device.",
                missed: "Plain validation stops this one; a client that accepts it does not validate at all."),
        ],
        lesson: "HTTPS trusts every root on the device. A pin is the app's own, narrower statement of trust.",
        tryNext: "In the starter's TODO: hash labtls.spki(labtls.leaf(tls)) with labtls.sha256_b64 and refuse "
            + "unless the hash is in cell.pins (skip the check when cell.pins is empty: the profile `none`).",
        teachingClient: "no-pinning")

    // MARK: 2

    static let certVersusKey = TeachingLab(
        number: 2, slug: "02-cert-vs-key", title: "Certificate vs public-key pinning",
        goal: "Show what a routine renewal (same key, new certificate) does to certificate pins and to key pins.",
        scenarios: ["baseline", "renewal-same-key", "intermediate-renewed-same-key", "rekey"],
        profiles: [.leafSPKI, .leafSPKIBackup],
        pythonFile: "lab02_cert_vs_key.py",
        mistake: "The client pins the whole certificate (SHA-256 of its DER) although the policy is to pin the key.",
        starterFails: LabCell.grid(["renewal-same-key"], [.leafSPKI, .leafSPKIBackup]),
        explanations: [
            CellExplanation(
                "renewal-same-key",
                shouldHave: "Accept: leaf-v2 is a renewal of leaf-v1 with the same key K1, from the same CA.",
                missed: "A certificate's bytes change at every renewal (serial, dates, signature) even when the key "
                    + "does not. Pinning the certificate cuts every installed app off on renewal day, until users "
                    + "update; pinning the SubjectPublicKeyInfo survives any renewal that keeps the key."),
            CellExplanation(
                "rekey", .leafSPKI,
                shouldHave: "Refuse: the server moved to K2 and only K1 is pinned.",
                missed: "A key pin is about the key: a new key must be refused unless it was pinned in advance "
                    + "(lab 3)."),
            CellExplanation(
                "rekey", .leafSPKIBackup,
                shouldHave: "Accept: K2 was shipped as the backup pin before the re-key.",
                missed: "The pins are a set; the server's key may match any of them."),
            CellExplanation(
                "baseline",
                shouldHave: "Accept: the server presents exactly the certificate the app was built for.",
                missed: "Hash the leaf's DER SubjectPublicKeyInfo and compare with cell.pins."),
            CellExplanation(
                "intermediate-renewed-same-key",
                shouldHave: "Accept: the intermediate was renewed with its key; the leaf is unchanged.",
                missed: "A leaf pin does not care about the intermediate's certificate."),
        ],
        lesson: "Pin what survives the operations you expect: keys survive renewals, certificates do not.",
        tryNext: "Replace the certificate hash with labtls.sha256_b64(labtls.spki(leaf)) compared against "
            + "cell.pins; then run the lab again and look at renewal-same-key.")

    // MARK: 3

    static let rotation = TeachingLab(
        number: 3, slug: "03-rotation", title: "Rotation without an outage",
        goal: "Re-key a pinned server without cutting anyone off: backup pins, the order of releases, and what an "
            + "emergency re-key to an unpinned key does.",
        scenarios: ["baseline", "rekey", "emergency-rekey"],
        profiles: [.leafSPKI, .leafSPKIBackup],
        pythonFile: "lab03_rotation.py",
        mistake: "The app ships a backup pin but the client only honours the first pin of the set.",
        starterFails: [LabCell("rekey", .leafSPKIBackup)],
        explanations: [
            CellExplanation(
                "rekey", .leafSPKIBackup,
                shouldHave: "Accept: the server re-keyed to K2, which the app shipped as its backup pin.",
                missed: "A backup pin is only useful if the client accepts it. The release order is: ship an app "
                    + "with both pins, wait until (nearly) every user has it, then switch the server to the backup "
                    + "key. A client that reads only the first pin turns a planned rotation into an outage."),
            CellExplanation(
                "rekey", .leafSPKI,
                shouldHave: "Refuse: only K1 is pinned, and the server now holds K2.",
                missed: "This is what the single-pin app sees after a re-key: an outage, by design."),
            CellExplanation(
                "emergency-rekey",
                shouldHave: "Refuse: the server's new key K3 was never pinned by anyone.",
                missed: "An emergency re-key to a fresh key cuts off every leaf-pinned app. That is pinning "
                    + "working; the remedy is to use the backup key kept offline (K2), or pin the CA you own."),
            CellExplanation(
                "baseline",
                shouldHave: "Accept: the server presents the original key K1.",
                missed: "Compare the leaf's SPKI hash with every pin in cell.pins."),
        ],
        lesson: "Pins are a set. Ship the next key's pin before you need it, and accept any pin of the set.",
        tryNext: "Change `got != cell.pins[0]` into a membership test over the whole list; then explain (question 3) "
            + "why emergency-rekey must still be refused.")

    // MARK: 4

    static let whereToPin = TeachingLab(
        number: 4, slug: "04-where-to-pin", title: "Where to pin: leaf, intermediate or root",
        goal: "Check a pin wherever it sits in the validated chain, and weigh leaf, intermediate and root pins "
            + "against re-keys, sibling intermediates and mis-issuance.",
        scenarios: ["baseline", "rekey", "sibling-intermediate", "root-not-sent"],
        profiles: [.leafSPKI, .intermediateSPKI, .rootSPKI],
        pythonFile: "lab04_where_to_pin.py",
        mistake: "The client only hashes the leaf, so a pin on the intermediate or the root never matches.",
        starterFails: LabCell.grid(["baseline", "rekey", "root-not-sent"], [.intermediateSPKI, .rootSPKI])
            .union([LabCell("sibling-intermediate", .rootSPKI)]),
        explanations: [
            CellExplanation(
                "sibling-intermediate", .intermediateSPKI,
                shouldHave: "Refuse: the leaf now comes from lab-intermediate-b, and the pin is on "
                    + "lab-intermediate-a's key.",
                missed: "An intermediate pin ties the app to one issuing CA; when the CA moves issuance to a "
                    + "sibling (public CAs do), intermediate-pinned apps break. That is also what protects them "
                    + "from a certificate mis-issued by the sibling."),
            CellExplanation(
                "sibling-intermediate", .rootSPKI,
                shouldHave: "Accept: the chain still ends at the pinned lab-root.",
                missed: "A root pin accepts every intermediate of that root: it survives CA reorganisations, and it "
                    + "trusts anything the root's CAs issue for your name. Look for the pin in the whole validated "
                    + "chain, root included."),
            CellExplanation(
                "root-not-sent",
                shouldHave: "Accept: the server does not send its root (servers should not); the client's validated "
                    + "chain ends at lab-root from its own trust store.",
                missed: "The pinned certificate may be the intermediate or the root, which the client finds in the "
                    + "chain it built, not only among the certificates on the wire."),
            CellExplanation(
                "rekey", .leafSPKI,
                shouldHave: "Refuse: only K1 is pinned and the server re-keyed to K2.",
                missed: "A leaf pin breaks on a re-key unless a backup pin was shipped (lab 3)."),
            CellExplanation(
                "rekey",
                shouldHave: "Accept: the new key K2 is still issued by the pinned intermediate under the pinned root.",
                missed: "Pins higher in the chain survive leaf re-keys: the pin is on a CA key, so compare it with "
                    + "the CA certificates of the validated chain, not with the leaf."),
            CellExplanation(
                "baseline",
                shouldHave: "Accept: the chain is the one the app was built for, and its pinned certificate "
                    + "(leaf, intermediate or root, depending on the profile) is in the validated chain.",
                missed: "Hash every certificate of the validated chain (leaf first, root last), not only the leaf."),
        ],
        lesson: "A pin can sit at any level of the validated chain; each level trades availability for exposure.",
        tryNext: "Loop over labtls.validated_chain(tls) and accept when any certificate's SPKI hash is in cell.pins.",
        teachingClient: nil)

    // MARK: 5

    static let chainStuffing = TeachingLab(
        number: 5, slug: "05-chain-stuffing", title: "Chain stuffing and name collisions",
        goal: "Check pins against the validated chain, never against the certificates the server presented.",
        scenarios: ["root-not-sent", "intercepting-proxy", "chain-stuffing", "name-collision-intermediate"],
        profiles: [.leafSPKI, .intermediateSPKI, .rootSPKI],
        pythonFile: "lab05_chain_stuffing.py",
        mistake: "The client looks for a pinned key among the certificates the server sent.",
        starterFails: LabCell.grid(["chain-stuffing"], [.leafSPKI, .intermediateSPKI, .rootSPKI])
            .union([LabCell("root-not-sent", .rootSPKI)]),
        explanations: [
            CellExplanation(
                "chain-stuffing",
                shouldHave: "Refuse: the validated chain is proxy-leaf → proxy-root; none of its keys is pinned.",
                missed: "Certificates are public: the proxy appended the genuine leaf-v1, lab-intermediate-a and "
                    + "lab-root after its own leaf. They were sent, but they are not part of the chain the verifier "
                    + "built, so they prove nothing. Checking the presented chain is the bug OkHttp fixed in "
                    + "CVE-2016-2402 (it now cleans the chain before matching pins)."),
            CellExplanation(
                "root-not-sent", .rootSPKI,
                shouldHave: "Accept: the validated chain ends at the pinned lab-root, from the trust store.",
                missed: "The server does not send its root, so a client that only looks at the presented "
                    + "certificates never finds a root pin. The validated chain has it."),
            CellExplanation(
                "name-collision-intermediate",
                shouldHave: "Refuse: twin-intermediate-a copies lab-intermediate-a's name and key identifier, but "
                    + "its key is another.",
                missed: "Names and key identifiers are labels anyone can copy; only the key's hash proves identity."),
            CellExplanation(
                "intercepting-proxy",
                shouldHave: "Refuse: the proxy's chain validates on this device, but no key in it is pinned.",
                missed: "See lab 1: the pin is what tells a trusted proxy from the real server."),
            CellExplanation(
                "root-not-sent",
                shouldHave: "Accept: the chain is the one the app was built for.",
                missed: "Hash the certificates of the validated chain, leaf to root."),
        ],
        lesson: "Only the validated chain is evidence: each certificate in it is signed by the next, up to a root "
            + "you trust. Anything else on the wire is decoration an attacker chooses.",
        tryNext: "Replace labtls.presented_chain(tls) with labtls.validated_chain(tls), and say (question 2) why "
            + "that also fixes root-not-sent under root-spki.",
        teachingClient: "pin-presented-chain")

    // MARK: 6

    static let pinPlusValidation = TeachingLab(
        number: 6, slug: "06-pin-plus-validation", title: "Pinning adds to validation, never replaces it",
        goal: "Keep full validation (trusted chain, dates, host name) and check the pin on top of it.",
        scenarios: ["baseline", "expired-leaf", "not-yet-valid-leaf", "wrong-host", "self-signed-pinned-key"],
        profiles: [.leafSPKI],
        pythonFile: "lab06_pin_plus_validation.py",
        mistake: "Validation is switched off (CERT_NONE, no host name check) because \"the pin is enough\".",
        starterFails: LabCell.grid(["expired-leaf", "not-yet-valid-leaf", "wrong-host", "self-signed-pinned-key"], [.leafSPKI]),
        explanations: [
            CellExplanation(
                "expired-leaf",
                shouldHave: "Refuse: the certificate carries the pinned key but expired yesterday.",
                missed: "A pin never rescues an invalid chain. Expiry bounds how long a stolen key is useful; a "
                    + "client that accepts expired certificates because the key matches keeps trusting a key the "
                    + "operator has long retired."),
            CellExplanation(
                "not-yet-valid-leaf",
                shouldHave: "Refuse: the certificate is not valid yet.",
                missed: "Validity dates are part of validation, and the pin check comes after validation."),
            CellExplanation(
                "wrong-host",
                shouldHave: "Refuse: the certificate names other.pinning.test, not localhost.",
                missed: "Host name verification is part of validation. A key can be used for many names; the pin "
                    + "says nothing about which host the certificate is for."),
            CellExplanation(
                "self-signed-pinned-key",
                shouldHave: "Refuse: nothing in the trust store vouches for this self-signed certificate.",
                missed: "\"Pin instead of validate\" (a trust callback that returns success when the key matches) "
                    + "fails open in every case validation would have caught. A pin narrows the trusted set; it "
                    + "never widens it."),
            CellExplanation(
                "baseline",
                shouldHave: "Accept: the chain validates and the leaf key is pinned.",
                missed: "Load {ca} as the only trust anchor and keep host name checking on."),
        ],
        lesson: "Validation first, then the pin: a pin narrows what validation allowed, it never widens it.",
        tryNext: "Build the context with ssl.create_default_context(cafile=cell.ca) (verification and host name "
            + "checking on) and keep the pin check after the handshake.",
        teachingClient: "pin-replaces-validation")

    // MARK: 7

    static let mutualTLS = TeachingLab(
        number: 7, slug: "07-mutual-tls", title: "Mutual TLS: client certificates",
        goal: "Present a client certificate when the server requires one (PEM or PKCS#12), and understand what it "
            + "proves — and what it does not when every copy of the app carries the same one.",
        scenarios: [
            "baseline", "mtls-required-valid", "mtls-required-missing", "mtls-optional-missing",
            "mtls-required-untrusted",
        ],
        profiles: [.none, .leafSPKI],
        pythonFile: "lab07_mutual_tls.py",
        mistake: "The client never loads its client certificate.",
        starterFails: LabCell.grid(["mtls-required-valid"], [.none, .leafSPKI]),
        explanations: [
            CellExplanation(
                "mtls-required-valid",
                shouldHave: "Accept: present client-valid (certificate {client.cert} and key {client.key}, or the "
                    + "PKCS#12 bundle {client.p12} with its password), then send the request.",
                missed: "With client authentication the server also decides: no certificate, no service. The "
                    + "server refused the handshake (certificate_required in TLS 1.3) because the client presented "
                    + "nothing."),
            CellExplanation(
                "mtls-required-missing",
                shouldHave: "Fail to connect: the server requires a certificate and this cell gives the client none.",
                missed: "A client that gets through here was let in by a server that does not enforce client "
                    + "authentication — or the client sent a certificate it was not given."),
            CellExplanation(
                "mtls-optional-missing",
                shouldHave: "Accept: the server asks for a certificate but does not require one.",
                missed: "A certificate request is not a demand; without a certificate, go on."),
            CellExplanation(
                "mtls-required-untrusted",
                shouldHave: "Fail to connect: the client's certificate comes from rogue-root, which the server does "
                    + "not accept.",
                missed: "The server, not the client, refuses here."),
            CellExplanation(
                "baseline",
                shouldHave: "Accept: no client authentication, the chain and the pin are the ones expected.",
                missed: "Loading a client certificate must not change anything when the server does not ask."),
        ],
        lesson: "Client authentication is the server's check of the client; the client's job is to present the "
            + "certificate and key it was given, and still validate and pin the server.",
        tryNext: "When cell.client_cert is set, call context.load_cert_chain(cell.client_cert, cell.client_key) "
            + "before the handshake.")

    // MARK: 8

    static let rightBytes = TeachingLab(
        number: 8, slug: "08-hash-the-right-bytes", title: "Hashing the right bytes: SPKI vs the bare key",
        goal: "Compute the standard pin (SHA-256 of the DER SubjectPublicKeyInfo) for EC, RSA and Ed25519 keys, "
            + "and see why the bare key bytes of SecKeyCopyExternalRepresentation never match it.",
        scenarios: ["baseline", "ecdsa-p384", "rsa-2048", "ed25519"],
        profiles: [.leafSPKI],
        pythonFile: "lab08_hash_the_right_bytes.py",
        mistake:
            "The client hashes the bare key (the BIT STRING's contents) instead of the whole SubjectPublicKeyInfo.",
        starterFails: LabCell.grid(["baseline", "ecdsa-p384", "rsa-2048", "ed25519"], [.leafSPKI]),
        explanations: [
            CellExplanation(
                "rsa-2048",
                shouldHave: "Accept: the leaf holds exactly the pinned RSA-2048 key.",
                missed: "For RSA, SecKeyCopyExternalRepresentation returns the PKCS#1 RSAPublicKey (modulus and "
                    + "exponent); the SPKI wraps it with the rsaEncryption algorithm identifier. Same key, other "
                    + "bytes, other hash."),
            CellExplanation(
                "ed25519",
                shouldHave: "Accept: the leaf holds exactly the pinned Ed25519 key.",
                missed: "For Ed25519 the bare key is 32 bytes; the SPKI adds the id-Ed25519 identifier (12 bytes of "
                    + "header)."),
            CellExplanation(
                "ecdsa-p384",
                shouldHave: "Accept: the leaf holds exactly the pinned P-384 key.",
                missed: "For EC keys the bare key is the point 04||X||Y; the SPKI adds id-ecPublicKey and the curve "
                    + "(here secp384r1). The header differs per key type and size, which is why TrustKit keeps one "
                    + "ASN.1 header per key type to prepend before hashing."),
            CellExplanation(
                "baseline",
                shouldHave: "Accept: the leaf holds exactly the pinned P-256 key K1.",
                missed: "Every pin in this lab's input is SHA-256 over the DER SubjectPublicKeyInfo, as `openssl x509 "
                    + "-pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64` computes "
                    + "it. Hashing the bare EC point (04||X||Y) gives another value for the same key."),
        ],
        lesson: "A pin is a hash of specific bytes: the DER SubjectPublicKeyInfo, algorithm identifier included.",
        tryNext: "Hash labtls.spki(leaf) instead of labtls.raw_public_key(leaf); compare your value with "
            + "`pinlab explain baseline` or the openssl pipeline in the lab page.",
        teachingClient: "raw-key-hash")

    // MARK: 9

    static let stateBetweenConnections: TeachingLab = {
        var lab = TeachingLab(
            number: 9, slug: "09-state-between-connections", title: "State between connections: pins and resumed sessions",
            goal: "Keep a TLS session across connections, as apps do, and still check the pins on every connection: "
                + "a resumed session sends no certificate and the TLS library verifies nothing.",
            scenarios: ["resumption-genuine", "resumption-after-unpinned-handshake", "resumption-cross-host"],
            profiles: [.none, .leafSPKI],
            pythonFile: "lab09_state_between_connections.py",
            mistake: "The client checks its pins where a certificate callback would — only on full handshakes — so a "
                + "resumed session is trusted without them.",
            starterFails: LabCell.grid(["resumption-after-unpinned-handshake", "resumption-cross-host"], [.leafSPKI]),
            explanations: [
                CellExplanation(
                    "resumption-after-unpinned-handshake", .leafSPKI,
                    shouldHave: "Refuse step 2: it resumes the session the interceptor made in step 1, before the pins "
                        + "were in force; the session's certificate is the proxy's, whose key is not the pinned K1.",
                    missed: "On a resumed connection no certificate crosses the wire, so a check that runs when "
                        + "certificates arrive (Go's VerifyPeerCertificate, Node's checkServerIdentity, a guard on "
                        + "session_reused) never runs. The pins must be checked on every connection against the "
                        + "certificate the session was made with — getpeercert(True) returns it."),
                CellExplanation(
                    "resumption-cross-host", .leafSPKI,
                    shouldHave: "Refuse step 2: the session was made for the unpinned cdn.pinning.test through the "
                        + "interceptor; resumed for the pinned api.pinning.test, its certificate is still the proxy's.",
                    missed: "A session is a decision made for one host under one set of pins. Resuming it for another "
                        + "host, or under other pins, must not skip the check of this host's pins (Bun's reused "
                        + "sessions across server names, oven-sh/bun #33734)."),
                CellExplanation(
                    "resumption-genuine",
                    shouldHave: "Accept both connections: the genuine server, and the second one resumes the first's "
                        + "session — resumption must keep working under pins.",
                    missed: "A check on every connection must still pass the genuine server's resumed session: hash "
                        + "the SPKI of getpeercert(True), which is the session's certificate, and keep the session "
                        + "(tls.session) after reading the response, when TLS 1.3 tickets arrive."),
            ],
            lesson: "Pins are a decision about every connection. A resumed session skips the handshake's certificate "
                + "checks, not yours.",
            tryNext: "Drop the `not tls.session_reused` guard in the starter: check the pins whenever they apply, on "
                + "every connection, against tls.getpeercert(True).",
            teachingClient: "skips-pins-on-resumption")
        lab.connections = 2
        return lab
    }()

    // MARK: 10

    static let pinnedKeyStolen: TeachingLab = {
        var lab = TeachingLab(
            number: 10, slug: "10-when-a-pinned-key-is-stolen", title: "When a pinned key is stolen",
            goal: "See why a pin set that kept a compromised key accepts the attacker after an emergency re-key, and "
                + "add the check that refuses it: revocation, hard-fail.",
            scenarios: ["baseline", "revoked-key-replay", "crl-good", "crl-revoked-leaf"],
            profiles: [.leafSPKI, .leafSPKIBackup],
            pythonFile: "lab10_when_a_pinned_key_is_stolen.py",
            mistake: "The client checks its pins correctly but never asks whether the certificate was revoked, so the "
                + "stolen K1 — still pinned — opens every connection.",
            starterFails: [
                LabCell("revoked-key-replay", .leafSPKI), LabCell("revoked-key-replay", .leafSPKIBackup),
                LabCell("crl-revoked-leaf", .leafSPKI), LabCell("crl-revoked-leaf", .leafSPKIBackup),
            ],
            explanations: [
                CellExplanation(
                    "revoked-key-replay",
                    shouldHave: "Refuse: the certificate is the old K1 leaf, revoked for keyCompromise after the "
                        + "emergency re-key. It names its CRL and OCSP responder, and the attacker lets neither be "
                        + "reached: a hard-fail client refuses a certificate that publishes status when it cannot get "
                        + "current proof of good standing.",
                    missed: "Pins say which keys you trust, not whether a key is still safe. After a key leaks, every "
                        + "pin set that kept it — the leaf pin, the backup set K1+K2 — matches the attacker exactly, "
                        + "until the app ships without it. Only revocation tells the stolen key apart, and only "
                        + "hard-fail revocation survives an attacker who also blocks the revocation hosts."),
                CellExplanation(
                    "crl-revoked-leaf",
                    shouldHave: "Refuse: the certificate's own CRL, current and signed by its issuer, lists it as "
                        + "revoked.",
                    missed: "A pin match is not proof of good standing. Fetch the CRL the certificate names "
                        + "(cell.crl_url), load it into the context and turn on ssl.VERIFY_CRL_CHECK_LEAF: OpenSSL "
                        + "then refuses a listed certificate inside the handshake."),
                CellExplanation(
                    "crl-good",
                    shouldHave: "Accept: the CRL is current, signed by the issuer, and does not list the certificate.",
                    missed: "A revocation check must still accept a good certificate: load the CRL fetched from "
                        + "cell.crl_url before the handshake (labtls.load_crl), or VERIFY_CRL_CHECK_LEAF refuses for "
                        + "want of a CRL."),
                CellExplanation(
                    "baseline",
                    shouldHave: "Accept: leaf-v1 publishes no revocation status (no OCSP responder, no CRL), so "
                        + "there is nothing to demand.",
                    missed: "Hard-fail applies to certificates that publish status: turn the CRL check on only when "
                        + "there is a CRL (cell.crl_url), and refuse afterwards only when the certificate names a "
                        + "CRL or responder that could not be reached (labtls.publishes_status)."),
            ],
            lesson: "A pin set is a promise about keys; revocation is how you take a key back before the next "
                + "release. Remove a compromised key from the pins in the next release, and check revocation "
                + "hard-fail until then.",
            tryNext: "Before the handshake, when cell.crl_url is set, call labtls.load_crl(context, cell.crl_url) and "
                + "add ssl.VERIFY_CRL_CHECK_LEAF to context.verify_flags; after it, refuse when cell.crl_url is "
                + "empty but labtls.publishes_status(tls) says the certificate names a CRL or OCSP responder.")
        lab.clientChecks = ClientChecks(revocation: .hard)
        lab.referenceClient = "correct-revocation-hard"
        lab.swiftStarterExists = false
        return lab
    }()
}

extension LabCell {
    /// Every cell of `scenarios` × `profiles`: most labs' starters fail whole rows or columns.
    static func grid(_ scenarios: [String], _ profiles: [PinProfile]) -> Set<LabCell> {
        Set(scenarios.flatMap { s in profiles.map { LabCell(s, $0) } })
    }
}
