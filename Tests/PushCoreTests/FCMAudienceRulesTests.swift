import Foundation
import Testing
@testable import PushCore
@testable import PushProviders

/// FCM topic names and conditions (docs/reference/job.md): the rules, row by row, and the condition
/// grammar checked exhaustively against an independent recognizer.
@Suite("FCM topic and condition rules")
struct FCMAudienceRulesTests {
    @Test("topic names: [a-zA-Z0-9-_.~%]{1,900}", arguments: [
        ("news", nil),
        ("a", nil),
        ("Breaking-News_2026.v1~%41", nil),
        (String(repeating: "x", count: 900), nil),
        ("", "empty topic name"),
        (String(repeating: "x", count: 901), "topic name longer than 900 characters"),
        ("news!", #"character "!" not allowed in a topic name ([a-zA-Z0-9-_.~%])"#),
        ("two words", #"character " " not allowed in a topic name ([a-zA-Z0-9-_.~%])"#),
        ("news/sport", #"character "/" not allowed in a topic name ([a-zA-Z0-9-_.~%])"#),
        ("'news'", #"character "'" not allowed in a topic name ([a-zA-Z0-9-_.~%])"#),
        ("haber-ğ", #"character "ğ" not allowed in a topic name ([a-zA-Z0-9-_.~%])"#),
    ] as [(String, String?)])
    func topicNames(name: String, problem: String?) {
        #expect(FCMTopicName.problem(name) == problem)
    }

    @Test("one leading /topics/ is dropped, no more")
    func topicPrefix() {
        #expect(FCMTopicName.withoutPrefix("/topics/news") == "news")
        #expect(FCMTopicName.withoutPrefix("news") == "news")
        #expect(FCMTopicName.withoutPrefix("/topics/") == "")
        #expect(FCMTopicName.withoutPrefix("/topics//topics/news") == "/topics/news")
        #expect(FCMTopicName.withoutPrefix("topics/news") == "topics/news")
    }

    @Test("valid conditions and the topics they name", arguments: [
        ("'a' in topics", ["a"]),
        ("'dogs' in topics || 'cats' in topics", ["dogs", "cats"]),
        ("'TopicA' in topics && ('TopicB' in topics || 'TopicC' in topics)", ["TopicA", "TopicB", "TopicC"]),
        ("!('a' in topics)", ["a"]),
        ("!'a' in topics && !!'b' in topics", ["a", "b"]),
        ("((('a' in topics)))", ["a"]),
        ("'a'in topics&&'b'in topics", ["a", "b"]),
        ("  'a'   in\ttopics\n||\r\n'b' in topics  ", ["a", "b"]),
        ("'a' in topics && 'a' in topics", ["a", "a"]),
        ("'a' in topics && 'b' in topics && 'c' in topics && 'd' in topics && 'e' in topics", ["a", "b", "c", "d", "e"]),
        ("'x.y~z%20_-1' in topics", ["x.y~z%20_-1"]),
    ])
    func validConditions(condition: String, topics: [String]) {
        #expect(FCMCondition.topics(in: condition) == .success(topics))
    }

    @Test("invalid conditions, each with its reason", arguments: [
        ("", "empty condition"),
        ("   ", "empty condition"),
        ("'a'", "expected in topics after 'a' at the end"),
        ("'a' in", "expected topics after 'a' in at the end"),
        ("'a' in topic", #"expected topics after 'a' in at character 8 (found "t")"#),
        ("'a' in topicsX", #"expected topics after 'a' in at character 8 (found "t")"#),
        ("'a' IN topics", #"expected in topics after 'a' at character 5 (found "I")"#),
        ("'a' in topics & 'b' in topics", #"expected && (a single & is not an operator) at character 15 (found "&")"#),
        ("'a' in topics | 'b' in topics", #"expected || (a single | is not an operator) at character 15 (found "|")"#),
        ("'a' in topics &&", "expected 'topic' in topics, ! or ( at the end"),
        ("&& 'a' in topics", #"expected 'topic' in topics, ! or ( at character 1 (found "&")"#),
        ("'a' in topics && && 'b' in topics", #"expected 'topic' in topics, ! or ( at character 18 (found "&")"#),
        ("'a' in topics 'b' in topics", #"expected && or || at character 15 (found "'")"#),
        ("'a' in topics AND 'b' in topics", #"expected && or || at character 15 (found "A")"#),
        ("('a' in topics", #"unclosed "(" at the end"#),
        ("('a' in topics 'b'", #"expected ")" at character 16 (found "'")"#),
        ("'a' in topics)", #"unbalanced ")" at character 14 (found ")")"#),
        ("()", #"expected 'topic' in topics, ! or ( at character 2 (found ")")"#),
        ("!", "expected 'topic' in topics, ! or ( at the end"),
        ("\"a\" in topics", #"topic names are single-quoted ('news' in topics) at character 1 (found "\"")"#),
        ("'a b' in topics", #"character " " not allowed in a topic name ([a-zA-Z0-9-_.~%]) at character 1 (found "'")"#),
        ("'' in topics", #"empty topic name at character 1 (found "'")"#),
        ("'a in topics", #"unterminated topic name at character 1 (found "'")"#),
        ("a in topics", #"expected 'topic' in topics, ! or ( at character 1 (found "a")"#),
        ("'a' in topics && 'b' in topics && 'c' in topics && 'd' in topics && 'e' in topics || 'f' in topics",
         "names 6 topics; FCM allows at most 5"),
        ("'a' in topics || 'a' in topics || 'a' in topics || 'a' in topics || 'a' in topics || 'a' in topics",
         "names 6 topics; FCM allows at most 5"),
        (String(repeating: "(", count: 40) + "'a' in topics" + String(repeating: ")", count: 40), "nested deeper than 32 levels"),
        (String(repeating: "!", count: 40) + "'a' in topics", "nested deeper than 32 levels"),
    ])
    func invalidConditions(condition: String, reason: String) {
        #expect(FCMCondition.topics(in: condition) == .failure(FCMConditionError(reason: reason)))
    }

    @Test("nesting up to the limit is accepted")
    func deepestNesting() {
        let condition = String(repeating: "(", count: FCMCondition.maximumDepth - 1) + "'a' in topics"
            + String(repeating: ")", count: FCMCondition.maximumDepth - 1)
        #expect(FCMCondition.topics(in: condition) == .success(["a"]))
    }

    // MARK: - Exhaustive: every token sequence up to 6 tokens

    /// The condition's tokens: a topic test, the two operators, `!`, parentheses.
    enum Token: CaseIterable {
        case topic, and, or, not, open, close

        var text: String {
            switch self {
            case .topic: "'t' in topics"
            case .and: "&&"
            case .or: "||"
            case .not: "!"
            case .open: "("
            case .close: ")"
            }
        }
    }

    /// An independent recognizer of the same language, by dynamic programming over the
    /// ambiguous grammar `E := T | !E | (E) | E op E`.
    static func isCondition(_ tokens: [Token]) -> Bool {
        let count = tokens.count
        guard count > 0 else { return false }
        var table = [[Bool]](repeating: [Bool](repeating: false, count: count + 1), count: count + 1)
        for length in 1...count {
            for start in 0...(count - length) {
                let end = start + length  // exclusive
                var isE = false
                if length == 1 { isE = tokens[start] == .topic }
                if !isE, tokens[start] == .not, length > 1 { isE = table[start + 1][end] }
                if !isE, length > 2, tokens[start] == .open, tokens[end - 1] == .close { isE = table[start + 1][end - 1] }
                if !isE, length > 2 {
                    for split in (start + 1)..<(end - 1) where tokens[split] == .and || tokens[split] == .or {
                        if table[start][split] && table[split + 1][end] { isE = true; break }
                    }
                }
                table[start][end] = isE
            }
        }
        return table[0][count]
    }

    @Test("every sequence of up to 6 tokens is accepted exactly when the reference grammar accepts it")
    func exhaustiveGrammar() {
        var sequences: [[Token]] = [[]]
        var checked = 0, accepted = 0
        for _ in 1...6 {
            sequences = sequences.flatMap { prefix in Token.allCases.map { prefix + [$0] } }
            for tokens in sequences {
                // Spacing varies by position (none, a space, a tab and a space) so adjacency is covered too.
                var text = ""
                for (position, token) in tokens.enumerated() {
                    if position > 0 { text += ["", " ", "\t "][(position + tokens.count) % 3] }
                    text += token.text
                }
                let expected = Self.isCondition(tokens)
                let result = FCMCondition.topics(in: text)
                let isAccepted = if case .success = result { true } else { false }
                if isAccepted != expected {
                    Issue.record("\(text): parser says \(isAccepted), grammar says \(expected)")
                    return
                }
                if case .success(let topics) = result {
                    accepted += 1
                    #expect(topics.count == tokens.filter { $0 == .topic }.count)
                }
                checked += 1
            }
        }
        #expect(checked == (1...6).reduce(0) { $0 + Int(pow(6.0, Double($1))) })
        #expect(accepted > 50)   // 80 of the 55,986 sequences are conditions
    }

    // MARK: - Outcomes

    @Test("FCM answers for an audience: token verdicts become rejected, the rest as for a token", arguments: [
        (ProviderOutcome.sent(providerMessageID: "projects/p/messages/1"), ProviderOutcome.sent(providerMessageID: "projects/p/messages/1")),
        (.invalidToken(reason: "UNREGISTERED", invalidSinceMs: 5), .rejected(reason: "UNREGISTERED")),
        (.invalidToken(reason: nil, invalidSinceMs: nil), .rejected(reason: "UNREGISTERED")),
        (.rejected(reason: "INVALID_ARGUMENT"), .rejected(reason: "INVALID_ARGUMENT")),
        (.retry(reason: "QUOTA_EXCEEDED", retryAfterSeconds: 30, scope: .provider),
         .retry(reason: "QUOTA_EXCEEDED", retryAfterSeconds: 30, scope: .provider)),
        (.retry(reason: "timeout", retryAfterSeconds: nil, scope: .recipient), .retry(reason: "timeout", retryAfterSeconds: nil, scope: .recipient)),
        (.authExpired(reason: "UNAUTHENTICATED"), .authExpired(reason: "UNAUTHENTICATED")),
    ])
    func outcomes(answer: ProviderOutcome, expected: ProviderOutcome) {
        #expect(FCMAudience.outcome(answer) == expected)
    }

    @Test("an audience is not retried after an unanswered request (FCM may have fanned it out), only after a definite refusal", arguments: [
        (ProviderOutcome.retry(reason: "timeout", retryAfterSeconds: nil, scope: .recipient), true),
        (.retry(reason: "protocol_error", retryAfterSeconds: nil, scope: .recipient), true),
        (.retry(reason: "transport_error", retryAfterSeconds: nil, scope: .recipient), true),
        (.retry(reason: "shutdown", retryAfterSeconds: nil, scope: .recipient), true),
        (.retry(reason: "connect_error", retryAfterSeconds: nil, scope: .provider), false),
        (.retry(reason: "tls_error", retryAfterSeconds: nil, scope: .provider), false),
        (.retry(reason: "QUOTA_EXCEEDED", retryAfterSeconds: 30, scope: .provider), false),
        (.retry(reason: "UNAVAILABLE", retryAfterSeconds: nil, scope: .provider), false),
        (.sent(providerMessageID: "x"), false),
        (.authExpired(reason: "UNAUTHENTICATED"), false),
    ])
    func unanswered(outcome: ProviderOutcome, mayHaveBeenAccepted: Bool) {
        #expect(FCMAudience.mayHaveBeenAccepted(outcome) == mayHaveBeenAccepted)
        #expect(Set(["timeout", "protocol_error", "transport_error", "shutdown"]) == FCMAudience.unansweredReasons)
    }

    @Test("FCM's 404 UNREGISTERED for a topic send is rejected, never a dead token")
    func unregisteredTopic() {
        let body = Array(#"{"error":{"code":404,"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#.utf8)
        let answer = FCMResponseClassifier.classify(status: 404, header: { _ in nil }, body: body, nowUnix: 1_800_000_000)
        #expect(FCMAudience.outcome(answer) == .rejected(reason: "UNREGISTERED"))
    }

    @Test("an audience's identity, kind and recipient")
    func identity() {
        let topic = FCMAudience.topic("news")
        #expect(topic.identity == "news" && topic.kind == "topic" && topic.messageTarget == .topic("news"))
        let condition = FCMAudience.condition("'a' in topics && 'b' in topics")
        #expect(condition.identity == "'a' in topics && 'b' in topics" && condition.kind == "condition")
        let recipient = condition.recipient
        #expect(recipient.subscriptionID == "'a' in topics && 'b' in topics")
        #expect(recipient.platform == .android && recipient.userID == nil && recipient.token == nil && recipient.properties.isEmpty)
    }
}
