import Testing
import PushCore

@Suite("Language choice")
struct LanguageSelectionTests {
    static let tags = ["en", "pt", "pt-BR", "tr", "zh-Hant", "ko", "sr-Latn"]

    @Test("exact tag, then its base, then the default", arguments: [
        ("pt-BR", "pt-BR"),
        ("pt-PT", "pt"),
        ("pt", "pt"),
        ("PT-br", "pt-BR"),
        ("pt_BR", "pt-BR"),
        ("tr", "tr"),
        ("tr-TR", "tr"),
        ("TR", "tr"),
        ("ko-KR", "ko"),
        ("zh-Hant-TW", "zh-Hant"),
        ("zh-Hans-CN", "en"),
        ("sr-Latn-x-private", "sr-Latn"),
        ("de", "en"),
        ("de-DE", "en"),
        ("", "en"),
        ("-", "en"),
        ("İ", "en"),
        ("ptBR", "en"),
    ])
    func choice(requested: String, expected: String) {
        let selector = LanguageSelector(languages: Self.tags, defaultLanguage: "en")
        #expect(Self.tags[selector.index(for: requested)] == expected)
    }

    @Test("no language means the default, which is matched case-insensitively")
    func defaults() {
        let selector = LanguageSelector(languages: Self.tags, defaultLanguage: "TR")
        #expect(Self.tags[selector.index(for: nil)] == "tr")
        #expect(Self.tags[selector.index(for: "fr")] == "tr")
    }

    @Test("a base tag does not pick a regional variant")
    func baseDoesNotWiden() {
        let selector = LanguageSelector(languages: ["en", "pt-BR"], defaultLanguage: "en")
        #expect(selector.index(for: "pt") == 0)
        #expect(selector.index(for: "pt-BR") == 1)
    }
}
