/// An object member's name fixed in the source (`"aps"`, `"title"`, `"jobId"`), written as one
/// copy of `,"name":` with no escaping scan.
///
/// A payload writes ~40 members and a delivery result 16, and most of their names are
/// constants: through ``JSONWriter/key(_:)`` each one pays the string's opaque `utf8.span`
/// getter and the scan for bytes to escape, for a text that never changes. Keep each key in a
/// `static let`:
///
/// ```swift
/// extension JSONKey { static let title = JSONKey("title") }
/// json.member(.title, ifPresent: text.title)
/// ```
///
/// The name must need no escaping: no `"`, `\` or control character (a debug build asserts
/// it). It is checked in tests, not at run time: the initializer is trivial, so the compiler
/// lays a `static let` key out as a constant, with no lazy initialization on each use. Every
/// key of the code base is compared with its literal written through the escaping path
/// (PayloadKeyTests, ResultRecordTests). Names that come from data (a job's `data` keys) keep
/// using ``JSONWriter/key(_:)``.
public struct JSONKey: Sendable {
    /// The member name, as written in the source.
    public let name: StaticString

    /// - Parameter name: an object member's name that JSON writes as is (checked in debug builds).
    @inlinable
    public init(_ name: StaticString) {
        assert(Self.needsNoEscape(name), "a JSONKey must need no escaping: \(name)")
        self.name = name
    }

    /// No `"`, `\` or control character in `name`.
    @usableFromInline
    static func needsNoEscape(_ name: StaticString) -> Bool {
        name.withUTF8Buffer { utf8 in !utf8.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C } }
    }

    /// The name as a `String`.
    public var string: String { name.description }

    /// The name's UTF-8 bytes, unescaped.
    public var utf8Count: Int { name.withUTF8Buffer { $0.count } }
}

/// Inlinable: in the caller the key is a constant, so its length and bytes are known where the
/// copy is compiled.
extension JSONWriter {
    /// Writes the member's name and the `:`; the next call writes its value.
    @inlinable public mutating func key(_ key: JSONKey) {
        let comma = needsComma
        key.name.withUTF8Buffer { name in
            bytes.append(addingCapacity: name.count &+ 4) { out in
                if comma { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "\""))
                for byte in name { out.append(byte) }
                out.append(UInt8(ascii: "\""))
                out.append(UInt8(ascii: ":"))
            }
        }
        needsComma = false
    }

    /// `"name":"value"` in one reservation of the buffer when the value needs no escaping (the
    /// common case: ~40 string members per payload), else the value escaped after the name.
    @inlinable public mutating func member(_ key: JSONKey, _ value: String) {
        let text = value.utf8.span
        guard Self.needsNoEscape(text) else {
            self.key(key)
            return string(value)
        }
        let comma = needsComma
        key.name.withUTF8Buffer { name in
            bytes.append(addingCapacity: name.count &+ text.count &+ 6) { out in
                if comma { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "\""))
                for byte in name { out.append(byte) }
                out.append(UInt8(ascii: "\""))
                out.append(UInt8(ascii: ":"))
                out.append(UInt8(ascii: "\""))
                for index in text.indices { out.append(text[index]) }
                out.append(UInt8(ascii: "\""))
            }
        }
        needsComma = true
    }
    @inlinable public mutating func member(_ key: JSONKey, _ value: Int) { self.key(key); int(value) }
    @inlinable public mutating func member(_ key: JSONKey, _ value: Double) { self.key(key); double(value) }
    @inlinable public mutating func member(_ key: JSONKey, _ value: Bool) { self.key(key); bool(value) }

    /// Writes the member only when `value` is non-nil.
    @inlinable public mutating func member(_ key: JSONKey, ifPresent value: String?) {
        if let value { member(key, value) }
    }

    /// Writes `name: value`, `name: null` when nil.
    @inlinable public mutating func member(_ key: JSONKey, orNull value: String?) {
        if let value { member(key, value) } else { self.key(key); null() }
    }

    /// Writes `name: {…}`, `build` writing the inner object's members.
    @inlinable public mutating func member<E: Error>(_ key: JSONKey, object build: (inout JSONWriter) throws(E) -> Void) throws(E) {
        self.key(key)
        beginObject()
        try build(&self)
        endObject()
    }

    /// Writes `name: [strings…]`.
    @inlinable public mutating func member(_ key: JSONKey, strings: [String]) {
        self.key(key)
        beginArray()
        for item in strings { string(item) }
        endArray()
    }
}
