/// Appends JSON text (RFC 8259) to a byte buffer by hand: the one JSON writer of the code base
/// (payloads, results, tokens, events, log lines, JWT headers and claims, CLI output, the sandbox's
/// answers and records). ``quoted(_:)`` / ``quotedString(_:)`` are its string quoting alone.
///
/// No `JSONSerialization`, no `JSONEncoder`: bytes written by hand cost several times less on
/// the per-notification path. The writer places the commas itself: call ``key(_:)`` before each
/// object member's value and the value methods in document order.
///
/// Strings are escaped per RFC 8259 §7: `"` and `\` are backslash-escaped; the control
/// characters U+0000…U+001F are written `\b \f \n \r \t` or `\u00XX`; everything else,
/// non-ASCII included (U+2028 and U+2029 too, which JSON allows raw), passes through as UTF-8.
/// Swift strings are always valid UTF-8: bytes decoded with `String(decoding:as:)` have had any
/// invalid sequence replaced by U+FFFD before they get here.
/// Doubles are written in their shortest round-trip form (`0.8`, not `0.80000000000000004`);
/// NaN and infinities, which JSON cannot represent, are written `null`.
public struct JSONWriter: Sendable {
    /// The JSON text written so far.
    public var bytes: [UInt8]
    /// Whether the next value or member needs a `,` first (``JSONKey`` members read it too).
    @usableFromInline var needsComma = false

    /// - Parameter capacity: bytes to reserve up front. Default: 512.
    public init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the buffer, keeping its capacity, to write another document.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    // MARK: Structure

    public mutating func beginObject() { open(UInt8(ascii: "{")) }

    public mutating func endObject() { close(UInt8(ascii: "}")) }

    public mutating func beginArray() { open(UInt8(ascii: "[")) }

    public mutating func endArray() { close(UInt8(ascii: "]")) }

    /// An object or array begins: a value of its parent (after a comma if one came before),
    /// and its first member or element takes no comma.
    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        needsComma = false
    }

    /// An object or array ends: the next value of its parent takes a comma.
    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        needsComma = true
    }

    /// Writes an object member's name and the `:`; the next call writes its value.
    public mutating func key(_ name: String) {
        appendQuoted(name, comma: needsComma, colon: true)
        needsComma = false
    }

    // MARK: Values

    public mutating func string(_ value: String) {
        appendQuoted(value, comma: needsComma, colon: false)
        needsComma = true
    }

    public mutating func int(_ value: Int) {
        separate()
        appendDecimal(value)
        needsComma = true
    }

    /// Shortest round-trip decimal; `null` for NaN and ±infinity.
    public mutating func double(_ value: Double) {
        separate()
        if !value.isFinite {
            appendASCII("null")
        } else {
            // Swift's description is the shortest round-trip form and always valid JSON
            // (`0.8`, `1.0`, `1e-07`, `1e+300`).
            appendASCII(value.description)
        }
        needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        separate()
        appendASCII(value ? "true" : "false")
        needsComma = true
    }

    public mutating func null() {
        separate()
        appendASCII("null")
        needsComma = true
    }

    /// `value` as a string, or `null` when nil.
    public mutating func string(orNull value: String?) {
        if let value { string(value) } else { null() }
    }

    /// `value` as a number, or `null` when nil.
    public mutating func int(orNull value: Int?) {
        if let value { int(value) } else { null() }
    }

    /// An RFC 3339 UTC timestamp string, `"2026-11-30T10:00:01.234Z"` (``RFC3339Timestamp``),
    /// written straight into the buffer.
    public mutating func timestamp(unixMillis: Int64, milliseconds: Bool = true) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        RFC3339Timestamp.append(unixMillis: unixMillis, milliseconds: milliseconds, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// A parsed document, written back compactly: members in order, numbers as their original
    /// literal (``JSONValue/jsonBytes()``).
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let number):
            separate()
            bytes.append(contentsOf: number.literal.utf8)
            needsComma = true
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let object):
            beginObject()
            for member in object.members {
                key(member.key)
                self.value(member.value)
            }
            endObject()
        }
    }

    /// Appends `json`, already valid JSON text, as one value (e.g. a pre-rendered fragment).
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    /// One value whose JSON text `write` appends to the buffer itself (a number formatted in
    /// place, without an intermediate array); it must append exactly one valid JSON value.
    public mutating func raw(appending write: (inout [UInt8]) -> Void) {
        separate()
        write(&bytes)
        needsComma = true
    }

    // MARK: Members (key + value)

    /// `"name":"value"` in one reservation of the buffer when neither needs escaping (a payload
    /// writes ~40 string members: one capacity and uniqueness check for the two strings).
    public mutating func member(_ name: String, _ value: String) {
        appendQuotedMember(name, value, comma: needsComma)
        needsComma = true
    }
    public mutating func member(_ name: String, _ value: Int) { key(name); int(value) }
    public mutating func member(_ name: String, _ value: Double) { key(name); double(value) }
    public mutating func member(_ name: String, _ value: Bool) { key(name); bool(value) }

    /// Writes the member only when `value` is non-nil.
    public mutating func member(_ name: String, ifPresent value: String?) {
        if let value { member(name, value) }
    }

    /// Writes `name: value`, `name: null` when nil.
    public mutating func member(_ name: String, orNull value: String?) { key(name); string(orNull: value) }

    /// Writes `name: {…}`, `build` writing the inner object's members.
    public mutating func member<E: Error>(_ name: String, object build: (inout JSONWriter) throws(E) -> Void) throws(E) {
        key(name)
        beginObject()
        try build(&self)
        endObject()
    }

    /// Writes `name: [strings…]`.
    public mutating func member(_ name: String, strings: [String]) {
        key(name)
        beginArray()
        for item in strings { string(item) }
        endArray()
    }

    // MARK: Measuring

    /// The bytes `value` takes inside a JSON string, quotes excluded.
    public static func escapedCount(_ value: String) -> Int {
        var count = 0
        for byte in value.utf8 { count += escapedCount(byte) }
        return count
    }

    /// The bytes one UTF-8 code unit takes inside a JSON string.
    @inline(__always)
    public static func escapedCount(_ byte: UInt8) -> Int {
        if byte >= 0x20 {
            return byte == 0x22 || byte == 0x5C ? 2 : 1
        }
        switch byte {
        case 0x08, 0x09, 0x0A, 0x0C, 0x0D: return 2
        default: return 6
        }
    }

    /// `value` as a complete JSON string literal, quotes included.
    public static func quoted(_ value: String) -> [UInt8] {
        var writer = JSONWriter(capacity: value.utf8.count + 2)
        writer.string(value)
        return writer.bytes
    }

    /// ``quoted(_:)`` as a `String`, for JSON assembled around it.
    public static func quotedString(_ value: String) -> String { String(decoding: quoted(value), as: UTF8.self) }

    // MARK: Whole documents

    /// The JSON text written so far as a `String`.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// A writer holding one object; `build` writes its members.
    public static func object<E: Error>(capacity: Int = 512, _ build: (inout JSONWriter) throws(E) -> Void) throws(E) -> JSONWriter {
        var writer = JSONWriter(capacity: capacity)
        writer.beginObject()
        try build(&writer)
        writer.endObject()
        return writer
    }

    // MARK: Internals

    @inline(__always)
    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func appendASCII(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func appendASCII(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func appendDecimal(_ value: Int) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        // Int.min has no positive twin: work with the magnitude as UInt.
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0) // 24 bytes ≥ the 20 digits of UInt64.max
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            while magnitude > 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            }
            bytes.append(contentsOf: buffer[index...])
        }
    }

    /// Strings that need escaping and are up to this many UTF-8 bytes reserve their worst case
    /// (every byte `\u00XX`) and are escaped in one pass; longer ones are measured first so the
    /// reservation is exact.
    public static let worstCaseReservationLimit = 256

    /// `[,]"escaped value"[:]` in one reservation of the buffer: a payload quotes ~80 mostly
    /// short strings, so the fixed cost per call counts (one capacity and uniqueness check, no
    /// copy of the string, the quotes, comma and colon written with the text). The string's
    /// bytes are read in place (`utf8.span`: Swift strings are contiguous UTF-8 here, small ones
    /// included). The common case, nothing to escape, is a branch-free scan and a plain copy,
    /// both of which the compiler vectorizes; a string with something to escape goes byte by byte.
    private mutating func appendQuoted(_ value: String, comma: Bool, colon: Bool) {
        let utf8 = value.utf8.span
        let count = utf8.count
        if Self.needsNoEscape(utf8) {
            bytes.append(addingCapacity: count &+ 4) { out in
                if comma { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "\""))
                for index in utf8.indices { out.append(utf8[index]) }
                out.append(UInt8(ascii: "\""))
                if colon { out.append(UInt8(ascii: ":")) }
            }
            return
        }
        let escapedCount = count <= Self.worstCaseReservationLimit ? count &* 6 : Self.escapedCount(value)
        bytes.append(addingCapacity: escapedCount &+ 4) { out in
            if comma { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            for index in utf8.indices {
                let byte = utf8[index]
                if byte >= 0x20 && byte != 0x22 && byte != 0x5C {
                    out.append(byte)
                } else {
                    Self.appendEscape(byte, to: &out)
                }
            }
            out.append(UInt8(ascii: "\""))
            if colon { out.append(UInt8(ascii: ":")) }
        }
    }

    /// Inlined into the escaping loop: called out of line, the output span's count would live in
    /// memory for the whole loop (its address escaped), reloaded and stored for every byte of every
    /// string with a quote in it (FCM's `on.actions`, a JSON text, is one per Android payload).
    @inline(__always)
    /// `[,]"name":"value"`: both copied in one reservation when neither needs escaping, else
    /// quoted one after the other.
    private mutating func appendQuotedMember(_ name: String, _ value: String, comma: Bool) {
        let key = name.utf8.span
        let text = value.utf8.span
        guard Self.needsNoEscape(key), Self.needsNoEscape(text) else {
            appendQuoted(name, comma: comma, colon: true)
            appendQuoted(value, comma: false, colon: false)
            return
        }
        bytes.append(addingCapacity: key.count &+ text.count &+ 6) { out in
            if comma { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            for index in key.indices { out.append(key[index]) }
            out.append(UInt8(ascii: "\""))
            out.append(UInt8(ascii: ":"))
            out.append(UInt8(ascii: "\""))
            for index in text.indices { out.append(text[index]) }
            out.append(UInt8(ascii: "\""))
        }
    }

    /// No `"`, `\` or control character: a branch-free scan the compiler vectorizes.
    @inlinable @inline(__always)
    static func needsNoEscape(_ utf8: Span<UInt8>) -> Bool {
        var special: UInt8 = 0
        for index in utf8.indices {
            let byte = utf8[index]
            special |= (byte < 0x20 ? 1 : 0) | (byte == 0x22 ? 1 : 0) | (byte == 0x5C ? 1 : 0)
        }
        return special == 0
    }

    private static func appendEscape(_ byte: UInt8, to out: inout OutputSpan<UInt8>) {
        let backslash = UInt8(ascii: "\\")
        out.append(backslash)
        switch byte {
        case 0x22: out.append(UInt8(ascii: "\""))
        case 0x5C: out.append(backslash)
        case 0x08: out.append(UInt8(ascii: "b"))
        case 0x09: out.append(UInt8(ascii: "t"))
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0C: out.append(UInt8(ascii: "f"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        default:
            let hex: InlineArray<16, UInt8> = [0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39,
                                               0x61, 0x62, 0x63, 0x64, 0x65, 0x66]
            out.append(UInt8(ascii: "u"))
            out.append(UInt8(ascii: "0"))
            out.append(UInt8(ascii: "0"))
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
    }
}
