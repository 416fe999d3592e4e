// The files a PKI folder holds for each identity.
internal import Foundation

/// Writes the files of identities: PEM, DER, chains, root, key, pins and, for some roles, PKCS#12.
struct IdentityWriter: Sendable {
    let directory: URL
    let pkcs12Encoder: (any PKCS12Encoder)?
    let pkcs12Password: String
    let pkcs12Roles: Set<Role>

    func files(_ name: String) -> IdentityFiles { IdentityFiles(directory: directory, name: name) }

    /// Whether the files of `id` already hold its current certificate (and `.p12` when its role wants one).
    func isCurrent(_ id: Identity) -> Bool {
        guard let der = try? Storage.readFile(files(id.name).certificateDER), der == id.certificateDER else { return false }
        return pkcs12Encoder == nil || !pkcs12Roles.contains(id.role) || Storage.exists(files(id.name).pkcs12)
    }

    /// Writes every identity's files (`onlyStale`: only those not current); identities are spread over the cores,
    /// each has its own folder.
    func write(_ identities: [Identity], onlyStale: Bool) throws {
        try Storage.makeDirectory(directory.appendingPathComponent("certs", isDirectory: true), mode: 0o755)
        let errors = ErrorBox()
        DispatchQueue.concurrentPerform(iterations: identities.count) { i in
            do {
                if onlyStale && isCurrent(identities[i]) { return }
                try write(identities[i])
            } catch { errors.record(error) }
        }
        if let e = errors.first { throw e }
    }

    func write(_ id: Identity) throws {
        let f = files(id.name)
        try Storage.makeDirectory(f.folder, mode: 0o755)
        let certPEM = PEM.encode(id.certificateDER, label: "CERTIFICATE")
        var chainPEM = certPEM
        for der in id.issuerChainDER { chainPEM += PEM.encode(der, label: "CERTIFICATE") }
        let rootPEM = id.isSelfSigned ? certPEM : PEM.encode(id.rootDER, label: "CERTIFICATE")
        try Storage.write(certPEM, to: f.certificatePEM)
        try Storage.write(chainPEM, to: f.chainPEM)
        try Storage.write(id.isSelfSigned ? chainPEM : chainPEM + rootPEM, to: f.fullChainPEM)
        try Storage.write(rootPEM, to: f.rootPEM)
        try Storage.write(PEM.encode(id.privateKeyPKCS8DER, label: "PRIVATE KEY"), to: f.keyPEM, mode: 0o600)
        try Storage.write(PinFormat.json([id]), to: f.pinsJSON)
        if let enc = pkcs12Encoder, pkcs12Roles.contains(id.role) {
            try Storage.write(try pkcs12(id, enc), to: f.pkcs12, mode: 0o600)
        } else if Storage.exists(f.pkcs12) {
            unlink(f.pkcs12.path)  // stale: made on demand again by LabPKI.pkcs12File(for:)
        }
        // Last: cert.cer is what `isCurrent` compares.
        try Storage.write(id.certificateDER, to: f.certificateDER)
    }

    func pkcs12(_ id: Identity, _ enc: any PKCS12Encoder) throws -> [UInt8] {
        do {
            return try enc.encode(privateKeyPKCS8DER: id.privateKeyPKCS8DER, certificateDER: id.certificateDER,
                                  chainDER: id.issuerChainDER, friendlyName: id.name, password: pkcs12Password)
        } catch {
            throw PKIError(.pkcs12Failed, "cannot build the PKCS#12 file: \(error)", file: files(id.name).pkcs12.path,
                           entity: id.name)
        }
    }
}
