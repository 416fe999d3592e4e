import Foundation
import PinningLab
import PinningLabCore

/// A client mistake (or a refusal) as the control API reports it: an HTTP status and a JSON body that names the
/// field at fault, what is wrong with it and how to fix it. Every handler turns its failures into one of these,
/// so a client mistake never becomes a 5xx.
struct ControlError: Error, Sendable, Encodable {
    var status: Int
    /// The request field at fault: a body field (`engine`), a query parameter (`format`), a path parameter
    /// (`id`), or `body` for the body as a whole; `nil` (JSON `null`, always present, so that clients can read it
    /// blindly) when no single field is.
    @NullWhenAbsent var field: String?
    /// What is wrong.
    var error: String
    /// How to fix it.
    var fix: String?

    init(_ status: Int, field: String?, _ error: String, fix: String? = nil) {
        self.status = status
        self.field = field
        self.error = error
        self.fix = fix
    }

    static func badRequest(_ field: String?, _ error: String, fix: String? = nil) -> ControlError {
        ControlError(400, field: field, error, fix: fix)
    }

    static func notFound(_ field: String?, _ error: String, fix: String? = nil) -> ControlError {
        ControlError(404, field: field, error, fix: fix)
    }
}
