import Foundation
public import PinningLabCore
import PinningLabModel
import PinningLabPKI
import PinningLabGnuTLS
import PinningLabOpenSSL

/// The engines a check can use, by name.
public enum Engines {
    public static let openssl: any TLSEngine = OpenSSLEngine()
    public static let gnutls: any TLSEngine = GnuTLSEngine()
    /// Both engines, OpenSSL first.
    public static let all: [any TLSEngine] = [openssl, gnutls]
    public static var names: [String] { all.map(\.name) }

    /// The engine with this name (`openssl`, `gnutls`), if there is one.
    public static func engine(named name: String) -> (any TLSEngine)? {
        all.first { $0.name == name.lowercased() }
    }

    /// An engine's name, or `both` (`all`) for every engine.
    public static func named(_ name: String) throws -> [any TLSEngine] {
        if ["both", "all"].contains(name.lowercased()) { return all }
        guard let engine = engine(named: name) else {
            throw CheckSetupError(.runOption, problem: "'\(name)' is not an engine.",
                                  fix: "use \(names.joined(separator: ", ")) or both.")
        }
        return [engine]
    }
}
