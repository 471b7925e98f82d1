extension JSONValue {
    /// Compact JSON bytes for this value: members in order, numbers as their original literal,
    /// strings escaped as ``JSONWriter`` escapes them.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.value(self)
        return writer.bytes
    }

    /// Compact JSON text for this value.
    public func jsonString() -> String { String(decoding: jsonBytes(), as: UTF8.self) }

    /// The document in `bytes` (``JSONParser`` with its default limits), or nil when it is not
    /// valid JSON. Use ``JSONParser/parse(_:maxDepth:maxBytes:)`` to learn why.
    public static func parse(_ bytes: [UInt8]) -> JSONValue? { try? JSONParser.parse(bytes) }

    /// ``parse(_:)-([UInt8])`` of a string's UTF-8.
    public static func parse(_ text: String) -> JSONValue? { try? JSONParser.parse(text) }
}
