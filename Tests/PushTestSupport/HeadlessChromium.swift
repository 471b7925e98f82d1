import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real headless Chromium (Debian `chromium`) driven over the DevTools protocol, for the
/// inbox's browser tests. The protocol runs over `--remote-debugging-pipe` (NUL-terminated JSON
/// on the browser's fds 3 and 4, connected here through two FIFOs): no debugging port is opened.
/// Every other network access is cut: non-loopback requests go to a dead proxy on 127.0.0.1:9
/// and host names do not resolve, so a page can only reach 127.0.0.1.
///
/// Thread safety: `replies` and `failure` are only touched under `condition`; the reader thread
/// owns `output`; `input` is written by one test thread at a time (under `condition` too).
public final class HeadlessChromium: @unchecked Sendable {
    public static let executable = "/usr/bin/chromium"

    private let process: TestProcess
    private let folder: URL
    private let input: FileHandle
    private let output: FileHandle
    private let condition = NSCondition()
    private var replies: [Int: [String: Any]] = [:]
    private var failure: String?
    private var nextID = 1
    private var sessionID = ""

    /// Starts the browser with one blank page of `width` × `height` CSS pixels.
    public init(width: Int = 1200, height: Int = 900) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw TestSupportError("\(Self.executable) is missing: run scripts/install-deps.sh (Debian package chromium)")
        }
        folder = try TemporaryFolder.make(prefix: "chromium")
        let commands = folder.appendingPathComponent("to-browser").path
        let events = folder.appendingPathComponent("from-browser").path
        guard mkfifo(commands, 0o600) == 0, mkfifo(events, 0o600) == 0 else { throw TestSupportError("mkfifo failed: errno \(errno)") }
        let flags = [
            "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
            "--user-data-dir=\(folder.appendingPathComponent("profile").path)", "--window-size=\(width),\(height)",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-extensions", "--disable-default-apps", "--metrics-recording-only", "--mute-audio",
            "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
            "--dns-prefetch-disable", "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "about:blank",
        ]
        let quoted = ([Self.executable] + flags).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        process = try TestProcess("/bin/sh", ["-c", "exec \(quoted) 3<'\(commands)' 4>'\(events)'"])
        // The shell opens the command FIFO for reading first, then the event FIFO for writing.
        var writeFD: Int32 = -1
        let deadline = Date().addingTimeInterval(20)
        while writeFD < 0 {
            writeFD = open(commands, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writeFD < 0 {
                guard errno == ENXIO, Date() < deadline, process.isRunning else {
                    throw TestSupportError("chromium did not start: \(process.stderr().suffix(2000))")
                }
                usleep(10_000)
            }
        }
        _ = fcntl(writeFD, F_SETFL, fcntl(writeFD, F_GETFL) & ~O_NONBLOCK)
        let readFD = open(events, O_RDONLY | O_CLOEXEC)
        guard readFD >= 0 else { close(writeFD); throw TestSupportError("open \(events): errno \(errno)") }
        input = FileHandle(fileDescriptor: writeFD, closeOnDealloc: true)
        output = FileHandle(fileDescriptor: readFD, closeOnDealloc: true)
        let reader = Thread { [self] in readLoop() }
        reader.name = "chromium-devtools"
        reader.start()

        let target = try send("Target.createTarget", ["url": "about:blank"], session: false)
        guard let targetID = target["targetId"] as? String else { throw TestSupportError("Target.createTarget: \(target)") }
        let attached = try send("Target.attachToTarget", ["targetId": targetID, "flatten": true], session: false)
        guard let session = attached["sessionId"] as? String else { throw TestSupportError("Target.attachToTarget: \(attached)") }
        sessionID = session
        _ = try send("Page.enable")
        _ = try send("Runtime.enable")
        try setViewport(width: width, height: height)
    }

    deinit {
        try? input.close()
        process.stop(grace: 3)
        try? FileManager.default.removeItem(at: folder)
    }

    /// Stderr of the browser so far (for failure messages).
    public var log: String { String(process.stderr().suffix(4000)) }

    // MARK: protocol

    /// Sends one DevTools command (to the page unless `session` is false) and returns its result.
    @discardableResult
    public func send(_ method: String, _ parameters: [String: Any] = [:], session: Bool = true, timeout: Double = 20) throws -> [String: Any] {
        condition.lock()
        let id = nextID
        nextID += 1
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if session { message["sessionId"] = sessionID }
        var bytes = try JSONSerialization.data(withJSONObject: message)
        bytes.append(0)
        do { try input.write(contentsOf: bytes) } catch { condition.unlock(); throw TestSupportError("\(method): write failed: \(error)") }
        let deadline = Date().addingTimeInterval(timeout)
        while replies[id] == nil && failure == nil {
            if !condition.wait(until: deadline) { break }
        }
        let reply = replies.removeValue(forKey: id)
        let broken = failure
        condition.unlock()
        guard let reply else { throw TestSupportError("\(method): no reply within \(timeout) s \(broken ?? ""): \(log)") }
        if let error = reply["error"] { throw TestSupportError("\(method): \(error)") }
        return reply["result"] as? [String: Any] ?? [:]
    }

    private func readLoop() {
        var buffer = Data()
        while true {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let end = buffer.firstIndex(of: 0) {
                let message = buffer[buffer.startIndex..<end]
                buffer.removeSubrange(buffer.startIndex...end)
                guard let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any], let id = object["id"] as? Int else { continue }
                condition.lock()
                replies[id] = object
                condition.broadcast()
                condition.unlock()
            }
        }
        condition.lock()
        failure = "(the browser closed the pipe)"
        condition.broadcast()
        condition.unlock()
    }

    // MARK: page helpers

    /// Evaluates `expression` in the page (promises awaited) and returns its JSON value.
    @discardableResult
    public func evaluate(_ expression: String) throws -> Any? {
        let result = try send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let text = ((exception["exception"] as? [String: Any])?["description"] as? String) ?? "\(exception)"
            throw TestSupportError("script failed: \(text)\n\(expression)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `expression` every 50 ms until it is truthy (not false, 0, "", null); returns that value.
    @discardableResult
    public func wait(for expression: String, timeout: Double = 15) throws -> Any {
        let deadline = Date().addingTimeInterval(timeout)
        var last: Any?
        repeat {
            last = try evaluate(expression)
            if let value = last, Self.isTruthy(value) { return value }
            usleep(50_000)
        } while Date() < deadline
        throw TestSupportError("timed out after \(timeout) s waiting for: \(expression) (last: \(String(describing: last)))")
    }

    static func isTruthy(_ value: Any) -> Bool {
        if value is NSNull { return false }
        if let number = value as? NSNumber { return number.doubleValue != 0 }
        if let text = value as? String { return !text.isEmpty }
        return true
    }

    /// Loads `url` and waits for its `load` event.
    public func navigate(_ url: String) throws {
        try send("Page.navigate", ["url": url])
        try wait(for: "document.readyState === 'complete' && location.href !== 'about:blank'")
    }

    public func setViewport(width: Int, height: Int, mobile: Bool = false) throws {
        try send("Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile])
    }

    /// A real mouse click (pressed and released at the centre of the first element matching
    /// `selector`, scrolled into view first), as a user's.
    public func click(_ selector: String) throws {
        let literal = try Self.jsString(selector)
        let box = try evaluate("""
            (() => { const e = document.querySelector(\(literal)); if (!e) return null; e.scrollIntoView({block: "center"});
                     const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()
            """)
        guard let point = box as? [Double], point.count == 2 else { throw TestSupportError("nothing matches \(selector)") }
        for type in ["mouseMoved", "mousePressed", "mouseReleased"] {
            try send("Input.dispatchMouseEvent", ["type": type, "x": point[0], "y": point[1], "button": "left", "clickCount": 1])
        }
    }

    /// A PNG of the viewport (or of the whole page with `fullPage`).
    public func screenshot(fullPage: Bool = false) throws -> Data {
        var parameters: [String: Any] = ["format": "png"]
        if fullPage { parameters["captureBeyondViewport"] = true }
        let result = try send("Page.captureScreenshot", parameters)
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else { throw TestSupportError("no screenshot data") }
        return data
    }

    /// `text` as a JavaScript string literal.
    public static func jsString(_ text: String) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: [text])
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }
}
