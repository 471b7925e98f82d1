import Foundation
import PushCore
import Synchronization

/// The API's bearer tokens (`PUSHWORKER_API_TOKENS_FILE`, docs/reference/api.md "Authentication").
///
/// The file: one token per line; blank lines and lines starting with `#` are ignored; spaces
/// around a token are trimmed; a token is at least 16 characters of RFC 6750's `b64token`
/// alphabet (`A-Z a-z 0-9 - . _ ~ + /`, `=` padding at the end). A file without any token, or
/// with a line that is not a token, is refused as a whole (the line is named, never its text).
///
/// Checking: the presented token and every known one are hashed (SHA-256) and the digests
/// compared byte by byte without an early exit, against every token whatever matched: the time
/// taken does not depend on where the tokens differ or on which one matched.
///
/// The file is looked at again (its size, modification time and inode) at most once a second
/// by ``check(authorization:)``; a changed file is re-read, and a file that became unusable
/// keeps the tokens in force (``reloadProblem`` says why until it is fixed).
public final class APITokens: Sendable {
    public struct FileError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// The result of checking an `Authorization` header.
    public enum Verdict: Sendable, Equatable {
        /// No `Authorization: Bearer …` header.
        case missing
        /// A token was presented and is not one of the file's.
        case refused
        /// A known token; `tokenID` names its caller (a digest of the token, for idempotency
        /// keys and logs; never the token).
        case accepted(tokenID: String)
    }

    /// Shortest token accepted.
    public static let minimumLength = 16

    private struct State {
        var digests: [[UInt8]]
        var stamp: FileStamp?
        var checkedAt: Double
        var problem: String?
    }

    struct FileStamp: Equatable {
        var size: Int64
        var modified: Int64
        var inode: UInt64
    }

    public let path: String?
    private let state: Mutex<State>

    /// Reads `path`; throws when it cannot be read or holds no usable token.
    public convenience init(path: String) throws(FileError) {
        let (tokens, stamp) = try Self.read(path)
        self.init(path: path, tokens: tokens, stamp: stamp)
    }

    /// Fixed tokens, no file (tests).
    public convenience init(tokens: [String]) {
        self.init(path: nil, tokens: tokens, stamp: nil)
    }

    private init(path: String?, tokens: [String], stamp: FileStamp?) {
        self.path = path
        state = Mutex(State(digests: tokens.map { SHA256.hash(utf8: $0) }, stamp: stamp, checkedAt: -.infinity, problem: nil))
    }

    /// How many tokens are in force.
    public var count: Int { state.withLock { $0.digests.count } }

    /// Why the last re-read of a changed file failed (the previous tokens are still in force); nil when it is fine.
    public var reloadProblem: String? { state.withLock { $0.problem } }

    /// Checks an `Authorization` header value (`Bearer <token>`, the scheme case-insensitive).
    public func check(authorization: String?, now: Double = APITokens.now()) -> Verdict {
        reloadIfChanged(now: now)
        guard let authorization, let token = Self.bearerToken(authorization) else { return .missing }
        let presented = SHA256.hash(utf8: token)
        let digests = state.withLock { $0.digests }
        var matched = false
        for digest in digests where Self.constantTimeEquals(digest, presented) { matched = true }
        guard matched else { return .refused }
        return .accepted(tokenID: Self.tokenID(presented))
    }

    /// `Bearer <token>` → the token; nil for another scheme or an empty token.
    static func bearerToken(_ header: String) -> String? {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        let token = trimmed.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Whether two byte strings are equal, in time that depends only on their lengths (every
    /// byte is compared; the digests compared here are always 32 bytes).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// The caller's name in Redis keys and logs: the first 16 hex digits of the token's SHA-256.
    static func tokenID(_ digest: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in digest.prefix(8) { out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The tokens of a file's text, or why it is refused.
    public static func parse(_ text: String) -> Result<[String], FileError> {
        var tokens: [String] = []
        // "\r\n" is one Character: splitting on isNewline takes it (and "\n", "\r") as one line end.
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard isToken(line) else {
                return .failure(FileError("line \(number + 1) is not a token: at least \(minimumLength) characters of A-Z a-z 0-9 - . _ ~ + / (and = at the end)"))
            }
            tokens.append(line)
        }
        guard !tokens.isEmpty else { return .failure(FileError("no token in the file (one per line; # starts a comment)")) }
        return .success(tokens)
    }

    /// RFC 6750 §2.1 `b64token`, at least ``minimumLength`` long.
    static func isToken(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count >= minimumLength else { return false }
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        guard bytes[body.count...].allSatisfy({ $0 == UInt8(ascii: "=") }), !body.isEmpty else { return false }
        return body.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"): true
            default: false
            }
        }
    }

    static func read(_ path: String) throws(FileError) -> ([String], FileStamp?) {
        let stamp = Self.stamp(path)
        guard let data = FileManager.default.contents(atPath: path) else { throw FileError("cannot read \(path)") }
        guard data.count <= 1 << 20 else { throw FileError("\(path) is larger than 1 MiB") }
        guard let text = String(data: data, encoding: .utf8) else { throw FileError("\(path) is not UTF-8 text") }
        switch parse(text) {
        case .success(let tokens): return (tokens, stamp)
        case .failure(let error): throw FileError("\(path): \(error.message)")
        }
    }

    static func stamp(_ path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStamp(size: Int64(info.st_size), modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                         inode: UInt64(info.st_ino))
    }

    /// Re-reads the file when it changed (looked at once a second at most).
    private func reloadIfChanged(now: Double) {
        guard let path else { return }
        let due = state.withLock { state -> Bool in
            guard now - state.checkedAt >= 1 else { return false }
            state.checkedAt = now
            return true
        }
        guard due else { return }
        let stamp = Self.stamp(path)
        guard stamp != state.withLock({ $0.stamp }) else { return }
        do {
            let (tokens, newStamp) = try Self.read(path)
            state.withLock { $0.digests = tokens.map { SHA256.hash(utf8: $0) }; $0.stamp = newStamp; $0.problem = nil }
        } catch {
            state.withLock { $0.stamp = stamp; $0.problem = error.message }
        }
    }

    /// Monotonic seconds.
    public static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}
