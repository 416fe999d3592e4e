import Foundation
import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// The client a check runs through the catalogue.
public enum ClientUnderTest: Sendable {
    /// An in-process client (a reference client, or your own `PinningClient`).
    case inProcess(any PinningClient)
    /// A command template run as a child process per cell.
    case command(CommandClient)

    public var name: String {
        switch self {
        case .inProcess(let c): return c.name
        case .command(let c): return c.name
        }
    }

    public var supportedProfiles: Set<PinProfile>? {
        switch self {
        case .inProcess(let c): return c.supportedProfiles
        case .command(let c): return c.supportedProfiles
        }
    }

    /// The platform the client declares (in-process clients only; a command's platform is `CheckOptions.platform`).
    public var platform: PlatformPolicy? {
        switch self {
        case .inProcess(let c): return c.platform
        case .command: return nil
        }
    }
}
