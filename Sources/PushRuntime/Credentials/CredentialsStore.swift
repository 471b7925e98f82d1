import Foundation
import Synchronization

/// Credentials of every app, loaded on first use and reloaded when the mounted files change
/// (a Kubernetes Secret update swaps the `..data` symlink: we compare modification times).
public final class CredentialsStore: Sendable {
    private struct Entry { var credentials: AppCredentials; var stamp: [FileStamp]; var checkedAt: Double }
    private let directory: URL?
    private let entries = Mutex<[String: Entry]>([:])
    private let recheckSeconds: Double
    private let logger: Logger?

    /// `directory` nil ⇒ no app has credentials. `recheckSeconds` (default 10): how long a loaded
    /// app is used before its files are looked at again.
    public init(directory: String?, recheckSeconds: Double = 10, logger: Logger? = nil) {
        self.directory = directory.map { URL(fileURLWithPath: $0) }
        self.recheckSeconds = recheckSeconds
        self.logger = logger
    }

    public var hasDirectory: Bool { directory != nil }

    /// The app's credentials (nil when the folder has none). `appID` was validated by the job
    /// decoder (`[A-Za-z0-9._-]+`, not `.`/`..`), so it is a safe path component.
    public func credentials(for appID: String, now: Double = Date().timeIntervalSince1970) -> AppCredentials? {
        guard let directory else { return nil }
        // A certificate that expired since it was loaded is loaded again (and refused).
        func isCurrent(_ entry: Entry) -> Bool { entry.credentials.apnsCertificate.map { now < $0.identity.notAfter } ?? true }
        if let entry = entries.withLock({ $0[appID] }), now - entry.checkedAt < recheckSeconds, isCurrent(entry) {
            return entry.credentials
        }
        let folder = directory.appendingPathComponent(appID)
        let cached = entries.withLock { $0[appID] }
        let stamp = Self.stamp(folder, extra: cached?.credentials.extraFiles ?? [])
        if let entry = entries.withLock({ $0[appID] }), entry.stamp == stamp, isCurrent(entry) {
            entries.withLock { $0[appID]?.checkedAt = now }
            return entry.credentials
        }
        let credentials = AppCredentials.load(appID: appID, folder: folder, now: now)
        // Stamp what this load read (a new privateKeyFile included).
        let loadedStamp = credentials.extraFiles == cached?.credentials.extraFiles ?? [] ? stamp : Self.stamp(folder, extra: credentials.extraFiles)
        for problem in credentials.problems { logger?.error("credentials unusable", ["problem": problem]) }
        for warning in credentials.warnings { logger?.warning("credentials expire soon", ["problem": warning]) }
        entries.withLock { $0[appID] = Entry(credentials: credentials, stamp: loadedStamp, checkedAt: now) }
        return credentials
    }

    /// What identifies a file's version: `stat` following symbolic links (a Kubernetes Secret
    /// update swaps the `..data` link, so the file a path resolves to changes), with the inode,
    /// size and modification time in nanoseconds. A missing file has a stamp too.
    struct FileStamp: Equatable {
        var device: UInt64, inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int
        static let missing = FileStamp(device: 0, inode: 0, size: -1, seconds: 0, nanoseconds: 0)
    }

    static func stamp(_ folder: URL, extra: [String] = []) -> [FileStamp] {
        (["apns.json", "fcm.json", "webpush.json", "app.json", "hms.json"] + extra).map { name in
            var info = stat()
            guard stat(folder.appendingPathComponent(name).path, &info) == 0 else { return .missing }
            return FileStamp(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                             seconds: Int(info.st_mtim.tv_sec), nanoseconds: Int(info.st_mtim.tv_nsec))
        }
    }
}
