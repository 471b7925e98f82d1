import PushEncoding
/// The FCM audience a job is sent to instead of `recipients` (contract: docs/reference/job.md): one
/// HTTP v1 request with `message.topic` or `message.condition`, which FCM fans out to every
/// subscribed device. Built only from a valid `audience` (``FCMTopicName``, ``FCMCondition``).
public enum FCMAudience: Sendable, Equatable, Hashable {
    /// A topic name without the `/topics/` prefix (`news`).
    case topic(String)
    /// A condition over topics, as written in the job (`'a' in topics && !('b' in topics)`).
    case condition(String)

    /// The job's one result's `subscriptionId` and the msgId's subscription field: the topic name
    /// or the condition as written. Stable for every copy of the job, so the claim of one copy
    /// holds off the others (docs/reference/redis.md). A condition and a topic never look alike (a
    /// condition always holds a quote, a topic name never does).
    public var identity: String {
        switch self {
        case .topic(let name): name
        case .condition(let expression): expression
        }
    }

    /// `topic` or `condition`: the `message` member the request carries.
    public var kind: String {
        switch self {
        case .topic: "topic"
        case .condition: "condition"
        }
    }

    /// The job's one delivery "recipient", everywhere a recipient is expected (plans, claims,
    /// results, retry jobs): `subscriptionId` = ``identity``, platform `android`, no user, no
    /// token, no properties (a fan-out is not personalized).
    public var recipient: Recipient {
        Recipient(userID: nil, subscriptionID: identity, platformName: Platform.android.rawValue)
    }

}

extension FCMAudience {
}

/// Topic names (FCM HTTP v1 `Message.topic`).
public enum FCMTopicName {
    /// Longest name a device can subscribe to: the Android SDK refuses subscriptions outside
    /// `[a-zA-Z0-9-_.~%]{1,900}` (firebase-messaging `TopicOperation`), so a longer topic can
    /// have no subscriber.
    public static let maximumLength = 900
    /// The legacy prefix. The REST reference says it "should not be provided"; the Admin SDKs
    /// accept and strip it (Firebase's topic-messaging documentation). pushworker strips it too.
    public static let legacyPrefix = "/topics/"

    /// `name` without one leading `/topics/`.
    public static func withoutPrefix(_ name: String) -> String {
        name.hasPrefix(legacyPrefix) ? String(name.dropFirst(legacyPrefix.count)) : name
    }

    /// Why `name` (already without its prefix) is not a topic name, or nil when it is one:
    /// `[a-zA-Z0-9-_.~%]{1,900}` (the Admin SDKs' `^[a-zA-Z0-9-_.~%]+$`, [F3]).
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "empty topic name" }
        if name.utf8.count > maximumLength { return "topic name longer than \(maximumLength) characters" }
        if let bad = name.unicodeScalars.first(where: { !$0.isASCII || !isNameByte(UInt8($0.value)) }) {
            return "character \(JSONValue.string(String(bad)).jsonString()) not allowed in a topic name ([a-zA-Z0-9-_.~%])"
        }
        return nil
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"): true
        default: false
        }
    }
}

/// Topic conditions (FCM HTTP v1 `Message.condition`, Firebase: "Send messages to topics"):
///
/// ```
/// condition := term (("&&" | "||") term)*
/// term      := "!" term | "(" condition ")" | "'" topic-name "'" "in" "topics"
/// ```
///
/// Topic names are single-quoted (FCM's examples; no escapes exist, a name holds no quote),
/// whitespace between tokens is free, and at most ``maximumTopics`` topics appear ("You can
/// include up to five topics in your conditional expression"; counted as written, so a topic
/// named twice counts twice). FCM evaluates parentheses first, then left to right: `&&` does
/// not bind tighter than `||` (docs/payloads.md "FCM topics and conditions"). Only syntax is
/// checked; nothing is evaluated.
public enum FCMCondition {
    public static let maximumTopics = 5
    /// Deepest nesting of parentheses and `!` accepted (ours: keeps the recursive parser's
    /// stack small on hostile input; five topics never need more).
    public static let maximumDepth = 32

    /// The topics `expression` names, in order, or why it is not a valid condition.
    public static func topics(in expression: String) -> Result<[String], FCMConditionError> {
        var parser = Parser(Array(expression.unicodeScalars))
        do throws(FCMConditionError) {
            parser.skipSpace()
            guard !parser.isAtEnd else { throw FCMConditionError(reason: "empty condition") }
            try parser.condition(depth: 0)
            parser.skipSpace()
            if !parser.isAtEnd {
                throw parser.peek == ")" ? parser.error("unbalanced \")\"") : parser.error("expected && or ||")
            }
            if parser.topics.count > maximumTopics {
                throw FCMConditionError(reason: "names \(parser.topics.count) topics; FCM allows at most \(maximumTopics)")
            }
            return .success(parser.topics)
        } catch {
            return .failure(error)
        }
    }

    private struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0
        var topics: [String] = []

        init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

        var isAtEnd: Bool { index >= scalars.count }
        var peek: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

        /// Positions are 1-based characters (Unicode scalars) of the condition.
        func error(_ what: String) -> FCMConditionError {
            guard let found = peek else { return FCMConditionError(reason: "\(what) at the end") }
            return FCMConditionError(reason: "\(what) at character \(index + 1) (found \(JSONValue.string(String(found)).jsonString()))")
        }

        mutating func skipSpace() {
            while let scalar = peek, scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" { index += 1 }
        }

        mutating func condition(depth: Int) throws(FCMConditionError) {
            try term(depth: depth)
            while true {
                skipSpace()
                guard let first = peek, first == "&" || first == "|" else { return }
                guard index + 1 < scalars.count, scalars[index + 1] == first else {
                    throw error(first == "&" ? "expected && (a single & is not an operator)" : "expected || (a single | is not an operator)")
                }
                index += 2
                try term(depth: depth)
            }
        }

        mutating func term(depth: Int) throws(FCMConditionError) {
            guard depth < FCMCondition.maximumDepth else {
                throw FCMConditionError(reason: "nested deeper than \(FCMCondition.maximumDepth) levels")
            }
            skipSpace()
            switch peek {
            case "!"?:
                index += 1
                try term(depth: depth + 1)
            case "("?:
                index += 1
                try condition(depth: depth + 1)
                skipSpace()
                guard peek == ")" else { throw error(isAtEnd ? "unclosed \"(\"" : "expected \")\"") }
                index += 1
            case "'"?:
                try topicTest()
            case "\""?:
                throw error("topic names are single-quoted ('news' in topics)")
            default:
                throw error("expected 'topic' in topics, ! or (")
            }
        }

        /// `'name' in topics`.
        mutating func topicTest() throws(FCMConditionError) {
            let start = index
            index += 1
            var name = String.UnicodeScalarView()
            while let scalar = peek, scalar != "'" {
                name.append(scalar)
                index += 1
            }
            guard peek == "'" else {
                index = start
                throw error("unterminated topic name")
            }
            let topic = String(name)
            if let problem = FCMTopicName.problem(topic) {
                index = start
                throw error(problem)
            }
            index += 1
            guard word("in") else { throw error("expected in topics after '\(topic)'") }
            guard word("topics") else { throw error("expected topics after '\(topic)' in") }
            topics.append(topic)
        }

        /// Consumes `text` (after optional space) when it is a whole word there.
        mutating func word(_ text: String) -> Bool {
            skipSpace()
            let saved = index
            for expected in text.unicodeScalars {
                guard peek == expected else { index = saved; return false }
                index += 1
            }
            if let next = peek, next.properties.isAlphabetic || ("0"..."9").contains(next) || next == "_" {
                index = saved
                return false
            }
            return true
        }
    }
}

/// Why a condition is refused (a whole-job problem at `$.audience.condition`).
public struct FCMConditionError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}
