import Testing
@testable import PushEncoding

@Suite("JSONKey")
struct JSONKeyTests {
    /// One document written through every constant-key method, and through the String ones.
    private func document(_ keys: [JSONKey]) -> (constant: String, generic: String) {
        var constant = JSONWriter()
        var generic = JSONWriter()
        let names = keys.map(\.string)
        constant.beginObject(); generic.beginObject()
        constant.member(keys[0], "text \"quoted\"\n"); generic.member(names[0], "text \"quoted\"\n")
        constant.member(keys[1], -42); generic.member(names[1], -42)
        constant.member(keys[2], 0.25); generic.member(names[2], 0.25)
        constant.member(keys[3], true); generic.member(names[3], true)
        constant.member(keys[4], ifPresent: "x"); generic.member(names[4], ifPresent: "x")
        constant.member(keys[5], ifPresent: nil); generic.member(names[5], ifPresent: nil)
        constant.member(keys[6], orNull: nil); generic.member(names[6], orNull: nil)
        constant.member(keys[7], orNull: "y"); generic.member(names[7], orNull: "y")
        constant.member(keys[8], strings: ["a", "b\\"]); generic.member(names[8], strings: ["a", "b\\"])
        constant.member(keys[9], object: { $0.member(keys[0], 1) }); generic.member(names[9], object: { $0.member(names[0], 1) })
        constant.key(keys[10]); constant.beginArray(); constant.endArray()
        generic.key(names[10]); generic.beginArray(); generic.endArray()
        constant.endObject(); generic.endObject()
        return (constant.text, generic.text)
    }

    @Test("every member method writes what its String twin writes, commas included")
    func sameAsStringKeys() {
        let keys = [JSONKey("a"), JSONKey("bb"), JSONKey("c-c"), JSONKey("d_d"), JSONKey("e.e"), JSONKey("f"), JSONKey("gé"),
                    JSONKey("h:h"), JSONKey("i i"), JSONKey("j"), JSONKey("k/k")]
        let written = document(keys)
        #expect(written.constant == written.generic)
        #expect(written.constant.hasPrefix(#"{"a":"text \"quoted\"\n","bb":-42,"c-c":0.25,"#))
    }

    @Test("the debug check refuses a name with a quote, a backslash or a control character, and only those")
    func escapeCheck() {
        let refused: [StaticString] = ["q\"q", "b\\s", "n\nl", "t\tt", "\u{1}", "\"", "\\", "\u{0}", "x\u{1F}"]
        let accepted: [StaticString] = ["ok", "z", "a-b_c.d:e/f g", "é", "on.msgId", "\u{7F}", "😀"]
        #expect(refused.allSatisfy { !JSONKey.needsNoEscape($0) })
        #expect(accepted.allSatisfy { JSONKey.needsNoEscape($0) })
    }

    @Test("one-character names (a literal of one scalar) are written like longer ones")
    func oneCharacter() {
        let written = document([JSONKey("i"), JSONKey("c"), JSONKey("é"), JSONKey("😀"), JSONKey("u"), JSONKey("m"), JSONKey("a"),
                                JSONKey("b"), JSONKey("n"), JSONKey("l"), JSONKey("ø")])
        #expect(written.constant == written.generic)
        for key in [JSONKey("i"), JSONKey("é"), JSONKey("😀"), JSONKey("on.msgId")] {
            #expect(key.utf8Count == key.string.utf8.count)
        }
    }
}
