import PushCore
import PushEncoding

/// One job document of an `enqueue` input: its bytes and the 1-based line it starts on.
public struct EnqueueDocument: Sendable, Equatable {
    public var line: Int
    public var bytes: ArraySlice<UInt8>
    public init(line: Int, bytes: ArraySlice<UInt8>) { self.line = line; self.bytes = bytes }
}

/// Splits `enqueue` input into job documents.
///
/// Rule: when the first non-space byte is `{` and the input holds more than one top-level JSON
/// value, it is NDJSON: one job per line (blank lines skipped, `\r\n` accepted), each
/// numbered by its line. Otherwise the whole input is one job (pretty-printed JSON is fine),
/// numbered by the line where it starts.
public enum EnqueueInput {
    public static func documents(_ bytes: [UInt8]) -> [EnqueueDocument] {
        guard let first = bytes.firstIndex(where: { !isSpace($0) }) else { return [] }
        let startLine = 1 + bytes[..<first].lazy.filter { $0 == 0x0A }.count
        guard bytes[first] == UInt8(ascii: "{"), hasSecondTopLevelValue(bytes, from: first) else {
            return [EnqueueDocument(line: startLine, bytes: bytes[first...])]
        }
        var documents: [EnqueueDocument] = []
        var line = 1
        var start = 0
        for index in 0...bytes.count where index == bytes.count || bytes[index] == 0x0A {
            var slice = bytes[start..<index]
            if slice.last == 0x0D { slice = slice.dropLast() }
            if slice.contains(where: { !isSpace($0) }) { documents.append(EnqueueDocument(line: line, bytes: slice)) }
            line += 1
            start = index + 1
        }
        return documents
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    /// Whether a non-space byte follows the end of the object starting at `start` (strings and
    /// escapes respected; an unterminated object means "no").
    static func hasSecondTopLevelValue(_ bytes: [UInt8], from start: Int) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if escaped { escaped = false }
                else if byte == UInt8(ascii: "\\") { escaped = true }
                else if byte == UInt8(ascii: "\"") { inString = false }
                else if byte == 0x0A { return true }   // a raw newline cannot be inside a JSON string: lines
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 {
                        return bytes[(index + 1)...].contains { !isSpace($0) }
                    }
                default: break
                }
            }
            index += 1
        }
        return false
    }
}

/// How `enqueue --batch N` splits a job: recipients in order, N per batch (the last may hold
/// fewer); batch k (from 0) gets jobId `<jobId>:<k>` with k zero-padded to 4 digits, or to the
/// digits of the last index when there are more than 10000 batches (so ids sort in batch
/// order). A job with no recipients gives one batch. Every other member is kept as received.
public enum JobBatcher {
    /// The jobId of batch `index` of `count`.
    public static func batchJobID(_ jobID: String, index: Int, count: Int) -> String {
        let width = max(4, String(max(count - 1, 0)).count)
        let digits = String(index)
        return jobID + ":" + String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// The number of batches of `recipients` recipients at `size` per batch.
    public static func batchCount(recipients: Int, size: Int) -> Int {
        max(1, (recipients + size - 1) / max(size, 1))
    }

    /// The batches of `job`: (jobId, encoded job) pairs. An audience job (docs/reference/job.md) is one
    /// request whatever the size: it goes out whole, unchanged, counted as one recipient.
    public static func batches(_ job: FanOutJob, size: Int) -> [(jobID: String, recipients: Int, bytes: [UInt8])] {
        if job.audience != nil { return [(job.jobID, 1, job.document.jsonBytes())] }
        let count = batchCount(recipients: job.recipients.count, size: size)
        var root = job.document.objectValue ?? JSONObject()
        return (0..<count).map { index in
            let lower = min(index * size, job.recipients.count)
            let upper = min(lower + size, job.recipients.count)
            let chunk = job.recipients[lower..<upper]
            let id = batchJobID(job.jobID, index: index, count: count)
            // Same as FanOutJob.encoded(recipients:) plus the batch jobId.
            root["jobId"] = .string(id)
            root["recipients"] = .array(chunk.map(\.json))
            return (id, chunk.count, JSONValue.object(root).jsonBytes())
        }
    }
}
