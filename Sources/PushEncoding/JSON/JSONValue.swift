/// A parsed JSON document (RFC 8259), keeping object member order and number literals so a
/// job can be written back out (retry jobs) without changing what upstream sent.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The member `key` when this is an object, else nil.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    /// The number's value when this is a number.
    public var numberValue: Double? {
        if case .number(let number) = self { return number.double }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The JSON type name, for error messages (`"string"`, `"object"`, …).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// A JSON number: its value as a `Double`, whether the literal had no fraction or exponent,
/// and the literal text itself (written back verbatim, so big integers survive a round trip).
public struct JSONNumber: Sendable, Equatable {
    public var double: Double
    /// True for literals like `42` or `-7` (no `.`, no exponent).
    public var isIntegerLiteral: Bool
    /// The literal as it appeared in the input, e.g. `1.50e3`.
    public var literal: String

    public init(double: Double, isIntegerLiteral: Bool, literal: String) {
        self.double = double; self.isIntegerLiteral = isIntegerLiteral; self.literal = literal
    }

    public init(_ value: Int) {
        self.init(double: Double(value), isIntegerLiteral: true, literal: String(value))
    }

    /// The value as an `Int` when it is integral and in range (`1.0` counts, `1.5` does not).
    public var intValue: Int? {
        guard double.isFinite, double.rounded() == double, abs(double) < 9.0e15 else { return nil }
        return Int(exactly: double)
    }

    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        lhs.double == rhs.double && lhs.isIntegerLiteral == rhs.isIntegerLiteral
    }
}

/// A JSON object with its members in document order. Keys are unique (the parser rejects
/// duplicates); lookup is a linear scan, which beats hashing for the small objects jobs hold.
public struct JSONObject: Sendable, Equatable {
    public var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)] = []) { self.members = members }

    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.key == key { return member.value }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key: key, value: newValue))
            }
        }
    }

    public var keys: [String] { members.map(\.key) }
    public var count: Int { members.count }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (left, right) in zip(lhs.members, rhs.members) where left.key != right.key || left.value != right.value {
            return false
        }
        return true
    }
}
