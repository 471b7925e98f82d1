import PushCore
import Testing

/// `PUSHWORKER_CAPS` and the job's `capCategory` (docs/caps.md).
@Suite("Frequency caps: parsing")
struct FrequencyCapsTests {
    @Test("several caps per category, every unit; the canonical text sorts them")
    func parses() throws {
        let caps = try FrequencyCaps(parsing: " marketing=3/1d, marketing=1/1h ,news.v2=10/90s,promo_x-1=5/15m")
        #expect(caps.rules(for: "marketing") == [CapRule(count: 1, windowMs: 3_600_000), CapRule(count: 3, windowMs: 86_400_000)])
        #expect(caps.rules(for: "news.v2") == [CapRule(count: 10, windowMs: 90_000)])
        #expect(caps.rules(for: "promo_x-1") == [CapRule(count: 5, windowMs: 900_000)])
        #expect(caps.rules(for: "other") == nil && caps.rules(for: nil) == nil)
        #expect(caps.text == "marketing=1/1h,marketing=3/1d,news.v2=10/90s,promo_x-1=5/15m")
        #expect(try FrequencyCaps(parsing: caps.text) == caps)
        #expect(try FrequencyCaps(parsing: "").isEmpty && FrequencyCaps(parsing: "  ").isEmpty)
        #expect(try FrequencyCaps(parsing: "a=1/1d,a=1/1d").rules(for: "a")?.count == 1, "a repeated cap counts once")
        #expect(FrequencyCaps.scriptArgument([CapRule(count: 1, windowMs: 3_600_000), CapRule(count: 3, windowMs: 86_400_000)]) == "1:3600000,3:86400000")
    }

    @Test("a bad item is named with why", arguments: [
        ("marketing", "expected category=count/window"),
        ("marketing=3", "expected count/window"),
        ("=3/1d", "the category must match"),
        ("mar keting=3/1d", "the category must match"),
        (String(repeating: "c", count: 65) + "=3/1d", "the category must match"),
        ("m=0/1d", "the count must be"),
        ("m=-1/1d", "the count must be"),
        ("m=x/1d", "the count must be"),
        ("m=1000001/1d", "the count must be"),
        ("m=3/1w", "the window must be"),
        ("m=3/d", "the window must be"),
        ("m=3/0h", "the window must be"),
        ("m=3/1.5h", "the window must be"),
        ("m=3/367d", "the window must be"),
        ("m=3/99999999999999999d", "the window must be"),
        ("m=3/1d,", "an empty item"),
        ("m=3/1d,,n=1/1h", "an empty item"),
    ])
    func refuses(text: String, why: String) {
        #expect(throws: FrequencyCaps.ParseError.self) { try FrequencyCaps(parsing: text) }
        do { _ = try FrequencyCaps(parsing: text) } catch { #expect(error.description.contains(why), "\(error)") }
    }

    @Test("capCategory is decoded, checked and kept in a retry job")
    func jobField() throws {
        let head = #"{"schemaVersion":1,"jobId":"j","appId":"a","campaignId":"c","content":{"defaultLanguage":"en","languages":{"en":{"title":"t"}}},"recipients":[{"subscriptionId":"s","platform":"ios","token":"t"}]"#
        let job = try JobDecoder.decode(Array((head + #","capCategory":"marketing"}"#).utf8))
        #expect(job.capCategory == "marketing")
        #expect(try JobDecoder.decode(Array((head + "}").utf8)).capCategory == nil)
        let retry = try JobDecoder.decode(job.encoded(recipients: job.recipients, attempt: 1, notBefore: nil))
        #expect(retry.capCategory == "marketing")
        for bad in [#""mark eting""#, #""""#, "3", "\"" + String(repeating: "x", count: 65) + "\""] {
            #expect(throws: JobValidationError.self) { try JobDecoder.decode(Array((head + #","capCategory":"# + bad + "}").utf8)) }
        }
    }
}
