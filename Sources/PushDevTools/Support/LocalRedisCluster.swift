import Foundation
import PushRedis

/// A throwaway Redis Cluster on loopback (bench): `masters` × (1 + `replicasPerMaster`)
/// `redis-server --cluster-enabled yes` joined by `redis-cli --cluster create`, every node
/// stopped by PID when dropped. Each node needs its port `p` and the cluster bus `p + 10000`
/// free, so `p < 55535`.
final class LocalRedisCluster: Sendable {
    let ports: [UInt16]
    let children: [ChildProcess]
    /// `redis+cluster://` with every node as a seed.
    var url: String { "redis+cluster://" + ports.map { "127.0.0.1:\($0)" }.joined(separator: ",") }

    init(folder: URL, masters: Int = 3, replicasPerMaster: Int = 0, nodeTimeoutMs: Int = 5000) throws {
        guard masters >= 3 else { throw DemoError("a Redis Cluster needs at least 3 masters") }
        let server = ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"]
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/redis-server"
        let cli = ["/usr/bin/redis-cli", "/usr/local/bin/redis-cli"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let cli else { throw DemoError("redis-cli not found (Debian: apt-get install redis-tools)") }
        var chosen: [UInt16] = []
        var attempts = 0
        while chosen.count < masters * (1 + replicasPerMaster) {
            attempts += 1
            guard attempts < 10_000 else { throw DemoError("no free port pairs below 55535") }
            let port = ChildProcess.freePort()
            guard port > 1024, port < 55535, !chosen.contains(port), !chosen.contains(port + 10000), !chosen.contains(port &- 10000),
                  !LocalRedis.answers(port: port + 10000) else { continue }
            chosen.append(port)
        }
        ports = chosen
        var started: [ChildProcess] = []
        for port in chosen {
            let directory = folder.appendingPathComponent("redis-cluster-\(port)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            started.append(try ChildProcess(server, [
                "--port", "\(port)", "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                "--cluster-config-file", directory.appendingPathComponent("nodes.conf").path,
                "--cluster-node-timeout", "\(nodeTimeoutMs)", "--save", "", "--appendonly", "no",
                "--repl-diskless-sync-delay", "0", "--dir", directory.path, "--daemonize", "no",
            ], log: directory.appendingPathComponent("redis.log")))
        }
        children = started
        for port in chosen where !ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) {
            stop()
            throw DemoError("cluster node \(port) did not start")
        }
        let create = try ProcessStats.runMeasured(
            [cli, "--cluster", "create"] + chosen.map { "127.0.0.1:\($0)" } + ["--cluster-replicas", "\(replicasPerMaster)", "--cluster-yes"],
            output: folder.appendingPathComponent("redis-cluster-create.log").path
        )
        guard create.status == 0 else {
            stop()
            throw DemoError("redis-cli --cluster create failed (see \(folder.path)/redis-cluster-create.log)")
        }
        let client = try RedisClusterClient(url: url, options: .init(timeout: .seconds(1)))
        defer { client.close() }
        guard ChildProcess.waitFor(timeout: 30, { client.ping() }) else {
            stop()
            throw DemoError("the Redis Cluster did not become healthy")
        }
    }

    func stop() {
        for child in children { child.stop(grace: 2) }
    }

    deinit { stop() }
}
