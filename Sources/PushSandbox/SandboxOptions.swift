import PushCore
import PushInbox

/// What `pushworker-dev sandbox` runs with (validated by the command line, docs/sandbox.md).
public struct SandboxOptions: Sendable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 0
    public var portFile: String?
    public var threads = 1
    public var certificatePath: String?
    public var keyPath: String?
    public var certificateOutputPath: String?
    public var credentialsOutput: String?
    public var apps: [String] = []
    public var trustDirectories: [String] = []
    public var seed = SandboxSubscriptions.defaultSeed
    public var isAuthDisabled = false
    /// `--require-client-cert APP` (repeatable): these apps authenticate to APNs with a TLS
    /// client certificate the sandbox issues (their `apns.json` in `credentialsOutput` holds it),
    /// and the TLS handshake verifies client certificates against the sandbox's own CA.
    public var clientCertificateApps: [String] = []
    var faults = SandboxFaults()
    public var recordPath: String?
    public var maximumRecords = 100_000
    /// `--inbox HOST:PORT`: serve the inbox there (docs/sandbox.md "Inbox"); nil: no inbox.
    public var inboxAddress: HostPort?
    /// `--inbox-port-file`: the inbox's bound port is written there (before `portFile`).
    public var inboxPortFile: String?
    /// `--inbox-max`: notifications the inbox keeps. Default: 1000.
    public var inboxCapacity = 1000
    /// `--events-url`: the tracking endpoint presses (and `reportsDelivered`) are posted to.
    public var eventsURL: PlainHTTPURL?
    /// `--report-delivered`: post `delivered` for every accepted notification.
    public var reportsDelivered = false
    /// Verifies msgIds in the inbox (`--msgid-keys`, else `PUSHWORKER_MSGID_KEYS`); nil: shown unverified.
    public var msgIDKeyring: MsgIDKeyring?

    public init() {}

    /// Share (0…1) of tokens answered as unregistered (stable per token).
    public var unregisteredShare: Double { get { faults.unregisteredShare } set { faults.unregisteredShare = newValue } }
    /// Share of requests answered 429 with `Retry-After: retryAfterSeconds`.
    public var throttleShare: Double { get { faults.throttleShare } set { faults.throttleShare = newValue } }
    public var retryAfterSeconds: Int { get { faults.retryAfterSeconds } set { faults.retryAfterSeconds = newValue } }
    /// Share of requests answered 500/503.
    public var errorShare: Double { get { faults.errorShare } set { faults.errorShare = newValue } }
    /// Delay of every provider answer, ms.
    public var latencyMilliseconds: Int { get { faults.latencyMilliseconds } set { faults.latencyMilliseconds = newValue } }
    /// A further uniform 0…N ms of delay per provider answer.
    public var latencyJitterMilliseconds: Int { get { faults.latencyJitterMilliseconds } set { faults.latencyJitterMilliseconds = newValue } }

    /// Whether `id` can name a generated credentials folder.
    public static func isValidAppID(_ id: String) -> Bool { SandboxCredentials.isValidAppID(id) }
}
