import Foundation
import PushCrypto
import PushHTTPServer
import PushInbox
#if canImport(Glibc)
import Glibc
#endif

/// The running `pushworker-dev sandbox`: listeners, TLS, one event loop thread per listener, until
/// SIGTERM/SIGINT (docs/sandbox.md, docs/sandbox.md). The CLI parses ``SandboxOptions``; this runs them.
public enum SandboxService {
    public static func run(_ options: SandboxOptions) throws -> Int32 {
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
        // --require-client-cert: a CA of this run issues the apps' client certificates, and only
        // certificates it issued pass the handshake.
        let clientCA = options.clientCertificateApps.isEmpty ? nil : try CertificateAuthority.generate(commonName: "pushworker sandbox client CA")
        let tls = try TLSServerContext.make(certificate: certificate, clientCA: clientCA?.certificatePEM)

        var trust = SandboxTrust()
        if let directory = options.credentialsOutput {
            var apps = options.apps.isEmpty && options.clientCertificateApps.isEmpty ? ["app_demo"] : options.apps
            for app in options.clientCertificateApps where !apps.contains(app) { apps.append(app) }
            trust = try SandboxCredentials.generate(appIDs: apps, directory: directory, origin: origin,
                                                    certificateApps: Set(options.clientCertificateApps), authority: clientCA)
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
            let loop = try EventLoop.make(listenFD: fd, tls: tls, router: SandboxRouter(configuration: configuration, state: state, trust: trust))
            state.addLoopNudge { [weak loop] in loop?.nudge() }
            loops.append(loop)
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
        let certificates = options.clientCertificateApps.isEmpty ? "" : ", client certificates for \(options.clientCertificateApps.joined(separator: ","))"
        writeOut("pushworker-dev sandbox listening on \(origin) (threads \(loops.count), apps \(apps)\(certificates)\(options.isAuthDisabled ? ", auth off" : ""))\n")
        if let inboxListener, let address = options.inboxAddress {
            let tracked = options.eventsURL.map { ", events to \($0.description)\(options.reportsDelivered ? " (delivered too)" : "")" } ?? ""
            writeOut("pushworker-dev sandbox inbox on http://\(address.host):\(inboxListener.port)/\(tracked)\n")
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
        writeOut("pushworker-dev sandbox stopped\n")
        return 0
    }

    package static func writeOut(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
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
