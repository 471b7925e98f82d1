import PushCore

/// `--name value`, `--name=value`, boolean `--flag` and positionals; unknown options are usage errors.
struct SandboxArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String>) throws(SandboxUsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "-h" { flags.insert("help"); continue }
            guard argument.hasPrefix("--") else {
                if argument.hasPrefix("-") { throw SandboxUsageError("unknown option \(argument)") }
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "help" || flagOptions.contains(name) {
                guard inline == nil else { throw SandboxUsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if valueOptions.contains(name) {
                if let inline {
                    values[name, default: []].append(inline)
                } else if index < arguments.count {
                    values[name, default: []].append(arguments[index])
                    index += 1
                } else {
                    throw SandboxUsageError("--\(name) needs a value")
                }
            } else {
                throw SandboxUsageError("unknown option --\(name)")
            }
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
}

/// A command line the sandbox cannot run (exit 64).
struct SandboxUsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Validated `pushworker sandbox` options.
struct SandboxOptions {
    var wantsHelp = false
    var host = "127.0.0.1"
    var port: UInt16 = 0
    var portFile: String?
    var threads = 1
    var certificatePath: String?
    var keyPath: String?
    var certificateOutputPath: String?
    var credentialsOutput: String?
    var apps: [String] = []
    var trustDirectories: [String] = []
    var seed = SandboxSubscriptions.defaultSeed
    var isAuthDisabled = false
    var faults = SandboxFaults()
    var recordPath: String?
    var maximumRecords = 100_000
    /// `--inbox HOST:PORT` (docs/sandbox.md "Inbox").
    var inboxAddress: HostPort?
    var inboxPortFile: String?
    var inboxCapacity = 1000
    var eventsURL: PlainHTTPURL?
    var reportsDelivered = false
    /// `--msgid-keys`, else `PUSHWORKER_MSGID_KEYS`: verifies msgIds in the inbox.
    var msgIDKeyring: MsgIDKeyring?

    init(_ arguments: [String], environment: [String: String] = [:]) throws(SandboxUsageError) {
        let parsed = try SandboxArguments(arguments, valueOptions: [
            "listen", "port-file", "threads", "cert", "key", "cert-out", "credentials-out", "app", "trust", "seed",
            "unregistered-share", "throttle-share", "retry-after", "error-share", "latency-ms", "record", "max-records",
            "inbox", "inbox-port-file", "inbox-max", "events-url", "msgid-keys",
        ], flagOptions: ["no-auth", "report-delivered"])
        wantsHelp = parsed.flags.contains("help")
        guard parsed.positionals.isEmpty else { throw SandboxUsageError("unexpected argument \(parsed.positionals[0])") }
        if let listen = parsed.value("listen") {
            guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
                throw SandboxUsageError("--listen must be HOST:PORT, got \(listen)")
            }
            host = String(listen[..<colon])
            self.port = port
            guard host.split(separator: ".").count == 4, host.split(separator: ".").allSatisfy({ UInt8($0) != nil }) else {
                throw SandboxUsageError("--listen needs an IPv4 address, got \(host)")
            }
        }
        portFile = parsed.value("port-file")
        threads = try Self.integer(parsed, "threads", default: 1, in: 1...64)
        certificatePath = parsed.value("cert")
        keyPath = parsed.value("key")
        guard (certificatePath == nil) == (keyPath == nil) else { throw SandboxUsageError("--cert and --key go together") }
        certificateOutputPath = parsed.value("cert-out")
        credentialsOutput = parsed.value("credentials-out")
        apps = parsed.values["app"] ?? []
        if !apps.isEmpty, credentialsOutput == nil { throw SandboxUsageError("--app needs --credentials-out DIR") }
        for app in apps where !SandboxCredentials.isValidAppID(app) { throw SandboxUsageError("invalid app id \(app)") }
        trustDirectories = parsed.values["trust"] ?? []
        seed = parsed.value("seed") ?? seed
        isAuthDisabled = parsed.flags.contains("no-auth")
        faults.unregisteredShare = try Self.share(parsed, "unregistered-share")
        faults.throttleShare = try Self.share(parsed, "throttle-share")
        faults.errorShare = try Self.share(parsed, "error-share")
        faults.retryAfterSeconds = try Self.integer(parsed, "retry-after", default: 1, in: 0...86400)
        faults.latencyMilliseconds = try Self.integer(parsed, "latency-ms", default: 0, in: 0...60000)
        recordPath = parsed.value("record")
        maximumRecords = try Self.integer(parsed, "max-records", default: 100_000, in: 0...100_000_000)
        if let inbox = parsed.value("inbox") {
            guard let address = HostPort(inbox), address.host.split(separator: ".").count == 4,
                  address.host.split(separator: ".").allSatisfy({ UInt8($0) != nil }) else {
                throw SandboxUsageError("--inbox must be an IPv4 HOST:PORT, got \(inbox)")
            }
            inboxAddress = address
        }
        inboxPortFile = parsed.value("inbox-port-file")
        if inboxPortFile != nil, inboxAddress == nil { throw SandboxUsageError("--inbox-port-file needs --inbox") }
        inboxCapacity = try Self.integer(parsed, "inbox-max", default: 1000, in: 1...1_000_000)
        if let text = parsed.value("events-url") {
            guard let url = PlainHTTPURL(text) else { throw SandboxUsageError("--events-url must be http://HOST:PORT[/path], got \(text)") }
            eventsURL = url
        }
        reportsDelivered = parsed.flags.contains("report-delivered")
        if reportsDelivered, eventsURL == nil { throw SandboxUsageError("--report-delivered needs --events-url URL") }
        if let keys = parsed.value("msgid-keys") {
            do { msgIDKeyring = try MsgIDKeyring(parsing: keys) } catch { throw SandboxUsageError("--msgid-keys: \(error.message)") }
        } else if inboxAddress != nil, let keys = environment["PUSHWORKER_MSGID_KEYS"], !keys.isEmpty {
            // The sandbox does not need them: keys it cannot read leave msgIds unverified.
            msgIDKeyring = try? MsgIDKeyring(parsing: keys)
        }
    }

    private static func integer(_ parsed: SandboxArguments, _ name: String, default value: Int, in range: ClosedRange<Int>) throws(SandboxUsageError) -> Int {
        guard let text = parsed.value(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw SandboxUsageError("--\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound), got \(text)")
        }
        return number
    }

    private static func share(_ parsed: SandboxArguments, _ name: String) throws(SandboxUsageError) -> Double {
        guard let text = parsed.value(name) else { return 0 }
        guard let number = Double(text), (0...1).contains(number) else { throw SandboxUsageError("--\(name) must be a number in 0...1, got \(text)") }
        return number
    }
}
