import Foundation

/// A client mistake (or a refusal) as the control API reports it: an HTTP status and a JSON body that names the
/// field at fault, what is wrong with it and how to fix it. Every handler turns its failures into one of these,
/// so a client mistake never becomes a 5xx.
struct ControlError: Error, Sendable, Encodable {
    var status: Int
    /// The request field at fault: a body field (`engine`), a query parameter (`format`), a path parameter
    /// (`id`), or `body` for the body as a whole; `nil` when no single field is.
    var field: String?
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

    enum CodingKeys: String, CodingKey { case status, field, error, fix }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        // `field` is always present (null when no single field is at fault), so clients can read it blindly.
        try c.encode(field, forKey: .field)
        try c.encode(error, forKey: .error)
        try c.encodeIfPresent(fix, forKey: .fix)
    }
}
