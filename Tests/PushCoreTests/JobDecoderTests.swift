import Foundation
import Testing
@testable import PushCore
import PushEncoding

@Suite("Job decoding")
struct JobDecoderTests {
    @Test("the docs/reference/job.md example decodes every field")
    func designExample() throws {
        let job = try JobFixtures.decode(SampleJobs.designExample)
        #expect(job.schemaVersion == 1)
        #expect(job.jobID == "cmp_42:0007")
        #expect(job.appID == "app_demo")
        #expect(job.campaignID == "cmp_42")
        #expect(job.variant == "A")
        #expect(job.createdAt == RFC3339Timestamp.parse("2026-11-30T10:00:00Z"))
        #expect(job.expiresAt?.timeIntervalSince1970 == 1_796_047_200)
        #expect(job.priority == .high)
        #expect(job.ttlSeconds == 86400)
        #expect(job.collapseID == "sale")
        #expect(job.throttlePerMinute == 60000)
        #expect(job.attempt == 0)
        #expect(job.notBefore == nil)
        #expect(job.content.defaultLanguage == "en")
        #expect(job.content.languages.map(\.language) == ["en", "tr"])
        let english = try #require(job.content.languages.first)
        #expect(english.title == "Hi {{ first_name | default: \"there\" }}")
        #expect(english.subtitle == "Today only")
        #expect(english.url == "https://shop.example/sale")
        #expect(english.imageURL == "https://cdn.example/sale.jpg")
        #expect(english.actions == [NotificationAction(id: "buy", title: "Buy", url: "https://shop.example/cart"),
                                    NotificationAction(id: "later", title: "Later")])
        #expect(job.content.languages[1].actions == nil)
        #expect(job.content.languages[1].subtitle == nil)
        #expect(job.data == [KeyValue("screen", "sale"), KeyValue("promo", "SPRING20")])
        #expect(job.ios == IOSOptions(sound: "default", badge: .init(mode: .increase, value: 1), threadID: "sale",
                                      category: nil, interruptionLevel: "time-sensitive", relevanceScore: 0.8,
                                      contentAvailable: false, mutableContent: true))
        #expect(job.android == AndroidOptions(channelID: "promo", priority: 1, smallIcon: "ic_stat",
                                              largeIcon: "https://cdn.example/logo-192.png", accentColor: "FF2196F3",
                                              ledColor: "FF00FF00", visibility: 1, groupKey: "sale",
                                              groupMessage: "New offers", sound: "chime"))
        #expect(job.web == WebOptions(iconURL: "https://cdn.example/icon-192.png", badgeURL: "https://cdn.example/badge-72.png",
                                      requireInteraction: false, urgency: "normal", topic: "sale"))
        #expect(job.recipients.count == 3)
        let ios = job.recipients[0]
        #expect(ios.userID == "u1" && ios.subscriptionID == "s1" && ios.platform == .ios && ios.language == "tr")
        #expect(ios.properties == ["first_name": "Ayşe"])
        let web = job.recipients[2]
        #expect(web.platform == .web && web.browser == "chrome")
        #expect(web.subscription?.auth == "BTBZMqHH6r4Tts7J_aSIgg")
        #expect(web.subscription?.endpoint?.hasPrefix("https://fcm.googleapis.com/") == true)
    }

    @Test("whole-job rules fail with the path and reason", arguments: [
        // Required members and versions.
        (["schemaVersion"], nil, "$.schemaVersion", "required"),
        (["schemaVersion"], "2", "$.schemaVersion", "unsupported version 2"),
        (["schemaVersion"], "\"1\"", "$.schemaVersion", "expected an integer, got string"),
        (["jobId"], nil, "$.jobId", "required"),
        (["jobId"], "\"\"", "$.jobId", "must not be empty"),
        (["jobId"], "7", "$.jobId", "expected a string, got number"),
        (["appId"], nil, "$.appId", "required"),
        (["campaignId"], nil, "$.campaignId", "required"),
        (["campaignId"], "null", "$.campaignId", "required"),
        (["content"], nil, "$.content", "required"),
        (["content"], "[]", "$.content", "expected an object, got array"),
        (["content", "defaultLanguage"], nil, "$.content.defaultLanguage", "required"),
        (["content", "defaultLanguage"], "\"de\"", "$.content.defaultLanguage", "\"de\" is not in content.languages"),
        (["content", "languages"], nil, "$.content.languages", "required"),
        (["content", "languages", "fr"], "\"Bonjour\"", "$.content.languages.fr", "expected an object, got string"),
        (["content", "languages", "EN"], "{\"title\":\"x\"}", "$.content.languages.EN", "duplicate language tag"),
        (["recipients"], nil, "$.recipients", "required"),
        (["recipients"], "{}", "$.recipients", "expected an array, got object"),
        (["recipients", "0"], "\"u1\"", "$.recipients[0]", "expected an object, got string"),
        // appId.
        (["appId"], "\".\"", "$.appId", "must match [A-Za-z0-9._-]+"),
        (["appId"], "\"..\"", "$.appId", "must match"),
        (["appId"], "\"../etc\"", "$.appId", "must match"),
        (["appId"], "\"app demo\"", "$.appId", "must match"),
        (["appId"], "\"app/x\"", "$.appId", "must match"),
        (["appId"], "\"appİ\"", "$.appId", "must match"),
        // Actions.
        (["content", "languages", "en", "actions"],
         #"[{"id":"a","title":"A"},{"id":"b","title":"B"},{"id":"c","title":"C"},{"id":"d","title":"D"}]"#,
         "$.content.languages.en.actions", "more than 3 actions"),
        (["content", "languages", "en", "actions"], #"[{"id":"a","title":"A"},{"id":"a","title":"B"}]"#,
         "$.content.languages.en.actions[1].id", "duplicate action id \"a\""),
        (["content", "languages", "en", "actions"], #"[{"title":"A"}]"#, "$.content.languages.en.actions[0].id", "required"),
        (["content", "languages", "en", "actions"], #"[{"id":"a"}]"#, "$.content.languages.en.actions[0].title", "required"),
        (["content", "languages", "en", "actions"], #"["a"]"#, "$.content.languages.en.actions[0]", "expected an object"),
        (["content", "languages", "en", "actions"], #"{"id":"a"}"#, "$.content.languages.en.actions", "expected an array"),
        (["content", "languages", "en", "actions"], #"[{"id":"a","title":"A","url":5}]"#,
         "$.content.languages.en.actions[0].url", "expected a string, got number"),
        // Data.
        (["data", "promo"], "20", "$.data.promo", "data values must be strings, got number"),
        (["data", "flag"], "true", "$.data.flag", "data values must be strings, got boolean"),
        (["data", "nested"], "{}", "$.data.nested", "data values must be strings, got object"),
        (["data", "url"], "\"x\"", "$.data.url", "collides with a payload key"),
        (["data", "a:buy"], "\"x\"", "$.data[\"a:buy\"]", "collides with a payload key"),
        (["data", "aps"], "\"x\"", "$.data.aps", "collides with a payload key"),
        (["data", "custom"], "\"x\"", "$.data.custom", "collides with a payload key"),
        (["data", "on.msgId"], "\"x\"", "$.data[\"on.msgId\"]", "collides with a payload key"),
        (["data", "from"], "\"x\"", "$.data.from", "reserved by FCM"),
        (["data", "message_type"], "\"x\"", "$.data.message_type", "reserved by FCM"),
        (["data", "collapse_key"], "\"x\"", "$.data.collapse_key", "reserved by FCM"),
        (["data", "google.c.a"], "\"x\"", "$.data[\"google.c.a\"]", "reserved by FCM"),
        (["data", "gcm.n.e"], "\"x\"", "$.data[\"gcm.n.e\"]", "reserved by FCM"),
        (["data", ""], "\"x\"", "$.data[\"\"]", "empty key"),
        (["data"], "[]", "$.data", "expected an object, got array"),
        (["data", "big"], "\"" + String(repeating: "x", count: 2046) + "\"", "$.data", "2049 bytes, over 2048"),
        // collapseId and web topic.
        (["collapseId"], "\"" + String(repeating: "c", count: 65) + "\"", "$.collapseId", "longer than 64 bytes"),
        (["collapseId"], "\"" + String(repeating: "ş", count: 33) + "\"", "$.collapseId", "longer than 64 bytes"),
        (["web", "topic"], "\"" + String(repeating: "t", count: 33) + "\"", "$.web.topic", "1 to 32 characters"),
        (["web", "topic"], "\"\"", "$.web.topic", "1 to 32 characters"),
        (["web", "topic"], "\"sale now\"", "$.web.topic", "base64url alphabet"),
        (["web", "topic"], "\"sale+now\"", "$.web.topic", "base64url alphabet"),
        (["web", "topic"], "\"şale\"", "$.web.topic", "base64url alphabet"),
        (["web", "urgency"], "\"urgent\"", "$.web.urgency", "very-low, low, normal or high"),
        (["web", "requireInteraction"], "\"yes\"", "$.web.requireInteraction", "expected a boolean, got string"),
        // Text.
        (["content", "languages", "en"], "{\"url\":\"https://x.example\"}", "$.content.languages.en", "no text"),
        (["content", "languages", "en"], "{\"title\":\"\",\"body\":\"\"}", "$.content.languages.en", "no text"),
        // Dates and numbers.
        (["createdAt"], "\"yesterday\"", "$.createdAt", "not an RFC 3339 date-time"),
        (["expiresAt"], "\"2026-02-30T10:00:00Z\"", "$.expiresAt", "not an RFC 3339 date-time"),
        (["expiresAt"], "\"2026-11-30 10:00\"", "$.expiresAt", "not an RFC 3339 date-time"),
        (["expiresAt"], "1796047200", "$.expiresAt", "expected a string, got number"),
        (["notBefore"], "\"2026-11-30T25:00:00Z\"", "$.notBefore", "not an RFC 3339 date-time"),
        (["ttlSeconds"], "-1", "$.ttlSeconds", "between 0 and"),
        (["ttlSeconds"], "1.5", "$.ttlSeconds", "expected an integer, got 1.5"),
        (["ttlSeconds"], "\"60\"", "$.ttlSeconds", "expected an integer, got string"),
        (["ttlSeconds"], "1e300", "$.ttlSeconds", "expected an integer"),
        (["throttlePerMinute"], "0", "$.throttlePerMinute", "between 1 and"),
        (["attempt"], "-1", "$.attempt", "between 0 and"),
        (["priority"], "\"urgent\"", "$.priority", "must be \"high\" or \"normal\""),
        (["variant"], "[]", "$.variant", "expected a string, got array"),
        // ios / android.
        (["ios", "badge"], "{\"mode\":\"double\",\"value\":1}", "$.ios.badge.mode", "\"set\" or \"increase\""),
        (["ios", "badge"], "{\"mode\":\"set\"}", "$.ios.badge.value", "required"),
        (["ios", "badge"], "{\"mode\":\"set\",\"value\":-1}", "$.ios.badge.value", "must be ≥ 0"),
        (["ios", "badge"], "\"1\"", "$.ios.badge", "expected an object or a number"),
        (["ios", "relevanceScore"], "1.5", "$.ios.relevanceScore", "between 0 and 1"),
        (["ios", "interruptionLevel"], "\"loud\"", "$.ios.interruptionLevel", "passive, active"),
        (["ios", "locArgs"], "[\"a\", 1]", "$.ios.locArgs[1]", "expected a string, got number"),
        (["ios", "contentAvailable"], "1", "$.ios.contentAvailable", "expected a boolean"),
        (["android", "priority"], "3", "$.android.priority", "between -2 and 2"),
        (["android", "visibility"], "-2", "$.android.visibility", "between -1 and 1"),
        (["android", "channelId"], "5", "$.android.channelId", "expected a string"),
    ] as [([String], String?, String, String)])
    func wholeJobRules(path: [String], value: String?, expectedPath: String, reason: String) {
        do throws(JobValidationError) {
            let job = try JobDecoder.decode(JobFixtures.edit(path, value))
            Issue.record("decoded although invalid: \(job.jobID)")
        } catch {
            #expect(error.path == expectedPath)
            #expect(error.reason.contains(reason), "reason was: \(error.reason)")
            #expect(error.description == "\(error.path): \(error.reason)")
        }
    }

    @Test("jobs without text are valid with loc keys or contentAvailable", arguments: [
        #"{"locKey": "SALE_BODY", "locArgs": ["20"]}"#,
        #"{"titleLocKey": "SALE_TITLE"}"#,
        #"{"contentAvailable": true}"#,
    ])
    func textAlternatives(ios: String) throws {
        var bytes = JobFixtures.edit(["content", "languages", "en"], "{}")
        bytes = JobFixtures.edit(["ios"], ios, in: String(decoding: bytes, as: UTF8.self))
        #expect(throws: Never.self) { try JobDecoder.decode(bytes) }
    }

    @Test("valid edge values are accepted", arguments: [
        (["data", "big"], "\"" + String(repeating: "x", count: 2045) + "\""),
        (["collapseId"], "\"" + String(repeating: "c", count: 64) + "\""),
        (["collapseId"], "\"\""),
        (["web", "topic"], "\"" + String(repeating: "A", count: 31) + "_\""),
        (["appId"], "\"com.example-app_1\""),
        (["appId"], "\"...\""),
        (["ttlSeconds"], "0"),
        (["ttlSeconds"], "60.0"),
        (["ios", "badge"], "3"),
        (["ios", "category"], "null"),
        (["data", "Url"], "\"x\""),
        (["data", "googlex"], "\"x\""),
        (["content", "defaultLanguage"], "\"EN\""),
        (["content", "languages", "en", "subtitle"], "\"only\""),
        (["unknownField"], "{\"anything\": [1, 2, {\"x\": null}]}"),
        (["content", "unknown"], "42"),
        (["recipients"], "[]"),
        (["createdAt"], "\"2026-11-30T10:00:00.123+02:00\""),
        (["expiresAt"], "\"2028-02-29t23:59:60z\""),
    ] as [([String], String)])
    func acceptsEdges(path: [String], value: String) {
        #expect(throws: Never.self) { try JobDecoder.decode(JobFixtures.edit(path, value)) }
    }

    @Test("broken JSON is a whole-job error at $ with the byte offset")
    func brokenJSON() {
        #expect(throws: JobValidationError(path: "$", reason: "invalid JSON: unexpected end of input at byte 13")) {
            try JobDecoder.decode(Array("{\"jobId\": \"j\"".utf8))
        }
        #expect(throws: JobValidationError(path: "$", reason: "expected an object, got array")) {
            try JobDecoder.decode(Array("[]".utf8))
        }
        #expect(throws: JobValidationError.self) { try JobDecoder.decode(Array(JobFixtures.minimal.utf8), maxBytes: 100) }
    }

    @Test("an invalid job lists every problem at once, in document order")
    func everyProblemAtOnce() {
        var bytes = JobFixtures.edit(["jobId"], nil)
        for (path, value) in [(["priority"], "\"urgent\""), (["ttlSeconds"], "-5"), (["content", "languages", "en", "actions"],
                               #"[{"id":"a","title":"A"},{"id":"a"},5]"#), (["data", "url"], "\"x\""), (["data", "n"], "1"),
                              (["ios", "badge"], #"{"mode":"twice"}"#), (["web", "topic"], "\"a b\""), (["recipients", "0"], "7")] {
            bytes = JobFixtures.edit(path, value, in: String(decoding: bytes, as: UTF8.self))
        }
        do throws(JobValidationError) {
            _ = try JobDecoder.decode(bytes)
            Issue.record("decoded although invalid")
        } catch {
            #expect(error.problems.map(\.description) == [
                "$.jobId: required",
                "$.priority: must be \"high\" or \"normal\"",
                "$.ttlSeconds: must be between 0 and 2147483647",
                "$.content.languages.en.actions[1].id: duplicate action id \"a\"",
                "$.content.languages.en.actions[1].title: required",
                "$.content.languages.en.actions[2]: expected an object, got number",
                "$.data.url: key collides with a payload key (url, a:*, aps, custom, on.*)",
                "$.data.n: data values must be strings, got number",
                "$.ios.badge.mode: must be \"set\" or \"increase\"",
                "$.ios.badge.value: required",
                "$.web.topic: must use only the base64url alphabet [A-Za-z0-9_-]",
                "$.recipients[0]: expected an object, got number",
            ])
            #expect(error.path == "$.jobId" && error.reason == "required")
            #expect(error.description.hasPrefix("$.jobId: required; $.priority: must be"))
            #expect(error.lines.count == 12)
        }
    }

    @Test("an unsupported schemaVersion stops there: the rest is another format")
    func otherVersionStops() {
        #expect(throws: JobValidationError(path: "$.schemaVersion", reason: "unsupported version 2, expected 1")) {
            try JobDecoder.decode(JobFixtures.edit(["jobId"], "7", in: String(decoding: JobFixtures.edit(["schemaVersion"], "2"), as: UTF8.self)))
        }
    }

    @Test("a job with thousands of broken recipients keeps 50 problems and counts the rest")
    func boundedProblems() {
        let bytes = JobFixtures.edit(["recipients"], "[" + Array(repeating: "1", count: 3000).joined(separator: ",") + "]")
        do throws(JobValidationError) {
            _ = try JobDecoder.decode(bytes)
            Issue.record("decoded although invalid")
        } catch {
            #expect(error.problems.count == 50)
            #expect(error.omitted == 2950)
            #expect(error.description.hasSuffix("; and 2950 more"))
            #expect(error.lines.last == "… and 2950 more problems")
        }
    }

    @Test("recipient problems never fail the job")
    func lenientRecipients() throws {
        let recipients = """
        [{"subscriptionId": "s1", "platform": "blackberry", "token": 5},
         {"platform": "ios"},
         {"userId": 42, "subscriptionId": 7, "platform": "Web", "subscription": "nope", "tokenUpdatedAt": "soon",
          "properties": {"n": 3, "f": 1.5, "b": false, "s": "x", "o": {"a": 1}, "l": [1], "z": null}},
         {"subscriptionId": "s4", "platform": "android", "language": 12, "browser": [], "properties": "none"}]
        """
        let job = try JobDecoder.decode(JobFixtures.edit(["recipients"], recipients))
        #expect(job.recipients.count == 4)
        #expect(job.recipients[0].platform == nil && job.recipients[0].platformName == "blackberry" && job.recipients[0].token == nil)
        #expect(job.recipients[1].subscriptionID == "" && job.recipients[1].platform == .ios)
        let third = job.recipients[2]
        #expect(third.userID == "42" && third.subscriptionID == "7" && third.platform == .web && third.platformName == "Web")
        #expect(third.subscription == nil && third.tokenUpdatedAt == nil)
        #expect(third.properties == ["n": "3", "f": "1.5", "b": "false", "s": "x"])
        #expect(job.recipients[3].language == nil && job.recipients[3].browser == nil && job.recipients[3].properties.isEmpty)
    }

    @Test("retry members are decoded")
    func retryMembers() throws {
        var bytes = JobFixtures.edit(["attempt"], "2")
        bytes = JobFixtures.edit(["notBefore"], "\"2026-11-30T10:05:00Z\"", in: String(decoding: bytes, as: UTF8.self))
        let job = try JobDecoder.decode(bytes)
        #expect(job.attempt == 2)
        #expect(job.notBefore == RFC3339Timestamp.parse("2026-11-30T10:05:00Z"))
        let withUpdated = try JobDecoder.decode(JobFixtures.edit(["recipients", "0", "tokenUpdatedAt"], "\"2026-11-01T00:00:00Z\""))
        #expect(withUpdated.recipients[0].tokenUpdatedAt == RFC3339Timestamp.parse("2026-11-01T00:00:00Z"))
    }

    @Test("a retry job re-encodes with a subset of recipients and decodes again")
    func retryEncoding() throws {
        let job = try JobFixtures.decode(SampleJobs.designExample)
        let notBefore = try #require(RFC3339Timestamp.parse("2026-11-30T10:05:30Z"))
        let bytes = job.encoded(recipients: [job.recipients[2], job.recipients[0]], attempt: 1, notBefore: notBefore)
        let retry = try JobDecoder.decode(bytes)
        #expect(retry.recipients.map(\.subscriptionID) == ["s3", "s1"])
        #expect(retry.recipients[0] == job.recipients[2])
        #expect(retry.attempt == 1)
        #expect(retry.notBefore == notBefore)
        #expect(String(decoding: bytes, as: UTF8.self).contains("\"notBefore\":\"2026-11-30T10:05:30Z\""))
        #expect(retry.content == job.content && retry.data == job.data && retry.ios == job.ios)
        #expect(retry.android == job.android && retry.web == job.web && retry.expiresAt == job.expiresAt)
        // A second retry replaces attempt and notBefore instead of adding members.
        let again = try JobDecoder.decode(retry.encoded(recipients: retry.recipients, attempt: 2, notBefore: notBefore.addingTimeInterval(0.25)))
        #expect(again.attempt == 2)
        #expect(again.notBefore == notBefore.addingTimeInterval(0.25))
        #expect(again.document.objectValue?.keys.filter { $0 == "attempt" }.count == 1)
        // Batching: only recipients replaced.
        let batch = try JobDecoder.decode(job.encoded(recipients: [job.recipients[1]]))
        #expect(batch.attempt == 0 && batch.notBefore == nil && batch.recipients.count == 1)
    }

    @Test("a job decoded from bytes keeps each recipient's bytes, not its tree: same job, same document, same retry bytes")
    func recipientBytes() throws {
        // Whitespace, escapes, member order and unknown members as upstream may send them.
        let text = """
        {"schemaVersion": 1, "jobId": "j1", "appId": "app_demo", "campaignId": "c1",
         "recipients" : [ {"userId": "u1", "subscriptionId": "s1", "platform": "ios", "token": "\(JobFixtures.apnsToken)", "x-extra": [1, {"y": null}]} ,
           {"subscriptionId": "s\\u00e92", "platform": "android", "token": "\(JobFixtures.fcmToken)", "properties": {"n": 1.50, "name": "Ay\\u015fe"}},
           {"subscriptionId": "s3", "platform": "web", "subscription": {"endpoint": "https://fcm.googleapis.com/wp/x", "keys": {"p256dh": "\(JobFixtures.p256dh)", "auth": "\(JobFixtures.auth)"}}}
         ],
         "content": {"defaultLanguage": "en", "languages": {"en": {"title": "Hello", "body": "World"}}}, "data": {"k": "v"}}
        """
        let bytes = Array(text.utf8)
        let fromBytes = try JobDecoder.decode(bytes)
        let fromTree = try JobDecoder.decode(JSONParser.parse(bytes))
        #expect(fromBytes == fromTree)
        for recipient in fromBytes.recipients {
            guard case .bytes(let slice) = recipient.sourceStorage else { Issue.record("\(recipient.subscriptionID) keeps a tree"); continue }
            #expect(try JSONParser.parse(Array(slice)) == recipient.source)
        }
        #expect(fromBytes.recipients.map(\.subscriptionID) == ["s1", "sé2", "s3"])
        #expect(fromBytes.recipients[1].properties == ["n": "1.50", "name": "Ayşe"])
        // The job holds no recipient trees: its head has `recipients` empty, in place.
        #expect(fromBytes.head.objectValue?.keys == ["schemaVersion", "jobId", "appId", "campaignId", "recipients", "content", "data"])
        #expect(fromBytes.head["recipients"] == .array([]))
        // The document as received, and retry bytes equal to those of the tree path.
        #expect(fromBytes.document == (try JSONParser.parse(bytes)))
        let subset = [fromBytes.recipients[2], fromBytes.recipients[0]]
        #expect(fromBytes.encoded(recipients: subset, attempt: 1) == fromTree.encoded(recipients: [fromTree.recipients[2], fromTree.recipients[0]], attempt: 1))
        let retry = try JobDecoder.decode(fromBytes.encoded(recipients: subset, attempt: 1))
        #expect(retry.recipients == subset)
        #expect(retry.recipients[1].source?["x-extra"] == (try JSONParser.parse(#"[1, {"y": null}]"#)))
    }

    @Test("recipients built in code are encoded from their properties")
    func synthesizedRecipient() throws {
        let job = try JobFixtures.decode(JobFixtures.minimal)
        let recipient = Recipient(userID: "u9", subscriptionID: "s9", platformName: "web", language: "ko",
                                  browser: "firefox",
                                  subscription: .init(endpoint: "https://updates.push.services.mozilla.com/wpush/v2/x",
                                                      p256dh: JobFixtures.p256dh, auth: JobFixtures.auth),
                                  properties: ["b": "2", "a": "1"], tokenUpdatedAt: Date(timeIntervalSince1970: 1.5))
        let decoded = try JobDecoder.decode(job.encoded(recipients: [recipient], attempt: 1, notBefore: JobFixtures.now))
        var expected = recipient
        expected.source = decoded.recipients[0].source
        #expect(decoded.recipients[0] == expected)
    }
}

@Suite("RFC 3339 timestamps")
struct JobTimestampTests {
    @Test("valid timestamps parse to the right instant", arguments: [
        ("1970-01-01T00:00:00Z", 0.0),
        ("2026-11-30T10:00:00Z", 1_796_032_800),
        ("2026-11-30T12:00:00+02:00", 1_796_032_800),
        ("2026-11-30T05:30:00-04:30", 1_796_032_800),
        ("2026-11-30T10:00:00.5Z", 1_796_032_800.5),
        ("2000-02-29T00:00:00z", 951_782_400),
        ("1969-12-31T23:59:59Z", -1),
    ])
    func parses(text: String, seconds: Double) {
        #expect(RFC3339Timestamp.parse(text)?.timeIntervalSince1970 == seconds)
    }

    @Test("malformed timestamps are refused", arguments: [
        "", "2026-11-30", "2026-11-30T10:00:00", "2026-13-01T00:00:00Z", "2026-11-31T00:00:00Z",
        "2025-02-29T00:00:00Z", "2026-11-30T10:00:00.Z", "2026-11-30T10:00:00+2:00", "2026-11-30T10:00:00Zjunk",
        "2026-11-30X10:00:00Z", "２０２６-11-30T10:00:00Z",
    ])
    func refuses(text: String) {
        #expect(RFC3339Timestamp.parse(text) == nil)
    }

    @Test("formatting is UTC with optional milliseconds and round-trips")
    func formats() {
        let date = Date(timeIntervalSince1970: 1_796_032_801.234)
        #expect(RFC3339Timestamp.format(date) == "2026-11-30T10:00:01Z")
        #expect(RFC3339Timestamp.format(date, milliseconds: true) == "2026-11-30T10:00:01.234Z")
        #expect(RFC3339Timestamp.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
        for seconds in stride(from: -100_000_000.0, to: 4_000_000_000, by: 86_399.0 * 37) {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(RFC3339Timestamp.parse(RFC3339Timestamp.format(date)) == date)
        }
    }
}
