import PushCore
import PushEncoding

/// A fault set that applies to the requests whose `:path` starts with `pathPrefix`.
struct SandboxScopedFaults: Sendable, Equatable {
    var pathPrefix: String
    var faults: SandboxFaults
}

/// Every fault set: the default one and those scoped to a path prefix (longest prefix first).
/// A request gets the set of the longest prefix its path starts with, else the default.
struct SandboxFaultTable: Sendable, Equatable {
    var base: SandboxFaults
    /// Longest prefix first (kept so by ``setScoped(_:)``).
    private(set) var scoped: [SandboxScopedFaults] = []

    init(base: SandboxFaults) { self.base = base }

    /// The set for `path` and its prefix (nil: the default set).
    func faults(for path: Substring) -> (scope: String?, faults: SandboxFaults) {
        for entry in scoped where path.hasPrefix(entry.pathPrefix) { return (entry.pathPrefix, entry.faults) }
        return (nil, base)
    }

    /// The set of `scope` (nil: the default one).
    func faults(scope: String?) -> SandboxFaults {
        guard let scope else { return base }
        return scoped.first { $0.pathPrefix == scope }?.faults ?? SandboxFaults()
    }

    /// Replaces (or adds) the set of `scope`; nil `faults` removes a scoped set (the default set
    /// cannot be removed: it becomes `SandboxFaults()`).
    mutating func set(_ faults: SandboxFaults?, scope: String?) {
        guard let scope else {
            base = faults ?? SandboxFaults()
            return
        }
        scoped.removeAll { $0.pathPrefix == scope }
        if let faults { setScoped(SandboxScopedFaults(pathPrefix: scope, faults: faults)) }
    }

    private mutating func setScoped(_ entry: SandboxScopedFaults) {
        let index = scoped.firstIndex { $0.pathPrefix.utf8.count < entry.pathPrefix.utf8.count } ?? scoped.count
        scoped.insert(entry, at: index)
    }

    /// Changes the set of `scope` in place (a consumed one-shot fault).
    mutating func modify<T>(scope: String?, _ change: (inout SandboxFaults) -> T) -> T {
        guard let scope else { return change(&base) }
        guard let index = scoped.firstIndex(where: { $0.pathPrefix == scope }) else {
            var scratch = SandboxFaults()
            return change(&scratch)
        }
        return change(&scoped[index].faults)
    }
}

/// A `POST /_sandbox/faults` body: which set it changes, and how.
struct SandboxFaultUpdate: Sendable {
    /// The set changed: the requests whose path starts with this (nil: the default set).
    var pathPrefix: String?
    /// Start from no faults (a scoped set with nothing else given is removed).
    var clear = false
    /// Start an outage of this many seconds from now (0 ends one); default set only.
    var outageSeconds: Double?
    /// The fault members to apply.
    var members: [(key: String, value: JSONValue)] = []

    /// Nil when the body is not an object or `pathPrefix`, `clear` or `outageSeconds` is invalid.
    static func parse(_ body: JSONValue) -> SandboxFaultUpdate? {
        guard let members = body.objectValue?.members else { return nil }
        var update = SandboxFaultUpdate()
        for (key, value) in members {
            switch key {
            case "pathPrefix":
                guard let prefix = value.stringValue, prefix.hasPrefix("/") else { return nil }
                update.pathPrefix = prefix
            case "clear":
                guard case .bool(let flag) = value else { return nil }
                update.clear = flag
            case "outageSeconds":
                guard let seconds = value.numberValue, seconds >= 0, seconds <= 86400 else { return nil }
                update.outageSeconds = seconds
            default:
                update.members.append((key: key, value: value))
            }
        }
        if update.pathPrefix != nil && update.outageSeconds != nil { return nil }
        return update
    }
}

/// What the event loop does instead of answering a message send (docs/sandbox.md "Transport faults").
enum SandboxTransportFault: String, Sendable, CaseIterable {
    /// `RST_STREAM` `REFUSED_STREAM` (RFC 9113 §8.7): not processed, not recorded.
    case refuse
    /// `GOAWAY` with a last-stream-id below the stream (RFC 9113 §6.8): not processed, not recorded.
    case goaway
    /// Accepted and recorded, then `RST_STREAM` `INTERNAL_ERROR` instead of the response.
    case reset
    /// Accepted and recorded, then the connection is closed without an answer.
    case drop
    /// Accepted and recorded, never answered.
    case hang

    /// Decided before the request is processed.
    var isBeforeProcessing: Bool { self == .refuse || self == .goaway }
}
