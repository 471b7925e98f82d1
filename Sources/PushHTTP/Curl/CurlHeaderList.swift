import CCurl

/// The `curl_slist` of `CURLOPT_HTTPHEADER`, built in memory this object owns and reuses: one
/// array of list nodes and one byte buffer holding every line, NUL-terminated, back to back.
/// Once both are large enough a request's header list costs no allocation (`curl_slist_append`
/// costs two per line: the node and a copy of the line).
///
/// libcurl only reads the list (it neither copies nor frees it: the application owns it) and
/// needs it until the transfer ends. The owner rebuilds it only while its handle is idle, and
/// sets `CURLOPT_HTTPHEADER` again after every `build`, since a build may move the buffers.
/// Confined to the I/O thread.
final class CurlHeaderList {
    private var nodes: UnsafeMutablePointer<curl_slist>
    private var nodeCapacity: Int
    private var bytes: UnsafeMutablePointer<UInt8>
    private var byteCapacity: Int
    private var count = 0
    private var used = 0

    init(nodes: Int = 16, bytes: Int = 2048) {
        nodeCapacity = nodes
        byteCapacity = bytes
        self.nodes = .allocate(capacity: nodes)
        self.bytes = .allocate(capacity: bytes)
    }

    deinit {
        nodes.deallocate()
        bytes.deallocate()
    }

    /// Makes room for `lines` lines of `bytes` bytes in all (NULs included) and empties the list.
    func reset(lines: Int, bytes needed: Int) {
        if lines > nodeCapacity {
            nodes.deallocate()
            nodeCapacity = max(lines, nodeCapacity * 2)
            nodes = .allocate(capacity: nodeCapacity)
        }
        if needed > byteCapacity {
            bytes.deallocate()
            byteCapacity = max(needed, byteCapacity * 2)
            bytes = .allocate(capacity: byteCapacity)
        }
        count = 0
        used = 0
    }

    /// Appends the line `name: value`, or `name;` for an empty value (libcurl's syntax for a
    /// header sent with no value; `name:` would remove it). Needs the room `reset` made.
    func append(name: String, value: String) {
        let start = used
        copy(name)
        if value.isEmpty {
            put(UInt8(ascii: ";"))
        } else {
            put(UInt8(ascii: ":"))
            put(UInt8(ascii: " "))
            copy(value)
        }
        finishLine(from: start)
    }

    /// Appends a fixed line such as `Expect:`.
    func append(line: StaticString) {
        let start = used
        line.withUTF8Buffer { source in
            guard let base = source.baseAddress else { return }
            (bytes + used).update(from: base, count: source.count)
            used += source.count
        }
        finishLine(from: start)
    }

    /// The list for `CURLOPT_HTTPHEADER` (nil when empty), valid until the next `reset`.
    var head: UnsafeMutablePointer<curl_slist>? { count > 0 ? nodes : nil }

    /// Bytes a `name: value` line takes in the buffer, NUL included.
    static func lineBytes(name: String, value: String) -> Int {
        name.utf8.count + (value.isEmpty ? 1 : 2 + value.utf8.count) + 1
    }

    private func finishLine(from start: Int) {
        put(0)
        let node = nodes + count
        node.initialize(to: curl_slist(data: UnsafeMutableRawPointer(bytes + start).assumingMemoryBound(to: CChar.self), next: nil))
        if count > 0 { (node - 1).pointee.next = node }
        count += 1
    }

    @inline(__always)
    private func put(_ byte: UInt8) {
        bytes[used] = byte
        used += 1
    }

    private func copy(_ text: String) {
        let copied = text.utf8.withContiguousStorageIfAvailable { source -> Int in
            if let base = source.baseAddress { (bytes + used).update(from: base, count: source.count) }
            return source.count
        }
        if let copied {
            used += copied
        } else {
            for byte in text.utf8 { put(byte) }
        }
    }
}
