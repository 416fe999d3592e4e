import Foundation
import PinningLabBase
public import PinningLabCore
import PinningLabGnuTLS
import PinningLabOpenSSL
import PinningLabPKI

/// The engine registry: every list of engines — `--engine`, the control API's `engines`, `pinlab --version`, a run's
/// default — is read from here.
///
/// The two built-in engines are OpenSSL and GnuTLS (`both`). An engine of your own (a `TLSEngine`) joins with one
/// call to ``register(_:)``: from then on `named(_:)` finds it, `all` lists it, and every run that selects it reports
/// its cells under its name.
public enum Engines {
    public static let openssl: any TLSEngine = OpenSSLEngine()
    public static let gnutls: any TLSEngine = GnuTLSEngine()
    /// The built-in engines, OpenSSL first: what `both` means, and what a run uses unless told otherwise.
    public static let builtIn: [any TLSEngine] = [openssl, gnutls]

    private static let registered = Locked<[any TLSEngine]>([])

    /// Every engine: the built-in ones, then those registered, in the order they were.
    public static var all: [any TLSEngine] { builtIn + registered.withLock { $0 } }
    public static var names: [String] { all.map(\.name) }

    /// Adds an engine to the registry. Throws when its name is taken, is empty, or is `both` or `all`.
    public static func register(_ engine: any TLSEngine) throws {
        let name = engine.name.lowercased()
        guard !name.isEmpty, !["both", "all"].contains(name),
            name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" })
        else {
            throw CheckSetupError(
                .runOption, problem: "'\(engine.name)' cannot name an engine.",
                fix: "name it with letters, digits and '-' (not both or all).")
        }
        try registered.withLock { list in
            guard !(builtIn + list).contains(where: { $0.name.lowercased() == name }) else {
                throw CheckSetupError(
                    .runOption, problem: "an engine named '\(engine.name)' is registered already.",
                    fix: "give the engine another name.")
            }
            list.append(engine)
        }
    }

    /// The engine with this name (`openssl`, `gnutls`, or a registered one), if there is one.
    public static func engine(named name: String) -> (any TLSEngine)? {
        all.first { $0.name.lowercased() == name.lowercased() }
    }

    /// An engine's name; `both` for the built-in engines; `all` for every registered engine too.
    public static func named(_ name: String) throws -> [any TLSEngine] {
        switch name.lowercased() {
        case "both": return builtIn
        case "all": return all
        default: break
        }
        guard let engine = engine(named: name) else {
            throw CheckSetupError(
                .runOption, problem: "'\(name)' is not an engine.",
                fix: "use \(names.joined(separator: ", ")), both or all.")
        }
        return [engine]
    }
}
