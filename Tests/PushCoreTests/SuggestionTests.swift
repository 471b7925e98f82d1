import PushCore
import Testing

/// "Did you mean …?" for commands, options and settings (docs/reference/cli.md).
@Suite("Suggestion: the closest known word within a typo's reach")
struct SuggestionTests {
    @Test("distance: insertions, deletions, substitutions and swaps of neighbours cost 1", arguments: [
        ("render", "render", 0), ("rendr", "render", 1), ("strcit", "strict", 1), ("chek", "check", 1), ("", "run", 3),
        ("run", "", 3), ("kitten", "sitting", 3), ("ca", "abc", 3), ("ş", "s", 1), ("REDIS_UR", "REDIS_URL", 1),
    ])
    func distance(a: String, b: String, expected: Int) {
        #expect(Suggestion.distance(a, b) == expected)
        #expect(Suggestion.distance(b, a) == expected)
    }

    @Test("closest: within 1 edit up to 4 characters, 2 up to 8, 3 beyond; case ignored; else nil", arguments: [
        ("rendr", "render"), ("RENDER", "render"), ("chek", "check"), ("prnt", "print"), ("inspcet", "inspect"),
        ("enqueu", "enqueue"), ("x", nil), ("abcd", nil), ("renderer", "render"), ("zzzzzzzz", nil), ("", nil),
        ("render", nil), // the word itself is not a suggestion
    ] as [(String, String?)])
    func closest(word: String, expected: String?) {
        let commands = ["run", "events", "render", "send", "enqueue", "topics", "msgid", "config", "inspect", "version", "check", "print"]
        #expect(Suggestion.closest(to: word, in: commands) == expected)
    }

    @Test("ties go to the first in sorted order, whatever the order given")
    func ties() {
        #expect(Suggestion.closest(to: "bat", in: ["cat", "bar"]) == "bar")
        #expect(Suggestion.closest(to: "bat", in: ["bar", "cat"]) == "bar")
    }

    @Test("variables: the shared prefix does not count", arguments: [
        ("PUSHWORKER_REDIS_UR", "PUSHWORKER_REDIS_URL"), ("PUSHWORKER_KAFKA_BROKER", "PUSHWORKER_KAFKA_BROKERS"),
        ("PUSHWORKER_TOPIK_JOBS", "PUSHWORKER_TOPIC_JOBS"), ("PUSHWORKER_FOO", nil), ("PUSHWORKER_", nil), ("REDIS_URL", nil),
    ] as [(String, String?)])
    func variables(name: String, expected: String?) {
        let known = ["PUSHWORKER_REDIS_URL", "PUSHWORKER_KAFKA_BROKERS", "PUSHWORKER_TOPIC_JOBS", "PUSHWORKER_LOG_LEVEL", "PUSHWORKER_LOG_FORMAT"]
        #expect(Suggestion.closestVariable(to: name, prefix: "PUSHWORKER_", in: known) == expected)
    }

    @Test("hostile input: long or odd words neither crash nor match")
    func hostile() {
        let long = String(repeating: "ab", count: 50_000)
        #expect(Suggestion.closest(to: long, in: ["ab", "run"]) == nil)
        #expect(Suggestion.distance(long, long) == 0)
        #expect(Suggestion.closest(to: "\u{0}\u{FFFF}🙂", in: ["run"]) == nil)
    }
}
