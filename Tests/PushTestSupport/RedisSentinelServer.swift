import Foundation

/// A real Redis Sentinel deployment on loopback: one master, `replicas` replicas and `sentinels`
/// Sentinels (quorum 2) watching it as ``masterName``, each on a free port in a temporary folder
/// and stopped by its PID when the set is stopped or dropped.
///
/// Sentinels run as `redis-sentinel` (Debian's redis-sentinel package) or, without it,
/// `redis-server --sentinel`, with `down-after-milliseconds 1000`, so a killed master's replica
/// takes over within a few seconds. The set is ready when every replica is in sync and every
/// Sentinel knows the replicas and the other Sentinels. With `tls` every server and Sentinel
/// speaks only TLS (`tls-replication yes`), with ``RedisTLSFiles``' server certificate. With
/// `password` the master and replicas require it (`requirepass`, `masterauth`) and the Sentinels
/// use it (`sentinel auth-pass`); with `sentinelPassword` the Sentinels require their own.
/// The fixture drives the set with `redis-cli` only, never with the client under test.
///
/// Thread safety: `processes` and `killed` are only touched under `lock`.
public final class RedisSentinelServer: @unchecked Sendable {
    public let masterName = "pwmaster"
    /// The data servers' ports: the first master first (roles change after a failover).
    public let dataPorts: [UInt16]
    public let sentinelPorts: [UInt16]
    public let tls: RedisTLSFiles?
    public let password: String?
    public let sentinelPassword: String?
    private let lock = NSLock()
    private var processes: [UInt16: TestProcess] = [:]
    private var killed: Set<UInt16> = []
    private let folder: URL

    /// `redis[s]+sentinel://[:password@]127.0.0.1:s1,…/<masterName>`.
    public var url: String {
        "\(tls == nil ? "redis" : "rediss")+sentinel://\(password.map { ":\($0)@" } ?? "")"
            + sentinelPorts.map { "127.0.0.1:\($0)" }.joined(separator: ",") + "/\(masterName)"
    }

    public init(replicas: Int = 1, sentinels: Int = 3, tls: RedisTLSFiles? = nil, password: String? = nil, sentinelPassword: String? = nil) throws {
        self.tls = tls
        self.password = password
        self.sentinelPassword = sentinelPassword
        folder = try TemporaryFolder.make(prefix: "redis-sentinel")
        var ports: [UInt16] = []
        while ports.count < 1 + replicas + sentinels {
            let port = freeLoopbackPort()
            if !ports.contains(port) { ports.append(port) }
        }
        dataPorts = Array(ports.prefix(1 + replicas))
        sentinelPorts = Array(ports.suffix(sentinels))
        do {
            for (index, port) in dataPorts.enumerated() { try startData(port, replicaOf: index == 0 ? nil : dataPorts[0]) }
            for port in dataPorts { try waitListening(port) }
            for port in dataPorts.dropFirst() {
                guard eventually(timeout: 15, { (try? cli(port, ["INFO", "replication"]))?.contains("master_link_status:up") == true }) else {
                    throw TestSupportError("replica \(port) did not sync: \(log(port).suffix(600))")
                }
            }
            for port in sentinelPorts { try startSentinel(port, master: dataPorts[0]) }
            for port in sentinelPorts { try waitListening(port) }
            try waitUntilWatched(timeout: 20)
        } catch {
            stop()
            throw error
        }
    }

    private func waitListening(_ port: UInt16) throws {
        guard eventually(timeout: 10, { isListening(port: port) }) else { throw TestSupportError("\(port) did not start: \(log(port).suffix(600))") }
    }

    /// `redis-server` options: TLS-only with the test certificates, or plain.
    private func serverPortArguments(_ port: UInt16) -> [String] {
        guard let tls else { return ["--port", "\(port)"] }
        return tls.serverArguments(port: port) + ["--tls-replication", "yes"]
    }

    private func startData(_ port: UInt16, replicaOf master: UInt16?) throws {
        let directory = folder.appendingPathComponent("\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = serverPortArguments(port) + ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory.path,
                                                     "--daemonize", "no", "--repl-diskless-sync-delay", "0"]
        if let password { arguments += ["--requirepass", password, "--masterauth", password] }
        if let master { arguments += ["--replicaof", "127.0.0.1", "\(master)"] }
        let process = try TestProcess("/usr/bin/redis-server", arguments)
        lock.lock(); processes[port] = process; lock.unlock()
    }

    private func startSentinel(_ port: UInt16, master: UInt16) throws {
        let directory = folder.appendingPathComponent("sentinel-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lines = ["bind 127.0.0.1", "dir \(directory.path)", "sentinel resolve-hostnames no"]
        if let tls {
            lines += ["port 0", "tls-port \(port)", "tls-cert-file \(tls.serverCertificate)", "tls-key-file \(tls.serverKey)",
                      "tls-ca-cert-file \(tls.caFile)", "tls-auth-clients no", "tls-replication yes"]
        } else {
            lines.append("port \(port)")
        }
        lines += ["sentinel monitor \(masterName) 127.0.0.1 \(master) 2", "sentinel down-after-milliseconds \(masterName) 1000",
                  "sentinel failover-timeout \(masterName) 6000", "sentinel parallel-syncs \(masterName) 1"]
        if let password { lines.append("sentinel auth-pass \(masterName) \(password)") }
        if let sentinelPassword { lines += ["requirepass \(sentinelPassword)", "sentinel sentinel-pass \(sentinelPassword)"] }
        let config = directory.appendingPathComponent("sentinel.conf")
        try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
        let process: TestProcess
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-sentinel") {
            process = try TestProcess("/usr/bin/redis-sentinel", [config.path])
        } else {
            process = try TestProcess("/usr/bin/redis-server", [config.path, "--sentinel"])
        }
        lock.lock(); processes[port] = process; lock.unlock()
    }

    private func log(_ port: UInt16) -> String {
        lock.lock(); let process = processes[port]; lock.unlock()
        return (process?.stdout() ?? "") + (process?.stderr() ?? "")
    }

    /// Runs `redis-cli -p port arguments…` (with the TLS files and the password the port needs)
    /// and returns its raw output; throws if it fails or answers an error.
    @discardableResult
    public func cli(_ port: UInt16, _ arguments: [String]) throws -> String {
        var options = ["-h", "127.0.0.1", "-p", "\(port)"] + (tls?.cliArguments ?? [])
        let secret = sentinelPorts.contains(port) ? sentinelPassword : password
        if let secret { options += ["--no-auth-warning", "-a", secret] }
        let result = try runCommand("/usr/bin/redis-cli", options + arguments, timeout: 30)
        let output = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, !output.hasPrefix("ERR"), !output.hasPrefix("(error)"), !output.hasPrefix("NOAUTH") else {
            throw TestSupportError("redis-cli -p \(port) \(arguments.joined(separator: " ")): \(output) \(result.stderr)")
        }
        return output
    }

    /// The master's port as `sentinel` (default: every live Sentinel, which must agree) sees it.
    public func masterPort(asking sentinel: UInt16? = nil) -> UInt16? {
        let asked = sentinel.map { [$0] } ?? liveSentinels
        let answers = asked.map { port in
            (try? cli(port, ["SENTINEL", "get-master-addr-by-name", masterName]))?.split(separator: "\n").last.flatMap { UInt16($0) }
        }
        guard let first = answers.first, answers.allSatisfy({ $0 == first }) else { return nil }
        return first
    }

    public var liveSentinels: [UInt16] {
        lock.lock(); defer { lock.unlock() }
        return sentinelPorts.filter { !killed.contains($0) }
    }

    /// Whether `port` answers `ROLE` with `master`.
    public func isMaster(_ port: UInt16) -> Bool {
        (try? cli(port, ["ROLE"]))?.split(separator: "\n").first == "master"
    }

    /// Waits until every live Sentinel names the same live master, knows its live replicas (in
    /// sync, not down) and every other live Sentinel.
    public func waitUntilWatched(timeout: Double = 20) throws {
        let watched = eventually(timeout: timeout) {
            guard let master = masterPort(), isMaster(master) else { return false }
            lock.lock(); let liveData = dataPorts.filter { !killed.contains($0) }; lock.unlock()
            let expectedReplicas = liveData.count - 1
            for sentinel in liveSentinels {
                guard let replicas = try? cli(sentinel, ["SENTINEL", "replicas", masterName]),
                      let others = try? cli(sentinel, ["SENTINEL", "sentinels", masterName]) else { return false }
                let up = replicas.components(separatedBy: "\nflags\n").dropFirst().filter { $0.hasPrefix("slave\n") }.count
                let known = others.components(separatedBy: "\nname\n").count - 1 + (others.hasPrefix("name\n") ? 1 : 0)
                if up < expectedReplicas || known < liveSentinels.count - 1 { return false }
            }
            return true
        }
        if !watched {
            throw TestSupportError("the Sentinels do not agree on \(masterName): \(liveSentinels.map { "\($0): \((try? cli($0, ["SENTINEL", "master", masterName])) ?? "?")" })")
        }
    }

    /// `SENTINEL FAILOVER`: the master's replica is promoted (no agreement needed), the old master
    /// becomes its replica. Waits until every Sentinel names the new master and it answers as
    /// master; returns its port.
    @discardableResult
    public func failover(timeout: Double = 20) throws -> UInt16 {
        guard let old = masterPort() else { throw TestSupportError("no agreed master") }
        try cli(liveSentinels[0], ["SENTINEL", "FAILOVER", masterName])
        return try waitForNewMaster(replacing: old, timeout: timeout)
    }

    /// Waits until every live Sentinel names a master other than `old` and it answers as master.
    @discardableResult
    public func waitForNewMaster(replacing old: UInt16, timeout: Double = 20) throws -> UInt16 {
        var master: UInt16?
        guard eventually(timeout: timeout, {
            master = masterPort()
            return master.map { $0 != old && isMaster($0) } == true
        }), let master else { throw TestSupportError("no new master after \(old)") }
        return master
    }

    /// Kills a data server or Sentinel at once (SIGKILL), as a crash would.
    public func kill(_ port: UInt16) {
        lock.lock(); let process = processes[port]; killed.insert(port); lock.unlock()
        process?.signal(SIGKILL)
        process?.wait(timeout: 5)
    }

    /// Stops every process (SIGKILL: the test data need not survive).
    public func stop() {
        lock.lock()
        let all = processes
        processes = [:]
        lock.unlock()
        for process in all.values { process.signal(SIGKILL) }
        for process in all.values { process.wait(timeout: 5) }
        try? FileManager.default.removeItem(at: folder)
    }

    deinit { stop() }
}
