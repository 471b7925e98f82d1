import Foundation
import Testing
@testable import PushCore
import PushEncoding

@Suite("Job lint: unknown fields and template variables")
struct JobLintTests {
    static func unknown(_ path: [String], _ value: String, in base: String = JobFixtures.minimal) -> [String] {
        JobLint.unknownFields(in: JobFixtures.parse(String(decoding: JobFixtures.edit(path, value, in: base), as: UTF8.self)))
            .map(\.description)
    }

    @Test("an unknown member is reported by its path, with the field probably meant", arguments: [
        // A known mistake (the tables' aliases).
        (["content", "languages", "en", "message"], "\"x\"", "$.content.languages.en.message: unknown field (did you mean body?)"),
        (["recipients", "0", "deviceToken"], "\"x\"", "$.recipients[0].deviceToken: unknown field (did you mean token?)"),
        (["content", "languages", "en", "buttons"], "[]", "$.content.languages.en.buttons: unknown field (did you mean actions?)"),
        (["content", "languages", "en", "image"], "\"x\"", "$.content.languages.en.image: unknown field (did you mean imageURL?)"),
        (["ttl"], "60", "$.ttl: unknown field (did you mean ttlSeconds?)"),
        (["apns"], "{}", "$.apns: unknown field (did you mean ios?)"),
        (["recipients", "0", "locale"], "\"tr\"", "$.recipients[0].locale: unknown field (did you mean language?)"),
        // Case, `_` and `-` differences.
        (["content", "languages", "en", "imageUrl"], "\"x\"", "$.content.languages.en.imageUrl: unknown field (did you mean imageURL?)"),
        (["job_id"], "\"x\"", "$.job_id: unknown field (did you mean jobId?)"),
        (["ios", "thread-id"], "\"x\"", "$.ios.thread-id: unknown field (did you mean threadId?)"),
        (["ios", "content-available"], "true", "$.ios.content-available: unknown field (did you mean contentAvailable?)"),
        // Near spellings.
        (["content", "languages", "en", "tittle"], "\"x\"", "$.content.languages.en.tittle: unknown field (did you mean title?)"),
        (["content", "languages", "en", "bdoy"], "\"x\"", "$.content.languages.en.bdoy: unknown field (did you mean body?)"),
        (["recipients", "0", "platfrom"], "\"ios\"", "$.recipients[0].platfrom: unknown field (did you mean platform?)"),
        (["expiresat"], "\"x\"", "$.expiresat: unknown field (did you mean expiresAt?)"),
        // A field of a nested object, written one level too high.
        (["title"], "\"x\"", "$.title: unknown field (did you mean content.languages.<tag>.title?)"),
        (["recipients", "0", "endpoint"], "\"https://x\"", "$.recipients[0].endpoint: unknown field (did you mean subscription.endpoint?)"),
        (["content", "body"], "\"x\"", "$.content.body: unknown field (did you mean languages.<tag>.body?)"),
        // Nothing close.
        (["zzz"], "1", "$.zzz: unknown field"),
        (["data", "nested"], "\"x\"", nil),
        (["recipients", "0", "properties", "anything"], "\"x\"", nil),
        (["recipients", "0", "subscription"], #"{"endpoint":"https://x","expirationTime":null,"keys":{"p256dh":"a","auth":"b"}}"#, nil),
        (["recipients", "0", "subscription"], #"{"endpoint":"https://x","keys":{"p256":"a"}}"#,
         "$.recipients[0].subscription.keys.p256: unknown field (did you mean p256dh?)"),
        (["content", "languages", "en", "actions"], #"[{"id":"a","label":"A"}]"#,
         "$.content.languages.en.actions[0].label: unknown field (did you mean title?)"),
        (["ios", "badge"], #"{"mode":"set","count":1}"#, "$.ios.badge.count: unknown field (did you mean value?)"),
        (["ios", "badge"], "3", nil),
        (["data"], "\"not an object\"", nil),
    ] as [([String], String, String?)])
    func unknownField(path: [String], value: String, expected: String?) {
        #expect(Self.unknown(path, value) == (expected.map { [$0] } ?? []))
    }

    @Test("the docs/reference/job.md example and the minimal job have no unknown field")
    func knownJobsAreClean() {
        #expect(JobLint.unknownFields(in: JobFixtures.parse(SampleJobs.designExample)).isEmpty)
        #expect(JobLint.unknownFields(in: JobFixtures.parse(JobFixtures.minimal)).isEmpty)
    }

    @Test("the same unknown member in many recipients is one warning with a count")
    func groupedAcrossRecipients() {
        let recipient = #"{"subscriptionId":"s","platform":"ios","deviceToken":"x"}"#
        let base = String(decoding: JobFixtures.edit(["recipients"], "[" + Array(repeating: recipient, count: 40).joined(separator: ",") + "]"),
                          as: UTF8.self)
        let warnings = JobLint.unknownFields(in: JobFixtures.parse(base))
        #expect(warnings.count == 1)
        #expect(warnings.first?.path == "$.recipients[0].deviceToken")
        #expect(warnings.first?.moreCount == 39)
        #expect(warnings.first?.description == "$.recipients[0].deviceToken: unknown field (did you mean token?) (and 39 more: $.recipients[*].deviceToken)")
    }

    @Test("every table's aliases name one of its fields, and no alias is itself a field")
    func aliasesAreConsistent() {
        let schemas = [JobField.schema, ContentField.schema, LanguageField.schema, ActionField.schema, IOSField.schema,
                       BadgeField.schema, AndroidField.schema, WebField.schema, RecipientField.schema, SubscriptionField.schema,
                       SubscriptionKeysField.schema]
        for schema in schemas {
            let names = Set(schema.fields.map(\.name))
            for (alias, target) in schema.aliases {
                #expect(names.contains(target), "\(schema.name): \(alias) → \(target)")
                #expect(!names.contains(where: { $0.lowercased() == alias.lowercased() }), "\(schema.name): \(alias) is a field")
            }
        }
    }

    @Test("edit distance counts insertions, deletions, substitutions and adjacent swaps", arguments: [
        ("title", "title", 0), ("tittle", "title", 1), ("titel", "title", 1), ("tile", "title", 1), ("body", "bdoy", 1),
        ("", "abc", 3), ("kitten", "sitting", 3), ("ş", "s", 1),
    ])
    func editDistance(a: String, b: String, distance: Int) {
        #expect(JobLint.editDistance(a, b) == distance)
    }

    // MARK: template variables

    static func job(_ languages: String, recipients: [String]) throws -> FanOutJob {
        try JobDecoder.decode(Array(#"{"schemaVersion":1,"jobId":"j","appId":"a","campaignId":"c","content":{"defaultLanguage":"en","languages":{\#(languages)}},"recipients":[\#(recipients.joined(separator: ","))]}"#.utf8))
    }

    @Test("a variable with no value and no default is warned about once per job, with a count")
    func missingVariable() throws {
        let job = try Self.job(#""en":{"title":"Hi {{ name }}","body":"{{ name }}, {{ city | default: \"here\" }}"}"#, recipients: [
            #"{"subscriptionId":"1","platform":"ios","properties":{"name":"Ada"}}"#,
            #"{"subscriptionId":"2","platform":"ios"}"#,
            #"{"subscriptionId":"3","platform":"ios","properties":{"name":""}}"#,
        ])
        let warnings = JobLint.templateVariables(in: job)
        #expect(warnings.map(\.description) == [
            "$.content.languages.en.title: template variable name has no value and no default for 2 of 3 recipients (first: $.recipients[1]): it renders empty (also in $.content.languages.en.body)",
        ])
        #expect(warnings.first?.kind == .templateVariable)
    }

    @Test("the language each recipient gets decides which templates count, with the default language's fields as fallback")
    func followsLanguageChoice() throws {
        let job = try Self.job(#""en":{"title":"Hi {{ first | default: \"you\" }}","body":"B","actions":[{"id":"x","title":"Go {{ who }}"}]},"tr":{"title":"Merhaba {{ first }}"}"#, recipients: [
            #"{"subscriptionId":"1","platform":"ios","language":"en"}"#,
            #"{"subscriptionId":"2","platform":"ios","language":"tr-TR","properties":{"who":"x"}}"#,
        ])
        #expect(JobLint.templateVariables(in: job).map(\.description) == [
            "$.content.languages.en.actions[0].title: template variable who has no value and no default for 1 of 2 recipients (first: $.recipients[0]): it renders empty",
            "$.content.languages.tr.title: template variable first has no value and no default for 1 of 2 recipients (first: $.recipients[1]): it renders empty",
        ])
    }

    @Test("variables with values or defaults give no warning")
    func noWarning() throws {
        let job = try Self.job(#""en":{"title":"Hi {{ name | default: \"there\" }}","body":"{{ city }}"}"#, recipients: [
            #"{"subscriptionId":"1","platform":"ios","properties":{"city":"Rome","n":5}}"#,
        ])
        #expect(JobLint.templateVariables(in: job).isEmpty)
        #expect(JobLint.warnings(document: JobFixtures.parse(SampleJobs.designExample), job: try JobFixtures.decode(SampleJobs.designExample)).isEmpty)
    }
}

@Suite("Relative dates of the CLI's job input")
struct RelativeJobDatesTests {
    @Test("offsets", arguments: [
        ("now", 0 as Int?), ("+4h", 14_400), ("-10m", -600), ("+90s", 90), ("+2d", 172_800), ("+1h30m", 5_400), (" +5m ", 300),
        ("4h", nil), ("+", nil), ("+4", nil), ("+4x", nil), ("+h", nil), ("2026-01-01T00:00:00Z", nil), ("+99999999d", nil), ("+٣h", nil),
    ])
    func offsets(text: String, seconds: Int?) {
        #expect(RelativeJobDates.offsetSeconds(text) == seconds)
    }

    @Test("createdAt and expiresAt are replaced before decoding; other members and real dates are left alone")
    func resolution() throws {
        let now = JobFixtures.now
        var bytes = JobFixtures.edit(["expiresAt"], "\"+4h\"")
        bytes = JobFixtures.edit(["createdAt"], "\"now\"", in: String(decoding: bytes, as: UTF8.self))
        bytes = JobFixtures.edit(["notBefore"], "\"+1h\"", in: String(decoding: bytes, as: UTF8.self))
        let document = try JSONParser.parse(bytes)
        let (resolved, resolutions) = RelativeJobDates.resolve(document, now: now)
        #expect(resolutions.map(\.field) == ["createdAt", "expiresAt"])
        #expect(resolved["expiresAt"]?.stringValue == RFC3339Timestamp.format(now.addingTimeInterval(14_400)))
        #expect(resolved["notBefore"]?.stringValue == "+1h")  // not a relative field: the decoder refuses it
        guard case .failure(let failure) = JobInputCheck.check(bytes, now: now, strict: false) else {
            Issue.record("notBefore +1h accepted"); return
        }
        #expect(failure.lines == ["$.notBefore: not an RFC 3339 date-time"])
        let good = JobFixtures.edit(["expiresAt"], "\"+4h\"")
        guard case .success(let checked) = JobInputCheck.check(good, now: now, strict: true) else { Issue.record("refused"); return }
        #expect(checked.job.expiresAt == now.addingTimeInterval(14_400))
        #expect(checked.job.document["expiresAt"]?.stringValue == RFC3339Timestamp.format(now.addingTimeInterval(14_400)))
        let unchanged = RelativeJobDates.resolve(try JSONParser.parse(JobFixtures.edit(["expiresAt"], "\"2030-01-01T00:00:00Z\"")), now: now)
        #expect(unchanged.1.isEmpty)
    }

    @Test("a Live Activity's staleDate and dismissalDate may be relative too; its timestamp may not")
    func liveActivityResolution() throws {
        let now = JobFixtures.now
        let section = #"{"event": "end", "contentState": {}, "staleDate": "+2h", "dismissalDate": "+15m", "timestamp": "+1h"}"#
        let document = try JSONParser.parse(JobFixtures.edit(["ios"], #"{"sound": "default", "liveActivity": \#(section)}"#))
        let (resolved, resolutions) = RelativeJobDates.resolve(document, now: now)
        #expect(resolutions.map(\.field) == ["ios.liveActivity.staleDate", "ios.liveActivity.dismissalDate"])
        #expect(resolved["ios"]?["liveActivity"]?["dismissalDate"]?.stringValue == RFC3339Timestamp.format(now.addingTimeInterval(900)))
        #expect(resolved["ios"]?["sound"]?.stringValue == "default")
        #expect(resolved["ios"]?["liveActivity"]?["timestamp"]?.stringValue == "+1h")
    }
}
