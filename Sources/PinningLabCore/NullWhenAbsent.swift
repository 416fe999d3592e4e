import Foundation

/// An optional that JSON always shows, as `null` when absent — where clients read a key blindly (the fixture
/// server's answer, the control API's errors and certificates). A plain optional would leave the key out.
@propertyWrapper
package struct NullWhenAbsent<Value: Encodable & Sendable>: Encodable, Sendable {
    package var wrappedValue: Value?

    package init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let v = wrappedValue { try c.encode(v) } else { try c.encodeNil() }
    }
}
