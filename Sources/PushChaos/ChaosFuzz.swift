import Foundation
import PushCore
import PushKafkaMock
import PushSandbox
import PushWorker
import PushEvents
import PushEncoding
import PushDevTools

/// Seeded-random fuzzing of `JobDecoder.decode` → `JobPlanner.plan` (→ `PayloadBuilder`) over
/// mutated valid jobs, for a bounded time. Invariants: no crash; every recipient of a decoded
/// job is planned; every built request body is valid UTF-8 JSON within 4096 bytes and has a
/// msgId. A crash writes the input to `fuzz-crash-<seed>.json` (signal handler) before dying.
public enum ChaosFuzz {
    /// Statistics of one run.
    public struct Stats: Sendable {
        public var iterations = 0
        public var decoded = 0
        public var planned = 0
        public var ready = 0
        public var violations: [String] = []
    }

    static let maxInput = 256 << 10

    static func run(_ options: ChaosOptions, _ report: inout DrillReport) {
        let crashFile = FileManager.default.currentDirectoryPath + "/fuzz-crash-\(options.seed).json"
        CrashCapture.install(path: crashFile)
        let stats = run(seconds: options.fuzzSeconds, seed: options.seed)
        CrashCapture.uninstall()
        report.figure("iterations (decoded / planned recipients / requests built)", "\(stats.iterations) (\(stats.decoded) / \(stats.planned) / \(stats.ready))")
        report.figure("seed, seconds", "\(options.seed), \(Int(options.fuzzSeconds))")
        report.check("no crash", "\(stats.iterations) inputs", stats.iterations > 0)
        report.check("invariants hold (all planned, ≤ 4096 B, UTF-8 JSON, msgId)", stats.violations.first ?? "0 violations", stats.violations.isEmpty)
    }

    /// Runs for `seconds` from `seed`; deterministic for a given number of iterations.
    public static func run(seconds: Double, seed: UInt64, maxIterations: Int = .max) -> Stats {
        var generator = SplitMix64(seed: seed)
        let corpus = Self.corpus()
        let keyring = (try? MsgIDKeyring(parsing: "fuzz:" + Data((0..<32).map { UInt8($0) }).base64EncodedString()))
        let planner = keyring.map { JobPlanner(keyring: $0, webPushPolicy: WebPushPolicy(extraAllowedHosts: ["127.0.0.1"])) }
        let profile = AppProfile(apns: .init(topic: "com.example.fuzz", endpoint: "https://127.0.0.1:1"),
                                 fcm: .init(projectID: "fuzz", endpoint: "https://127.0.0.1:1"), hasWebPush: true)
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        var stats = Stats()
        let deadline = Date().addingTimeInterval(seconds)
        while stats.iterations < maxIterations && (stats.iterations % 64 != 0 || Date() < deadline) {
            let input = mutate(corpus[Int(generator.next() % UInt64(corpus.count))], corpus: corpus, &generator)
            stats.iterations += 1
            CrashCapture.remember(input)
            guard let job = try? JobDecoder.decode(input) else { continue }
            stats.decoded += 1
            guard let planner else { continue }
            let plans = planner.plan(job, profile: profile, now: now)
            stats.planned += plans.count
            let expected = job.plannedCount
            if plans.count != expected {
                stats.violations.append("planned \(plans.count) of \(expected) recipients")
            }
            for plan in plans {
                guard case .ready(let request) = plan.state else { continue }
                stats.ready += 1
                if let problem = violation(request, plan) {
                    if stats.violations.count < 20 { stats.violations.append(problem) }
                }
            }
        }
        return stats
    }

    /// What is wrong with a built request, or nil.
    static func violation(_ request: ProviderRequest, _ plan: PlannedRecipient) -> String? {
        if plan.msgID == nil { return "\(request.platform): ready without msgId" }
        if request.body.count > 4096 { return "\(request.platform): body \(request.body.count) bytes > 4096" }
        if String(validating: request.body, as: UTF8.self) == nil { return "\(request.platform): body is not valid UTF-8" }
        if (try? JSONParser.parse(request.body)) == nil { return "\(request.platform): body is not JSON" }
        for header in request.headers where header.value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) {
            return "\(request.platform): header \(header.key) holds CR/LF/NUL"
        }
        return nil
    }

    /// Valid jobs that cover every platform, templates, actions, truncation and loc keys.
    static func corpus() -> [[UInt8]] {
        let expires = Date(timeIntervalSince1970: 1_790_000_000 + 7200)
        let web = #"{"endpoint":"https://127.0.0.1/wp/sub1","keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}"#
        let recipients = [
            #"{"userId":"u1","subscriptionId":"s1","platform":"ios","token":"\#(ChaosCampaign.apnsToken(1))","language":"tr","properties":{"name":"Ayşe"}}"#,
            #"{"userId":"u2","subscriptionId":"s2","platform":"android","token":"\#(ChaosCampaign.fcmToken(2))","language":"pt-BR"}"#,
            #"{"userId":"u3","subscriptionId":"s3","platform":"web","browser":"chrome","subscription":\#(web)}"#,
            #"{"userId":"u4","subscriptionId":"s4","platform":"web","browser":"firefox","subscription":\#(web)}"#,
        ]
        let long = String(repeating: "Ünïcödé 👩‍👩‍👧‍👦 e\u{301} ", count: 120)
        let base = ChaosCampaign.job(id: "fuzz:1", recipients: recipients)
            .replacingOccurrences(of: #""expiresAt":"[^"]*""#, with: #""expiresAt":"\#(RFC3339Timestamp.format(expires))""#, options: .regularExpression)
        let longJob = base.replacingOccurrences(of: "Chaos drill", with: long)
        let silent = #"{"schemaVersion":1,"jobId":"fuzz:2","appId":"app_fuzz","campaignId":"c","expiresAt":"\#(RFC3339Timestamp.format(expires))","content":{"defaultLanguage":"en","languages":{"en":{}}},"ios":{"contentAvailable":true},"android":{},"web":{},"recipients":[\#(recipients.joined(separator: ","))]}"#
        let loc = #"{"schemaVersion":1,"jobId":"fuzz:3","appId":"app_fuzz","campaignId":"c","expiresAt":"\#(RFC3339Timestamp.format(expires))","ttlSeconds":60,"priority":"normal","content":{"defaultLanguage":"en","languages":{"en":{"title":"t"}}},"ios":{"locKey":"K","locArgs":["a","b"],"titleLocKey":"T","badge":{"mode":"set","value":3},"sound":"s"},"android":{"channelId":"c","priority":2},"web":{"topic":"abc","urgency":"low","requireInteraction":true},"data":{"k":"v"},"recipients":[\#(recipients.joined(separator: ","))]}"#
        return [base, longJob, silent, loc, SampleJobs.designExample(expiresAt: expires)].map { Array($0.utf8) }
    }

    static let tokens: [String] = [
        "\"", "\\", "\\u0000", "\\ud800", "\\udc00\\ud800", "{", "}", "[", "]", ",", ":", "null", "true", "-0", "1e309", "-1",
        "9223372036854775808", "0.0000001", "\"\"", "{{ name }}", "{{", "}}", "{{ name | default: \"x\" }}", "👩‍👩‍👧‍👦", "e\u{301}",
        "\u{202E}", "\u{FEFF}", String(repeating: "x", count: 5000), String(repeating: "🎉", count: 1500), String(repeating: "ğ", count: 3000),
        #""title":"#, #""body":"#, #""data":{"#, #""actions":[{"id":"a","title":"b"}]"#, #""platform":"web""#, #""platform":"ios""#,
        #""language":"zh-Hant-TW""#, #""tokenUpdatedAt":"2020-01-01T00:00:00Z""#, #""attempt":3"#, #""notBefore":"2030-01-01T00:00:00Z""#,
    ]

    static func mutate(_ seed: [UInt8], corpus: [[UInt8]], _ generator: inout SplitMix64) -> [UInt8] {
        var bytes = seed
        let rounds = 1 + Int(generator.next() % 4)
        for _ in 0..<rounds {
            let position = bytes.isEmpty ? 0 : Int(generator.next() % UInt64(bytes.count))
            switch generator.next() % 9 {
            case 0 where !bytes.isEmpty:
                bytes[position] ^= UInt8(1 << (generator.next() % 8))
            case 1 where !bytes.isEmpty:
                bytes[position] = UInt8(truncatingIfNeeded: generator.next())
            case 2:
                let count = Int(generator.next() % 8) + 1
                bytes.insert(contentsOf: (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }, at: position)
            case 3 where !bytes.isEmpty:
                let count = min(bytes.count - position, Int(generator.next() % 64) + 1)
                bytes.removeSubrange(position..<(position + count))
            case 4 where !bytes.isEmpty:
                let count = min(bytes.count - position, Int(generator.next() % 256) + 1)
                bytes.insert(contentsOf: bytes[position..<(position + count)], at: position)
            case 5:
                let other = corpus[Int(generator.next() % UInt64(corpus.count))]
                let start = Int(generator.next() % UInt64(other.count))
                let count = min(other.count - start, Int(generator.next() % 512) + 1)
                bytes.insert(contentsOf: other[start..<(start + count)], at: position)
            case 6, 7:
                // Replace the inside of a string literal (keeps the JSON valid more often).
                if let quote = bytes[position...].firstIndex(of: 0x22), let end = bytes[(quote + 1)...].firstIndex(of: 0x22) {
                    let token = tokens[Int(generator.next() % UInt64(tokens.count))]
                    bytes.replaceSubrange((quote + 1)..<end, with: Array(token.utf8))
                }
            default:
                let token = tokens[Int(generator.next() % UInt64(tokens.count))]
                bytes.insert(contentsOf: Array(token.utf8), at: position)
            }
        }
        if bytes.count > maxInput { bytes.removeLast(bytes.count - maxInput) }
        return bytes
    }
}

/// Writes the input being processed to a file if the process dies of a signal (a Swift trap is
/// SIGILL/SIGTRAP), so a fuzz crash leaves its reproducer behind.
enum CrashCapture {
    // Thread safety: written by the fuzz loop's single thread; read only by the signal handler
    // of that thread's crash (no concurrent access).
    nonisolated(unsafe) static var buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: ChaosFuzz.maxInput)
    nonisolated(unsafe) static var length = 0
    nonisolated(unsafe) static var fd: Int32 = -1
    nonisolated(unsafe) static var path = ""

    static func install(path: String) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        for signal in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] {
            Glibc.signal(signal) { number in
                if CrashCapture.fd >= 0 {
                    _ = write(CrashCapture.fd, CrashCapture.buffer, CrashCapture.length)
                    let message = "\nfuzz: crash (signal); input written\n"
                    _ = message.withCString { write(2, $0, strlen($0)) }
                }
                Glibc.signal(number, SIG_DFL)
                raise(number)
            }
        }
    }

    static func remember(_ input: [UInt8]) {
        let count = min(input.count, ChaosFuzz.maxInput)
        input.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { buffer.update(from: base, count: count) }
        }
        length = count
    }

    static func uninstall() {
        for signal in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE] { Glibc.signal(signal, SIG_DFL) }
        if fd >= 0 { close(fd) }
        fd = -1
        unlink(path)
    }
}
