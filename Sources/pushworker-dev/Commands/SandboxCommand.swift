import Foundation
import PushRuntime
import PushCrypto
import PushInbox
import PushSandbox
#if canImport(Glibc)
import Glibc
import PushCLI
import PushCore
import PushWorker
import PushEvents
import PushDevTools
#endif

/// `pushworker-dev sandbox`: the HTTP/2 provider emulator (docs/sandbox.md).
enum SandboxCommand {
    static let usage = """
    usage: pushworker-dev sandbox [options]
           pushworker-dev sandbox subscriptions N [--origin https://127.0.0.1:PORT] [--seed S] [--prefix P] [--start K]
                                                [--browser chrome|edge|firefox|safari]

    An HTTP/2 (TLS, ALPN h2) emulator of APNs, FCM HTTP v1 and Web Push push services.

    server options:
      --listen HOST:PORT          address to listen on (default 127.0.0.1:0, port 0 picks one)
      --port-file FILE            write the bound port there (atomically) once listening
      --threads N                 event loop threads sharing the port with SO_REUSEPORT (default 1)
      --cert PEM --key PEM        serve this certificate instead of a generated self-signed one
      --cert-out FILE             write the generated certificate (PEM) there, for clients to trust
      --credentials-out DIR       generate credential folders (worker format) for each --app
      --app APPID                 an app to generate credentials for (repeatable; default app_demo)
      --trust DIR                 also accept the credentials found in DIR/<app>/ (repeatable)
      --require-client-cert APPID the app authenticates to APNs with a TLS client certificate the
                                  sandbox issues (its apns.json holds it; repeatable; needs
                                  --credentials-out): only certificates of the sandbox's CA pass the
                                  handshake, its requests without one get 403 BadCertificate
      --seed S                    seed of Web Push subscription keys (default \(SandboxSubscriptions.defaultSeed))
      --no-auth                   skip provider authentication (raw load tests)
      --unregistered-share F      share of tokens answered as unregistered (0...1, stable per token)
      --throttle-share F          share of requests answered 429
      --retry-after S             Retry-After seconds of 429 answers (default 1)
      --error-share F             share of requests answered 500/503
      --latency-ms N              delay every provider answer by N ms
      --latency-jitter-ms N       and by a further uniform 0...N ms each (real providers vary)
      --record FILE               append every accepted message as a JSON line
      --max-records N             accepted messages kept in memory (default 100000)

    inbox (docs/sandbox.md "Inbox"):
      --inbox HOST:PORT           serve the inbox page and API over plain HTTP there (port 0 picks one)
      --inbox-port-file FILE      write the inbox's bound port there (atomically) once listening
      --inbox-max N               notifications the inbox keeps, newest first (default 1000)
      --events-url URL            tracking endpoint (http://HOST:PORT): presses post opened/clicked there
      --report-delivered          also post delivered there for every accepted notification
      --msgid-keys KID:KEY,...    verify msgIds in the inbox (default: PUSHWORKER_MSGID_KEYS, else unverified)

    subscriptions: --browser B ends each endpoint with ?browser=B; the inbox opens those cards on
    that browser's drawing (the keys do not depend on it).

    control endpoints: GET /_sandbox/stats, GET /_sandbox/messages[?platform=ios|android|web],
    POST /_sandbox/reset, GET|POST /_sandbox/faults, GET /_sandbox/health, GET /_sandbox/tls.
    """

    /// Runs the subcommand with `arguments` (after `sandbox`); returns the exit status.
    static func main(_ arguments: [String]) -> Int32 {
        if arguments.first == "subscriptions" { return subscriptions(Array(arguments.dropFirst())) }
        let options: SandboxOptions
        do {
            let parsed = try CommandArguments(arguments, valueOptions: [
                "listen", "port-file", "threads", "cert", "key", "cert-out", "credentials-out", "app", "trust", "seed",
                "unregistered-share", "throttle-share", "retry-after", "error-share", "latency-ms", "latency-jitter-ms", "record", "max-records",
                "inbox", "inbox-port-file", "inbox-max", "events-url", "msgid-keys", "require-client-cert",
            ], flagOptions: ["no-auth", "report-delivered"])
            if parsed.wantsHelp {
                print(usage)
                return ExitCode.ok
            }
            options = try parse(parsed, environment: ProcessInfo.processInfo.environment)
        } catch {
            _ = CommandSupport.usageError("\(error)", usage: usage)
            return ExitCode.usage
        }
        do {
            return try SandboxService.run(options)
        } catch {
            printError("pushworker-dev sandbox: \(error)")
            return ExitCode.failure
        }
    }

    /// Validates the server options.
    static func parse(_ parsed: CommandArguments, environment: [String: String] = [:]) throws(UsageError) -> SandboxOptions {
        var options = SandboxOptions()
        guard parsed.positionals.isEmpty else { throw UsageError("unexpected argument \(parsed.positionals[0])") }
        if let listen = parsed.value("listen") {
            guard let address = HostPort(listen) else { throw UsageError("--listen must be HOST:PORT, got \(listen)") }
            guard address.host.split(separator: ".").count == 4, address.host.split(separator: ".").allSatisfy({ UInt8($0) != nil }) else {
                throw UsageError("--listen needs an IPv4 address, got \(address.host)")
            }
            options.host = address.host
            options.port = address.port
        }
        options.portFile = parsed.value("port-file")
        options.threads = try parsed.integer("threads", default: 1, in: 1...64)
        options.certificatePath = parsed.value("cert")
        options.keyPath = parsed.value("key")
        guard (options.certificatePath == nil) == (options.keyPath == nil) else { throw UsageError("--cert and --key go together") }
        options.certificateOutputPath = parsed.value("cert-out")
        options.credentialsOutput = parsed.value("credentials-out")
        options.apps = parsed.allValues("app")
        if !options.apps.isEmpty, options.credentialsOutput == nil { throw UsageError("--app needs --credentials-out DIR") }
        for app in options.apps where !SandboxOptions.isValidAppID(app) { throw UsageError("invalid app id \(app)") }
        options.trustDirectories = parsed.allValues("trust")
        options.clientCertificateApps = parsed.allValues("require-client-cert")
        if !options.clientCertificateApps.isEmpty, options.credentialsOutput == nil {
            throw UsageError("--require-client-cert needs --credentials-out DIR (the certificates are written there)")
        }
        for app in options.clientCertificateApps where !SandboxOptions.isValidAppID(app) { throw UsageError("invalid app id \(app)") }
        options.seed = parsed.value("seed") ?? options.seed
        options.isAuthDisabled = parsed.flag("no-auth")
        options.unregisteredShare = try share(parsed, "unregistered-share")
        options.throttleShare = try share(parsed, "throttle-share")
        options.errorShare = try share(parsed, "error-share")
        options.retryAfterSeconds = try parsed.integer("retry-after", default: 1, in: 0...86400)
        options.latencyMilliseconds = try parsed.integer("latency-ms", default: 0, in: 0...60000)
        options.latencyJitterMilliseconds = try parsed.integer("latency-jitter-ms", default: 0, in: 0...60000)
        options.recordPath = parsed.value("record")
        options.maximumRecords = try parsed.integer("max-records", default: 100_000, in: 0...100_000_000)
        try parseInbox(parsed, environment: environment, into: &options)
        return options
    }

    /// `--inbox` and what goes with it (docs/sandbox.md "Inbox").
    static func parseInbox(_ parsed: CommandArguments, environment: [String: String], into options: inout SandboxOptions) throws(UsageError) {
        if let inbox = parsed.value("inbox") {
            guard let address = HostPort(inbox), address.host.split(separator: ".").count == 4,
                  address.host.split(separator: ".").allSatisfy({ UInt8($0) != nil }) else {
                throw UsageError("--inbox must be an IPv4 HOST:PORT, got \(inbox)")
            }
            options.inboxAddress = address
        }
        options.inboxPortFile = parsed.value("inbox-port-file")
        if options.inboxPortFile != nil, options.inboxAddress == nil { throw UsageError("--inbox-port-file needs --inbox") }
        options.inboxCapacity = try parsed.integer("inbox-max", default: 1000, in: 1...1_000_000)
        if let text = parsed.value("events-url") {
            guard let url = PlainHTTPURL(text) else { throw UsageError("--events-url must be http://HOST:PORT[/path], got \(text)") }
            options.eventsURL = url
        }
        options.reportsDelivered = parsed.flag("report-delivered")
        if options.reportsDelivered, options.eventsURL == nil { throw UsageError("--report-delivered needs --events-url URL") }
        if let keys = parsed.value("msgid-keys") {
            do { options.msgIDKeyring = try MsgIDKeyring(parsing: keys) } catch { throw UsageError("--msgid-keys: \(error.message)") }
        } else if options.inboxAddress != nil, let keys = environment["PUSHWORKER_MSGID_KEYS"], !keys.isEmpty {
            // The sandbox does not need them: keys it cannot read leave msgIds unverified.
            options.msgIDKeyring = try? MsgIDKeyring(parsing: keys)
        }
    }

    private static func share(_ parsed: CommandArguments, _ name: String) throws(UsageError) -> Double {
        let number = try parsed.double(name, default: 0)
        guard (0...1).contains(number) else { throw UsageError("--\(name) must be a number in 0...1, got \(number)") }
        return number
    }

    private static func subscriptions(_ arguments: [String]) -> Int32 {
        let parsed: CommandArguments
        do {
            parsed = try CommandArguments(arguments, valueOptions: ["origin", "seed", "prefix", "start", "browser"], flagOptions: [])
        } catch {
            _ = CommandSupport.usageError("\(error)", usage: usage)
            return ExitCode.usage
        }
        if parsed.wantsHelp { print(usage); return ExitCode.ok }
        guard parsed.positionals.count == 1, let count = Int(parsed.positionals[0]), count >= 0,
              let start = Int(parsed.value("start") ?? "1"), start >= 0 else {
            _ = CommandSupport.usageError("expected a count N (and --start K ≥ 0)", usage: usage)
            return ExitCode.usage
        }
        let origin = parsed.value("origin") ?? "https://127.0.0.1:8443"
        guard origin.hasPrefix("https://"), !origin.hasSuffix("/") else {
            printError("pushworker-dev sandbox subscriptions: --origin must be https://HOST:PORT")
            return ExitCode.usage
        }
        let seed = parsed.value("seed") ?? SandboxSubscriptions.defaultSeed
        let prefix = parsed.value("prefix") ?? "sub"
        guard SandboxSubscriptions.isValidID("\(prefix)0"[...]) else {
            printError("pushworker-dev sandbox subscriptions: --prefix must use [A-Za-z0-9_-]")
            return ExitCode.usage
        }
        let browser = parsed.value("browser")
        if let browser, !["chrome", "edge", "firefox", "safari"].contains(browser) {
            printError("pushworker-dev sandbox subscriptions: --browser must be chrome, edge, firefox or safari")
            return ExitCode.usage
        }
        var output = ""
        for index in start..<(start + count) {
            do {
                output += try SandboxSubscriptions.subscriptionJSON(origin: origin, seed: seed, id: "\(prefix)\(index)", browser: browser)
            } catch {
                printError("pushworker-dev sandbox subscriptions: \(error)")
                return ExitCode.failure
            }
            output += "\n"
            if output.utf8.count > 64 * 1024 { CommandSupport.writeOut(output); output = "" }
        }
        CommandSupport.writeOut(output)
        return ExitCode.ok
    }
}
