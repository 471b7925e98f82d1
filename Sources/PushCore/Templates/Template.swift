/// A notification text template (docs/reference/job.md), parsed once per job and language.
///
/// Syntax: `{{ name }}` and `{{ name | default: "x" }}` (or `'x'`) over the recipient's
/// `properties`. A missing variable without a default renders empty; `default:` also replaces
/// an empty value. Nothing is evaluated: values are inserted as they are (no HTML, no escaping,
/// no case mapping), and anything that is not exactly that syntax, e.g. `{{ a | upcase }}` or an
/// unclosed `{{`, stays literal text. Names are ASCII letters, digits, `_`, `.`, `-` and any
/// non-ASCII character, matched exactly (case-sensitive).
public struct Template: Sendable, Equatable {
    enum Segment: Sendable, Equatable {
        case text(String)
        case variable(name: String, fallback: String?)
    }

    /// The template text as written in the job.
    public let source: String
    let segments: [Segment]

    public init(_ source: String) {
        self.source = source
        self.segments = TemplateParser.parse(source)
    }

    /// True when the template has no placeholder (rendering returns `source` without work).
    public var isConstant: Bool { segments.allSatisfy { if case .text = $0 { true } else { false } } }

    /// The variable names used, in order (for tests and diagnostics).
    public var variableNames: [String] {
        segments.compactMap { if case .variable(let name, _) = $0 { name } else { nil } }
    }

    public func render(_ properties: [String: String]) -> String {
        switch segments.count {
        case 0: return ""
        case 1:
            if case .text(let text) = segments[0] { return text }
        default: break
        }
        var output = ""
        output.reserveCapacity(source.utf8.count + 16)
        for segment in segments {
            switch segment {
            case .text(let text): output += text
            case .variable(let name, let fallback):
                if let value = properties[name], !value.isEmpty {
                    output += value
                } else if let fallback {
                    output += fallback
                }
            }
        }
        return output
    }
}

private enum TemplateParser {
    static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")

    static func parse(_ source: String) -> [Template.Segment] {
        let bytes = Array(source.utf8)
        var segments: [Template.Segment] = []
        var literalStart = 0
        var index = 0
        func flushLiteral(upTo end: Int) {
            guard end > literalStart else { return }
            segments.append(.text(String(decoding: bytes[literalStart..<end], as: UTF8.self)))
        }
        while index + 1 < bytes.count {
            if bytes[index] == openBrace && bytes[index + 1] == openBrace,
               let (segment, end) = placeholder(bytes, from: index + 2) {
                flushLiteral(upTo: index)
                segments.append(segment)
                index = end
                literalStart = end
            } else {
                index += 1
            }
        }
        flushLiteral(upTo: bytes.count)
        return segments
    }

    /// Parses ` name [| default: "x"] }}` starting after `{{`; nil when it is not exactly that.
    static func placeholder(_ bytes: [UInt8], from start: Int) -> (Template.Segment, Int)? {
        var index = start
        func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
        }
        func consume(_ literal: String) -> Bool {
            let expected = Array(literal.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else { return false }
            index += expected.count
            return true
        }
        skipSpaces()
        let nameStart = index
        while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
        guard index > nameStart else { return nil }
        let name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
        skipSpaces()
        var fallback: String?
        if consume("|") {
            skipSpaces()
            guard consume("default") else { return nil }
            skipSpaces()
            guard consume(":") else { return nil }
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else { return nil }
            let quote = bytes[index]
            index += 1
            let valueStart = index
            while index < bytes.count, bytes[index] != quote { index += 1 }
            guard index < bytes.count else { return nil }
            fallback = String(decoding: bytes[valueStart..<index], as: UTF8.self)
            index += 1
            skipSpaces()
        }
        guard consume("}}") else { return nil }
        return (.variable(name: name, fallback: fallback), index)
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"), 0x80...0xFF: true
        default: false
        }
    }
}
