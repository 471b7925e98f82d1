import Foundation
import PushEncoding
import PushTestSupport
import Testing
@testable import PushRedis

@Suite("RedisClient against a real redis-server")
struct RedisClientTests {
    @Test("a pipeline of 10,000 commands returns 10,000 replies in order, in one round trip")
    func bigPipeline() throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url)
        let before = client.roundTripCount
        let commands: [[RedisArgument]] = (0..<10_000).map { _ in ["INCR", "counter"] }
        let replies = try client.pipeline(commands)
        #expect(client.roundTripCount == before + 1)
        #expect(replies.count == 10_000)
        #expect(replies == (1...10_000).map { RedisReply.integer(Int64($0)) })
    }

    @Test("every reply type is decoded, and an error reply does not break the pipeline")
    func replyTypes() throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url)
        let binary: [UInt8] = [0, 1, 2, 0xFF, 13, 10, 0]
        let replies = try client.pipeline([
            ["SET", "bin", .bytes(binary)],
            ["GET", "bin"],
            ["GET", "missing"],
            ["INCRBY", "n", .int(-42)],
            ["RPUSH", "list", "a", "", "c"],
            ["LRANGE", "list", 0, -1],
            ["EVAL", "return {1, 'two', {3, false}}", 0],
            ["NOSUCHCOMMAND", "x"],
            ["SET", "empty", ""],
            ["GET", "empty"],
            ["LRANGE", "nolist", 0, -1],
            ["PING"],
        ])
        #expect(replies.count == 12)
        #expect(replies[0] == .status("OK"))
        #expect(replies[1] == .string(binary))
        #expect(replies[2] == .null)
        #expect(replies[3] == .integer(-42))
        #expect(replies[4] == .integer(3))
        #expect(replies[5] == .array([.string(Array("a".utf8)), .string([]), .string(Array("c".utf8))]))
        #expect(replies[6] == .array([.integer(1), .string(Array("two".utf8)), .array([.integer(3), .null])]))
        #expect(replies[7].errorMessage?.hasPrefix("ERR unknown command") == true)
        #expect(replies[8] == .status("OK"))
        #expect(replies[9] == .string([]))
        #expect(replies[10] == .array([]))
        #expect(replies[11] == .status("PONG"))
        #expect(replies[1].text == String(decoding: binary, as: UTF8.self))
        #expect(replies[3].integerValue == -42)
    }

    @Test("arguments reach Redis byte for byte: integers at both ends of Int64, 0, non-ASCII and long strings, empty and binary bytes, a 1,236-argument command")
    func argumentsAsSent() throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url)
        let texts = ["", "ç€😀", String(repeating: "x", count: 100_000), "a\r\nb", "\u{0}"]
        let numbers: [Int64] = [0, 7, -1, 10, 1_000_000_007, .max, .min]
        var commands: [[RedisArgument]] = texts.map { ["ECHO", .string($0)] }
        commands += numbers.map { ["ECHO", .int($0)] }
        commands += [["ECHO", .bytes([])], ["ECHO", .bytes([0, 0xFF, 13, 10])]]
        let many: [RedisArgument] = ["RPUSH", "many"] + (0..<1234).map { .int(Int64($0)) }
        commands.append(many)
        let replies = try client.pipeline(commands)
        #expect(Array(replies.prefix(texts.count)) == texts.map { RedisReply.string(Array($0.utf8)) })
        #expect(Array(replies[texts.count..<(texts.count + numbers.count)]) == numbers.map { RedisReply.string(Array(String($0).utf8)) })
        #expect(replies[texts.count + numbers.count] == .string([]))
        #expect(replies[texts.count + numbers.count + 1] == .string([0, 0xFF, 13, 10]))
        #expect(replies.last == .integer(1234))
    }

    @Test("the async pipeline returns the same replies")
    func asyncPipeline() async throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url)
        let replies = try await client.pipeline([["SET", "k", "v"], ["GET", "k"]])
        #expect(replies == [.status("OK"), .string(Array("v".utf8))])
        #expect(await client.ping())
    }

    @Test("an empty command is refused before anything is sent (it would hang the connection)")
    func emptyCommand() throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url)
        #expect(throws: RedisError.self) { try client.pipeline([["PING"], []]) }
        #expect(try client.pipeline([]) == [])
        #expect(client.ping())
    }

    @Test("Redis going away gives a connection error, and the client recovers when a server returns on the same port")
    func downAndRecovery() throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url, timeout: .milliseconds(500))
        try client.command("SET", "before", "1")
        crash(server.process)
        #expect(!isListening(port: server.port))

        let started = Date()
        do {
            _ = try client.pipeline([["SET", "during", "1"], ["GET", "during"]])
            Issue.record("a call to a stopped Redis succeeded")
        } catch {
            #expect(error.isConnectionError)
        }
        // Reconnecting to nothing is refused quickly too, not a hang.
        do {
            _ = try client.pipeline([["PING"]])
            Issue.record("a call to a stopped Redis succeeded")
        } catch {
            #expect(error.isConnectionError)
        }
        #expect(!client.ping())
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(client.connectionErrorCount >= 2)

        let restarted = try startRedis(port: server.port)
        defer { crash(restarted) }
        #expect(try client.command("SET", "after", "2") == .status("OK"))
        #expect(try client.command("GET", "after") == .string(Array("2".utf8)))
        #expect(client.ping())
    }

    @Test("a Redis that stops answering times out with a connection error instead of hanging")
    func unresponsiveServerTimesOut() throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url, timeout: .milliseconds(300))
        #expect(client.ping())
        server.process.signal(SIGSTOP)
        defer { server.process.signal(SIGCONT) }
        let started = Date()
        do {
            _ = try client.pipeline([["PING"]])
            Issue.record("a call to a frozen Redis succeeded")
        } catch {
            #expect(error.isConnectionError)
        }
        #expect(Date().timeIntervalSince(started) < 3)
        server.process.signal(SIGCONT)
        #expect(eventually(timeout: 5) { client.ping() })
    }

    @Test("a client created while Redis is down connects once it is up")
    func lazyConnect() throws {
        let port = freeLoopbackPort()
        let client = try RedisClient(url: "redis://127.0.0.1:\(port)", timeout: .milliseconds(300))
        #expect(throws: RedisError.self) { try client.pipeline([["PING"]]) }
        let server = try startRedis(port: port)
        defer { crash(server) }
        #expect(client.ping())
    }

    @Test("a closed client refuses calls")
    func closed() throws {
        let server = try RedisServer()
        let client = try RedisClient(url: server.url)
        #expect(client.ping())
        client.close()
        client.close()
        #expect(!client.ping())
        #expect(throws: RedisError.self) { try client.pipeline([["PING"]]) }
    }

    @Test("password and database from the URL are applied on connect; a wrong password is a connection error")
    func authAndSelect() throws {
        let server = try RedisServer()
        let admin = try RedisClient(url: server.url)
        try admin.command("CONFIG", "SET", "requirepass", "s3cr:t")
        let wrong = try RedisClient(url: "redis://:nope@127.0.0.1:\(server.port)")
        do {
            _ = try wrong.pipeline([["PING"]])
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error.isConnectionError)
        }
        let right = try RedisClient(url: "redis://:s3cr%3At@127.0.0.1:\(server.port)/3")
        try right.command("SET", "where", "db3")
        #expect(try right.command("CLIENT", "INFO").text?.contains("db=3") == true)
        #expect(!right.endpoint.description.contains("s3cr"))
    }
}

@Suite("RedisEndpoint URL parsing")
struct RedisEndpointTests {
    @Test("valid URLs", arguments: [
        ("redis://127.0.0.1", RedisEndpoint(address: .tcp(host: "127.0.0.1", port: 6379))),
        ("redis://localhost:7000/2", RedisEndpoint(address: .tcp(host: "localhost", port: 7000), database: 2)),
        ("redis://:pw@h:1", RedisEndpoint(address: .tcp(host: "h", port: 1), password: "pw")),
        ("redis://u:p%40ss@h", RedisEndpoint(address: .tcp(host: "h", port: 6379), username: "u", password: "p@ss")),
        ("redis://[::1]:6380", RedisEndpoint(address: .tcp(host: "::1", port: 6380))),
        ("redis://h/", RedisEndpoint(address: .tcp(host: "h", port: 6379))),
        ("unix:///run/redis.sock", RedisEndpoint(address: .unix(path: "/run/redis.sock"))),
        ("unix:///run/redis.sock?db=4&password=x", RedisEndpoint(address: .unix(path: "/run/redis.sock"), password: "x", database: 4)),
    ])
    func valid(url: String, expected: RedisEndpoint) throws {
        #expect(try RedisEndpoint(url: url) == expected)
    }

    @Test("bad URLs throw a RedisError that is not a connection error", arguments: [
        "", "localhost:6379", "http://h", "redis://", "redis://h:0", "redis://h:65536",
        "redis://h:port", "redis://h/db", "redis://h/-1", "redis://user@h", "redis://[::1", "redis://:p%zz@h",
        "unix://relative.sock", "unix:///s?db=x", "unix:///s?foo=1",
    ])
    func invalid(url: String) {
        let error = #expect(throws: RedisError.self) { try RedisEndpoint(url: url) }
        #expect(error?.isConnectionError == false)
        #expect(throws: RedisError.self) { try RedisClient(url: url) }
    }

    @Test("a unix socket endpoint connects")
    func unixSocket() throws {
        let folder = try TemporaryFolder.make(prefix: "redis-unix")
        let socket = folder.appendingPathComponent("r.sock").path
        let port = freeLoopbackPort()
        let process = try TestProcess("/usr/bin/redis-server", [
            "--port", "\(port)", "--bind", "127.0.0.1", "--unixsocket", socket, "--save", "", "--dir", folder.path,
        ])
        defer { crash(process) }
        #expect(eventually(timeout: 10) { isListening(port: port) })
        let client = try RedisClient(url: "unix://\(socket)")
        #expect(client.ping())
    }
}

@Suite("RedisArgument decimal formatting")
struct RedisArgumentDecimalTests {
    /// RESP as the protocol states it (redis.io "RESP protocol spec": arrays of bulk strings),
    /// written the plain way, to check the two-pass formatter against.
    static func reference(_ commands: [[RedisArgument]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for command in commands {
            bytes += Array("*\(command.count)\r\n".utf8)
            for argument in command {
                let body: [UInt8]
                switch argument {
                case .string(let text): body = Array(text.utf8)
                case .bytes(let raw): body = raw
                case .int(let value): body = Array(String(value).utf8)
                case .dedupKey(let name): body = Array(name.text.utf8)
                }
                bytes += Array("$\(body.count)\r\n".utf8) + body + [0x0D, 0x0A]
            }
        }
        return bytes
    }

    @Test("a pipeline of commands is formatted byte for byte as RESP: empty, non-ASCII and binary arguments, every integer width")
    func pipelineFormat() {
        var generator = SplitMix64(seed: 14)
        var commands: [[RedisArgument]] = [["PING"], ["SET", "", .bytes([])], ["GET", "çé✓", .bytes([0, 13, 10, 255])], []]
        for _ in 0..<200 {
            var command: [RedisArgument] = ["EVALSHA"]
            for _ in 0..<Int(generator.next() % 12) {
                switch generator.next() % 3 {
                case 0: command.append(.int(Int64(bitPattern: generator.next()) >> Int64(generator.next() % 64)))
                case 1: command.append(.string(String(repeating: "k:{é}", count: Int(generator.next() % 40))))
                default: command.append(.bytes((0..<Int(generator.next() % 300)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
                }
            }
            commands.append(command)
        }
        commands.append([.int(.min), .int(.max), .int(0), .int(-1), .int(9), .int(10)])
        #expect(HiredisContext.format(commands) == Self.reference(commands))
        #expect(HiredisContext.format([]) == [])
    }

    @Test("integers are written as Redis parses them back", arguments: [Int64.min, -9_223_372_036_854_775_807, -1_000_000_000, -123_456_789, -1, 0, 7, 9, 10, 999_999_999, 1_000_000_000, 4_503_599_627_370_495, 1_234_567_890_123_456_789, Int64.max])
    func decimal(value: Int64) {
        #expect(HiredisContext.decimalLength(value) == String(value).utf8.count)
        #expect(HiredisContext.format([[.int(value)]]) == Array("*1\r\n$\(String(value).utf8.count)\r\n\(value)\r\n".utf8))
    }
}
