import Foundation

/// Runs `body` with `server`, then `stop`s it whether `body` returned or threw: the one scope of every
/// `withServer`.
package func stopping<Server, T>(
    _ server: Server, stop: (Server) async -> Void, _ body: (Server) async throws -> T
) async throws -> T {
    do {
        let result = try await body(server)
        await stop(server)
        return result
    } catch {
        await stop(server)
        throw error
    }
}
