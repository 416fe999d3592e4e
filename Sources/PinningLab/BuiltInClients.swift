import PinningLabCore
public import PinningLabModel
import PinningLabReferenceClients

/// The built-in reference clients (OpenSSL; PinningLabReferenceClients): `correct`, and one teaching client per
/// classic mistake. Read from the one catalogue, `ReferenceClient.Mistake.all`: `pinlab --client`, the demo and the
/// labs list exactly its rows.
public enum BuiltInClients {
    /// `correct` first, then the teaching clients.
    public static var names: [String] { ReferenceClients.names }

    public static var all: [any PinningClient] { ReferenceClients.all }

    /// The client called `name`, or `nil`.
    public static func named(_ name: String) -> (any PinningClient)? { ReferenceClients.named(name) }

    /// One sentence on what the client does (wrong); "" for a name that is not one of ``names``.
    public static func explanation(_ name: String) -> String {
        ReferenceClient.Mistake(clientName: name)?.explanation ?? ""
    }

    /// Where the client's mistake shows in the bundled catalogue (the cells it fails), in one sentence; "" for a
    /// name that is not one of ``names``.
    public static func prediction(_ name: String) -> String {
        ReferenceClient.Mistake(clientName: name)?.prediction ?? ""
    }
}
