import Foundation
import PushCore
import PushCrypto
import PushHTTPServer
#if canImport(Glibc)
import Glibc
#endif

/// `pushworker sandbox`: the HTTP/2 provider emulator (DESIGN §11, docs/sandbox.md).
public enum SandboxCommand {
    static let usage = """
    usage: pushworker sandbox [options]
           pushworker sandbox subscriptions N [--origin https://127.0.0.1:PORT] [--seed S] [--prefix P] [--start K]

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
      --seed S                    seed of Web Push subscription keys (default \(SandboxSubscriptions.defaultSeed))
      --no-auth                   skip provider authentication (raw load tests)
      --unregistered-share F      share of tokens answered as unregistered (0...1, stable per token)
      --throttle-share F          share of requests answered 429
      --retry-after S             Retry-After seconds of 429 answers (default 1)
      --error-share F             share of requests answered 500/503
      --latency-ms N              delay every provider answer by N ms
      --record FILE               append every accepted message as a JSON line
      --max-records N             accepted messages kept in memory (default 100000)

    inbox (docs/sandbox.md "Inbox"):
      --inbox HOST:PORT           serve the inbox page and API over plain HTTP there (port 0 picks one)
      --inbox-port-file FILE      write the inbox's bound port there (atomically) once listening
      --inbox-max N               notifications the inbox keeps, newest first (default 1000)
      --events-url URL            tracking endpoint (http://HOST:PORT): presses post opened/clicked there
      --report-delivered          also post delivered there for every accepted notification
      --msgid-keys KID:KEY,...    verify msgIds in the inbox (default: PUSHWORKER_MSGID_KEYS, else unverified)

    control endpoints: GET /_sandbox/stats, GET /_sandbox/messages[?platform=ios|android|web],
    POST /_sandbox/reset, GET|POST /_sandbox/faults, GET /_sandbox/health.
    """

    /// Runs the subcommand with `arguments` (after `sandbox`); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        if arguments.first == "subscriptions" { return subscriptions(Array(arguments.dropFirst())) }
        let options: SandboxOptions
        do {
            options = try SandboxOptions(arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            printError("pushworker sandbox: \(error)\n\n\(usage)")
            return 64
        }
        if options.wantsHelp {
            print(usage)
            return 0
        }
        do {
            return try run(options)
        } catch {
            printError("pushworker sandbox: \(error)")
            return 1
        }
    }

    private static func subscriptions(_ arguments: [String]) -> Int32 {
        let parsed: SandboxArguments
        do {
            parsed = try SandboxArguments(arguments, valueOptions: ["origin", "seed", "prefix", "start"], flagOptions: [])
        } catch {
            printError("pushworker sandbox subscriptions: \(error)\n\n\(usage)")
            return 64
        }
        if parsed.flags.contains("help") { print(usage); return 0 }
        guard parsed.positionals.count == 1, let count = Int(parsed.positionals[0]), count >= 0,
              let start = Int(parsed.value("start") ?? "1"), start >= 0 else {
            printError("pushworker sandbox subscriptions: expected a count N (and --start K ≥ 0)\n\n\(usage)")
            return 64
        }
        let origin = parsed.value("origin") ?? "https://127.0.0.1:8443"
        guard origin.hasPrefix("https://"), !origin.hasSuffix("/") else {
            printError("pushworker sandbox subscriptions: --origin must be https://HOST:PORT")
            return 64
        }
        let seed = parsed.value("seed") ?? SandboxSubscriptions.defaultSeed
        let prefix = parsed.value("prefix") ?? "sub"
        guard SandboxSubscriptions.isValidID("\(prefix)0"[...]) else {
            printError("pushworker sandbox subscriptions: --prefix must use [A-Za-z0-9_-]")
            return 64
        }
        var output = ""
        for index in start..<(start + count) {
            do {
                output += try SandboxSubscriptions.subscriptionJSON(origin: origin, seed: seed, id: "\(prefix)\(index)")
            } catch {
                printError("pushworker sandbox subscriptions: \(error)")
                return 1
            }
            output += "\n"
            if output.utf8.count > 64 * 1024 { writeOut(output); output = "" }
        }
        writeOut(output)
        return 0
    }

    private static func run(_ options: SandboxOptions) throws -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let stopPipe = try StopSignal.install()

        var listeners: [Int32] = []
        let first = try Listener.open(host: options.host, port: options.port, reusePort: options.threads > 1)
        listeners.append(first.fd)
        for _ in 1..<max(1, options.threads) {
            listeners.append(try Listener.open(host: options.host, port: first.port, reusePort: true).fd)
        }
        let origin = "https://\(options.host):\(first.port)"

        let certificate: SandboxCertificate
        if let certPath = options.certificatePath, let keyPath = options.keyPath {
            certificate = SandboxCertificate(certificatePEM: try String(contentsOfFile: certPath, encoding: .utf8),
                                             privateKeyPEM: try String(contentsOfFile: keyPath, encoding: .utf8))
        } else {
            certificate = try SandboxCertificate.selfSigned()
        }
        if let certOut = options.certificateOutputPath {
            try SandboxCredentials.writeAtomically(certificate.certificatePEM, to: certOut)
        }
        let tls = try TLSServerContext(certificate: certificate)

        var trust = SandboxTrust()
        if let directory = options.credentialsOutput {
            trust = try SandboxCredentials.generate(appIDs: options.apps.isEmpty ? ["app_demo"] : options.apps, directory: directory, origin: origin)
        }
        for directory in options.trustDirectories { try SandboxCredentials.load(directory: directory, into: &trust) }

        var recordFD: Int32 = -1
        if let record = options.recordPath {
            recordFD = open(record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard recordFD >= 0 else { throw SandboxSocketError("open \(record)") }
        }
        let tracking = options.eventsURL.map { TrackingReporter(url: $0) }
        tracking?.start()
        var inbox: Inbox?
        var inboxListener: HTTPListener?
        if let address = options.inboxAddress {
            var settings = Inbox.Settings()
            settings.capacity = options.inboxCapacity
            settings.keyring = options.msgIDKeyring
            let created = Inbox(settings: settings)
            created.start()
            let server = InboxServer(inbox: created, tracking: tracking, reportsDelivered: options.reportsDelivered, sandboxOrigin: origin)
            do {
                inboxListener = try HTTPListener(address: address, allowsStreaming: true, headerNames: InboxServer.headerNames) { server.handle($0) }
            } catch {
                throw SandboxSocketError("--inbox \(address.host):\(address.port): \(error)")
            }
            inbox = created
        }
        let state = SandboxState(faults: options.faults, maximumRecords: options.maximumRecords, recordFD: recordFD,
                                 inbox: inbox, tracking: tracking, reportsDelivered: options.reportsDelivered)
        let configuration = SandboxConfiguration(origin: origin, isAuthDisabled: options.isAuthDisabled, seed: options.seed)
        var loops: [EventLoop] = []
        for fd in listeners {
            loops.append(try EventLoop(listenFD: fd, tls: tls, router: SandboxRouter(configuration: configuration, state: state, trust: trust)))
        }
        var threads: [pthread_t] = []
        for loop in loops {
            var thread = pthread_t()
            let context = Unmanaged.passRetained(loop).toOpaque()
            let created = pthread_create(&thread, nil, { context in
                guard let context else { return nil }
                Unmanaged<EventLoop>.fromOpaque(context).takeRetainedValue().run()
                return nil
            }, context)
            guard created == 0 else {
                Unmanaged<EventLoop>.fromOpaque(context).release()
                throw SandboxSocketError("pthread_create")
            }
            threads.append(thread)
        }
        let apps = trust.appIDs.isEmpty ? "none" : trust.appIDs.joined(separator: ",")
        writeOut("pushworker sandbox listening on \(origin) (threads \(loops.count), apps \(apps)\(options.isAuthDisabled ? ", auth off" : ""))\n")
        if let inboxListener, let address = options.inboxAddress {
            let tracked = options.eventsURL.map { ", events to \($0.description)\(options.reportsDelivered ? " (delivered too)" : "")" } ?? ""
            writeOut("pushworker sandbox inbox on http://\(address.host):\(inboxListener.port)/\(tracked)\n")
            if let file = options.inboxPortFile { try SandboxCredentials.writeAtomically("\(inboxListener.port)\n", to: file) }
        }
        if let portFile = options.portFile { try SandboxCredentials.writeAtomically("\(first.port)\n", to: portFile) }

        stopPipe.wait()
        for loop in loops { loop.stop() }
        for thread in threads { pthread_join(thread, nil) }
        inboxListener?.stop()
        inbox?.stop()
        tracking?.stop()
        state.flushRecords()
        writeOut("pushworker sandbox stopped\n")
        return 0
    }

    static func writeOut(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
    }

    static func printError(_ message: String) {
        var bytes = Array((message + "\n").utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }
}

/// SIGTERM/SIGINT delivered through a pipe (the handler only writes one byte), so the main thread can block on it.
enum StopSignal {
    /// Thread safety: written once in `install()` before the handler is installed, only read afterwards
    /// (by the signal handler, which may run on any thread).
    nonisolated(unsafe) static var writeFD: Int32 = -1

    struct Pipe {
        let readFD: Int32
        /// Blocks until SIGTERM or SIGINT.
        func wait() {
            var byte: UInt8 = 0
            while read(readFD, &byte, 1) < 0 && errno == EINTR {}
        }
    }

    static func install() throws -> Pipe {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SandboxSocketError("pipe") }
        writeFD = fds[1]
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            var byte: UInt8 = 1
            _ = write(StopSignal.writeFD, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(SIGTERM, &action, nil)
        sigaction(SIGINT, &action, nil)
        // A parent may hand us a mask that blocks them (test runners do); threads created later inherit this one.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        return Pipe(readFD: fds[0])
    }
}
