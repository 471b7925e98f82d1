import CCurl
import CPushCurl
#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// Owns one `CURLM *` and the event loop state libcurl's socket API drives on it
/// (`pw_curl_events` in the CPushCurl target: an epoll set, libcurl's timer, the corked sockets).
/// Built by ``make(maxConnectionsPerHost:maxTotalConnections:maxConcurrentStreams:coalesceWrites:)``:
/// the handles first, then this owner around them (a non-throwing `init`), then the options; a
/// refused option only throws, and `deinit` cleans both up, once.
///
/// Thread safety: `wakeup()` may be called from any thread (a write to an eventfd); every other
/// use of `handle` and `events` happens on the client's I/O thread. Both are released in
/// `deinit`, i.e. only when neither the client, its I/O loop nor a transfer references them
/// any more, so a late `wakeup()` never touches a freed handle. `curl_multi_cleanup` runs first:
/// closing the cached connections still calls the event callbacks.
final class CurlMulti: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    let events: UnsafeMutablePointer<pw_curl_events>

    /// A multiplexing multi handle with the client's connection and stream limits.
    static func make(maxConnectionsPerHost: Int, maxTotalConnections: Int, maxConcurrentStreams: Int,
                     coalesceWrites: Bool = true) throws(HTTPClientError) -> CurlMulti {
        try make(options: [
            (CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING"),
            (CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost, "CURLMOPT_MAX_HOST_CONNECTIONS"),
            (CURLMOPT_MAX_TOTAL_CONNECTIONS, maxTotalConnections, "CURLMOPT_MAX_TOTAL_CONNECTIONS"),
            (CURLMOPT_MAXCONNECTS, maxTotalConnections, "CURLMOPT_MAXCONNECTS"),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, maxConcurrentStreams, "CURLMOPT_MAX_CONCURRENT_STREAMS"),
        ], coalesceWrites: coalesceWrites)
    }

    /// A multi handle with `options` (option, value, name for the error) set in order.
    static func make(options: [(CURLMoption, Int, String)], coalesceWrites: Bool = true) throws(HTTPClientError) -> CurlMulti {
        CurlGlobal.ensureInitialized()
        guard let handle = curl_multi_init() else { throw HTTPClientError("curl_multi_init failed") }
        guard let events = pw_curl_events_create(handle, coalesceWrites ? 1 : 0) else {
            curl_multi_cleanup(handle) // no owner exists yet: freed here, and only here
            throw HTTPClientError("cannot set up the I/O thread's event loop (epoll, eventfd or libcurl's socket callbacks)")
        }
        let multi = CurlMulti(handle: handle, events: events)
        for (option, value, name) in options where pw_curl_multi_setopt_long(handle, option, value) != CURLM_OK {
            throw HTTPClientError("libcurl refused \(name)=\(value)")
        }
        return multi
    }

    /// Takes ownership of `handle` and `events`.
    private init(handle: UnsafeMutableRawPointer, events: UnsafeMutablePointer<pw_curl_events>) {
        self.handle = handle
        self.events = events
    }

    /// Interrupts a wait in progress (or the next one). Any thread.
    func wakeup() { pw_curl_events_wakeup(events) }

    deinit {
        curl_multi_cleanup(handle)
        pw_curl_events_destroy(events)
    }
}

/// CA certificates for libcurl: written once to a private temporary file handed over as
/// `CURLOPT_CAINFO` (a path), or, if no file can be written (read-only file system), as
/// `CURLOPT_CAINFO_BLOB` with `CURL_BLOB_NOCOPY`: libcurl keeps a pointer to these bytes, so
/// every transfer holds a reference to this object and the bytes live until the last easy
/// handle using them is gone.
///
/// Why a path first: libcurl 7.88 duplicates a CA *blob* into every new transfer's connection
/// config and compares it byte by byte when looking for a connection to reuse (a ~220 KB
/// malloc + memcpy + memcmp per request), and parses it again for every TLS connection, while a
/// path is compared as a string and its parsed store is cached (`CURLOPT_CA_CACHE_TIMEOUT`).
///
/// Thread safety: immutable after `init`.
final class CurlCABundle: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer
    /// The temporary file holding the same PEM (0600; removed in `deinit` or at `exit`), if one could be written.
    let path: String?

    init(_ pem: [UInt8]) {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(pem.count, 1), alignment: 1)
        pem.withUnsafeBytes { bytes.copyMemory(from: $0) }
        self.bytes = bytes
        count = pem.count
        path = Self.writeTemporaryFile(pem)
    }

    let count: Int

    deinit {
        if let path {
            TemporaryCAFiles.forget(path)
            unlink(path)
        }
        bytes.deallocate()
    }

    private static func writeTemporaryFile(_ pem: [UInt8]) -> String? {
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/pushworker-ca-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemp(base)
        }
        guard fd >= 0 else { return nil }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var offset = 0
        var ok = true
        while offset < pem.count {
            let written = pem[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 { ok = false; break }
            offset += written
        }
        close(fd)
        guard ok else { unlink(path); return nil }
        TemporaryCAFiles.remember(path)
        return path
    }

    /// libcurl's compiled-in CA bundle path (`CURLINFO_CAINFO`, libcurl ≥ 7.84), if any.
    static func defaultBundlePath() -> String? {
        CurlGlobal.ensureInitialized()
        guard let easy = curl_easy_init() else { return nil }
        defer { curl_easy_cleanup(easy) }
        var path: UnsafePointer<CChar>?
        guard pw_curl_easy_getinfo_str(easy, CURLINFO_CAINFO, &path) == CURLE_OK, let path else { return nil }
        return String(cString: path)
    }
}

/// Reads a whole file with POSIX calls (no Foundation in this module).
func readWholeFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 { return nil }
        if n == 0 { return result }
        result.append(contentsOf: chunk[0..<n])
    }
}

/// CA files this process wrote: removed at `exit` (an `atexit` handler), since a process that
/// exits never runs `deinit`s. Only `_exit`, a crash or SIGKILL leave one behind (0600, public
/// certificates only).
enum TemporaryCAFiles {
    private static let paths = Mutex<[String]>([])
    private static let registered = Atomic<Bool>(false)

    static func remember(_ path: String) {
        paths.withLock { $0.append(path) }
        if !registered.exchange(true, ordering: .acquiringAndReleasing) {
            atexit { TemporaryCAFiles.removeAll() }
        }
    }

    static func forget(_ path: String) {
        paths.withLock { $0.removeAll { $0 == path } }
    }

    static func removeAll() {
        for path in paths.withLock({ list -> [String] in defer { list.removeAll() }; return list }) { unlink(path) }
    }
}
