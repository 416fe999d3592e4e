import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// Client credentials made once per key. The lock guards the dictionary only: the making runs outside it (two
/// callers racing for the same key both make it, harmlessly: the files are written atomically and the PKCS#12 file
/// under the PKI folder's lock), so no caller ever waits on a lock for another one's file work.
final class CredentialMemo: Sendable {
    private let values = Locked<[String: ClientCredentials]>([:])

    func cached(_ key: String) -> ClientCredentials? { values.withLock { $0[key] } }

    func value(for key: String, make: () throws -> ClientCredentials) throws -> ClientCredentials {
        if let v = cached(key) { return v }
        let v = try make()
        return values.withLock { all in
            if let first = all[key] { return first }
            all[key] = v
            return v
        }
    }
}
