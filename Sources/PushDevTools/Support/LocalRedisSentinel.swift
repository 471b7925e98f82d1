import Foundation
import PushRedis
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway Redis Sentinel deployment on loopback (chaos drills): one master, `replicas`
/// replicas and `sentinels` Sentinels (quorum 2, `down-after-milliseconds 1000`) watching it as
/// ``masterName``, every process stopped by PID when dropped. Sentinels run as `redis-sentinel`
/// (Debian's redis-sentinel package) or `redis-server --sentinel`.
///
/// The drills harm it as a crash or an operator would: ``kill(_:)`` (SIGKILL), ``restart(_:)``
/// (a data server comes back empty, and the Sentinels make it a replica of the master they
/// chose), ``failover()`` (`SENTINEL FAILOVER`). Commands go to one server at a time through a
/// plain ``RedisClient`` (never the client under test).
/// (`Tests/PushTestSupport/RedisSentinelServer.swift` is the same fixture for the client's own
/// tests, driven by `redis-cli`.)
package final class LocalRedisSentinel: Sendable {
    package let masterName = "pwmaster"
    /// The data servers' ports, the first master first (roles change after a failover).
    package let dataPorts: [UInt16]
    package let sentinelPorts: [UInt16]
    private let folder: URL
    private let server: String
    private let processes: Mutex<[UInt16: ChildProcess]>

    /// `redis+sentinel://127.0.0.1:s1,…/<masterName>`.
    package var url: String { "redis+sentinel://" + sentinelPorts.map { "127.0.0.1:\($0)" }.joined(separator: ",") + "/\(masterName)" }
    /// Every process's PID now.
    package var pids: [Int32] { processes.withLock { $0.values.filter(\.isRunning).map { $0.process.processIdentifier } } }

    package init(folder: URL, replicas: Int = 1, sentinels: Int = 3) throws {
        server = ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"]
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/redis-server"
        self.folder = folder
        processes = Mutex([:])
        var ports: [UInt16] = []
        while ports.count < 1 + replicas + sentinels {
            let port = ChildProcess.freePort()
            if !ports.contains(port) { ports.append(port) }
        }
        dataPorts = Array(ports.prefix(1 + replicas))
        sentinelPorts = Array(ports.suffix(sentinels))
        do {
            for (index, port) in dataPorts.enumerated() { try startData(port, replicaOf: index == 0 ? nil : dataPorts[0]) }
            for port in dataPorts where !ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) {
                throw DemoError("redis-server \(port) did not start")
            }
            for port in dataPorts.dropFirst() where !ChildProcess.waitFor(timeout: 15, { info(port, "replication").contains("master_link_status:up") }) {
                throw DemoError("replica \(port) did not sync")
            }
            for port in sentinelPorts { try startSentinel(port, master: dataPorts[0]) }
            for port in sentinelPorts where !ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) {
                throw DemoError("Sentinel \(port) did not start")
            }
            try waitUntilWatched(timeout: 30)
        } catch {
            stop()
            throw error
        }
    }

    private func startData(_ port: UInt16, replicaOf master: UInt16?) throws {
        let directory = folder.appendingPathComponent("redis-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory.path,
                         "--daemonize", "no", "--repl-diskless-sync-delay", "0"]
        if let master { arguments += ["--replicaof", "127.0.0.1", "\(master)"] }
        let child = try ChildProcess(server, arguments, log: directory.appendingPathComponent("redis-\(UUID().uuidString.prefix(4)).log"))
        processes.withLock { $0[port] = child }
    }

    private func startSentinel(_ port: UInt16, master: UInt16) throws {
        let directory = folder.appendingPathComponent("sentinel-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("sentinel.conf")
        try ([
            "port \(port)", "bind 127.0.0.1", "dir \(directory.path)",
            "sentinel monitor \(masterName) 127.0.0.1 \(master) 2", "sentinel down-after-milliseconds \(masterName) 1000",
            "sentinel failover-timeout \(masterName) 6000", "sentinel parallel-syncs \(masterName) 1",
        ].joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
        let log = directory.appendingPathComponent("sentinel.log")
        let child = FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-sentinel")
            ? try ChildProcess("/usr/bin/redis-sentinel", [config.path], log: log)
            : try ChildProcess(server, [config.path, "--sentinel"], log: log)
        processes.withLock { $0[port] = child }
    }

    /// Stops every process at once (SIGKILL: nothing is persisted anyway) and reaps them.
    package func stop() {
        let all = processes.withLock { processes -> [ChildProcess] in defer { processes.removeAll() }; return Array(processes.values) }
        for child in all { child.process.signal(SIGKILL) }
        for child in all { child.process.waitUntilExit() }
    }

    deinit { stop() }

    // MARK: - Commands to one server

    /// Runs `commands` as one pipeline on the server (or Sentinel) at `port` (a fresh plain connection).
    @discardableResult
    package func run(_ port: UInt16, _ commands: [[RedisArgument]]) throws -> [RedisReply] {
        let client = try RedisClient(url: "redis://127.0.0.1:\(port)", timeout: .seconds(3))
        defer { client.close() }
        return try client.pipeline(commands)
    }

    /// `INFO section` of the server at `port`, "" when it does not answer.
    package func info(_ port: UInt16, _ section: String) -> String {
        (try? run(port, [["INFO", .string(section)]]).first?.text) ?? ""
    }

    package var liveSentinels: [UInt16] {
        processes.withLock { processes in sentinelPorts.filter { processes[$0]?.isRunning == true } }
    }

    package var liveData: [UInt16] {
        processes.withLock { processes in dataPorts.filter { processes[$0]?.isRunning == true } }
    }

    /// The master's port as every live Sentinel names it, nil while they disagree or do not answer.
    package func masterPort() -> UInt16? {
        let answers = liveSentinels.map { port -> UInt16? in
            guard case .array(let parts)? = try? run(port, [["SENTINEL", "get-master-addr-by-name", .string(masterName)]]).first,
                  parts.count == 2, let text = parts[1].text else { return nil }
            return UInt16(text)
        }
        guard let first = answers.first, answers.allSatisfy({ $0 == first }) else { return nil }
        return first
    }

    /// Whether the server at `port` answers `ROLE` with `master`.
    package func isMaster(_ port: UInt16) -> Bool {
        guard case .array(let parts)? = try? run(port, [["ROLE"]]).first else { return false }
        return parts.first?.text == "master"
    }

    /// The live replicas of the master, in sync (`master_link_status:up`).
    package func syncedReplicas() -> [UInt16] {
        liveData.filter { !isMaster($0) && info($0, "replication").contains("master_link_status:up") }
    }

    /// Waits until every live Sentinel names the same live master and knows its live replicas
    /// and the other live Sentinels (what a failover needs).
    package func waitUntilWatched(timeout: Double) throws {
        let watched = ChildProcess.waitFor(timeout: timeout) {
            guard let master = masterPort(), isMaster(master) else { return false }
            let replicas = liveData.count - 1
            return liveSentinels.allSatisfy { sentinel in
                guard let known = try? run(sentinel, [["SENTINEL", "replicas", .string(masterName)], ["SENTINEL", "sentinels", .string(masterName)]]),
                      case .array(let replicaList) = known[0], case .array(let sentinelList) = known[1] else { return false }
                let up = replicaList.filter { entry in
                    guard case .array(let fields) = entry, let index = fields.firstIndex(where: { $0.text == "flags" }), index + 1 < fields.count else { return false }
                    return fields[index + 1].text == "slave"
                }.count
                return up >= replicas && sentinelList.count >= liveSentinels.count - 1
            }
        }
        if !watched { throw DemoError("the Sentinels do not agree on a master with its replicas") }
    }

    /// Waits until every live Sentinel names a master other than `old` that answers as master.
    package func waitForNewMaster(replacing old: UInt16, timeout: Double) -> UInt16? {
        var master: UInt16?
        let found = ChildProcess.waitFor(timeout: timeout) {
            master = masterPort()
            return master.map { $0 != old && isMaster($0) } == true
        }
        return found ? master : nil
    }

    /// `master_repl_offset` of a server: a master's minus its replica's is what the replica lacks.
    package func replicationOffset(_ port: UInt16) -> Int64? {
        for line in info(port, "replication").split(whereSeparator: \.isNewline) where line.hasPrefix("master_repl_offset:") {
            return Int64(line.dropFirst("master_repl_offset:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    // MARK: - Harm

    /// SIGKILL, as a crash: whatever the server had not replicated is gone.
    package func kill(_ port: UInt16) {
        guard let child = processes.withLock({ $0[port] }) else { return }
        child.process.signal(SIGKILL)
        child.process.waitUntilExit()
    }

    /// Starts a killed data server again on its port, empty; the Sentinels make it a replica.
    package func restart(_ port: UInt16) throws {
        try startData(port, replicaOf: nil)
        guard ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) else { throw DemoError("redis-server \(port) did not restart") }
    }

    /// `SENTINEL FAILOVER`: a replica is promoted without the Sentinels' agreement.
    package func failover() throws {
        guard let sentinel = liveSentinels.first else { throw DemoError("no live Sentinel") }
        let reply = try run(sentinel, [["SENTINEL", "FAILOVER", .string(masterName)]])[0]
        if let message = reply.errorMessage { throw DemoError("SENTINEL FAILOVER: \(message)") }
    }

    /// `FLUSHALL` on the master (a drill starts from empty state).
    package func flushAll() throws {
        guard let master = masterPort() else { throw DemoError("no agreed master") }
        try run(master, [["FLUSHALL"]])
    }
}
