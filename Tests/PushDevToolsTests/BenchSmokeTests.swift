import Foundation
import PushTestSupport
import Testing
@testable import PushWorker

/// `pushworker-dev bench e2e` on a tiny workload (the debug binary, allowed by flag): every process
/// starts and stops, every recipient has a result and the report carries every figure. No timing
/// assertions: the real benchmark is `make bench` on a release build.
@Suite("Bench smoke", .serialized)
struct BenchSmokeTests {
    @Test("bench e2e with a tiny N writes a complete report whose counts match")
    func tinyRun() throws {
        let folder = try TemporaryFolder.make(prefix: "bench-smoke")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let svg = folder.appendingPathComponent("chart.svg").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "e2e", "--allow-debug", "--quiet", "--notifications", "120", "--job-size", "25",
            "--dead-share", "0.1", "--h2load-requests", "200", "--report", report, "--svg", svg, "--timeout", "120",
        ], timeout: 180)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(3000))\nstdout: \(run.stdout.suffix(1500))")

        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["build"] as? String == "debug")
        let results = try #require(object["results"] as? [String: Any])
        #expect(results["expected"] as? Int == 120)
        #expect(results["distinct"] as? Int == 120)
        let byStatus = try #require(results["byStatus"] as? [String: Int])
        #expect(byStatus.values.reduce(0, +) == 120)
        #expect((byStatus["sent"] ?? 0) > 0)
        #expect((byStatus["invalid_token"] ?? 0) > 0, "a 10 % dead share over 120 recipients")
        let byPlatform = try #require(results["byPlatform"] as? [String: Int])
        #expect(Set(byPlatform.keys) == ["ios", "android", "web"])

        let worker = try #require(object["worker"] as? [String: Any])
        for key in ["notificationsPerSecond", "cpuMicrosPerNotification", "peakRSSBytes", "cpuSeconds"] {
            #expect(worker[key] is NSNumber, "worker.\(key)")
        }
        #expect((worker["peakRSSBytes"] as? Int ?? 0) > 0)
        let latency = try #require(object["latencyMs"] as? [String: Any])
        #expect(latency["p50"] is NSNumber && latency["p99"] is NSNumber)
        let h2load = try #require(object["h2load"] as? [String: Any])
        #expect(h2load["succeeded"] as? Int == 200, "h2load output: \(h2load["output"] ?? "")")
        #expect(h2load["cpuMicrosPerRequest"] is NSNumber)
        let ratio = try #require(object["ratio"] as? [String: Any])
        #expect(ratio["workerCPUPerNotificationToH2loadCPUPerRequest"] is NSNumber)
        // The libcurl floor ran with the same request and count, and the worker's I/O thread
        // was found by name.
        let floor = try #require(object["curlFloor"] as? [String: Any])
        #expect(floor["succeeded"] as? Int == 200, "curl floor output: \(floor["output"] ?? floor["skipped"] ?? "")")
        #expect((floor["libcurl"] as? String)?.hasPrefix("libcurl/") == true)
        #expect(ratio["curlFloorToH2load"] is NSNumber)
        #expect(ratio["ioThreadToCurlFloor"] is NSNumber)
        #expect(worker["ioThreadCPUMicrosPerNotification"] is NSNumber)
        // The rest of the worker, and the Web Push encryption on its own line (the mix has Web
        // Push recipients, so the worker encrypted and timed some messages).
        let rest = try #require(worker["restCPUMicrosPerNotification"] as? Double)
        let io = try #require(worker["ioThreadCPUMicrosPerNotification"] as? Double)
        let total = try #require(worker["cpuMicrosPerNotification"] as? Double)
        #expect(abs(rest + io - total) < 0.05)
        let perMessage = try #require(worker["webPushEncryptionCPUMicrosPerMessage"] as? Double)
        let perNotification = try #require(worker["webPushEncryptionCPUMicrosPerNotification"] as? Double)
        #expect(perMessage > 0 && perNotification > 0 && perNotification < perMessage)
        #expect(ratio["restToCurlFloor"] is NSNumber && ratio["restExclWebPushEncryptionToCurlFloor"] is NSNumber)
        // The report grades itself against its bounds (worker, I/O thread, rest), from the same run's ratios.
        let targets = try #require(object["targets"] as? [String: Any])
        let workerToFloor = try #require(ratio["workerToCurlFloor"] as? Double)
        let workerMet = try #require(targets["workerToCurlFloorMet"] as? Bool)
        #expect(workerMet == (workerToFloor <= 1.4) || abs(workerToFloor - 1.4) <= 0.005, "rounded \(workerToFloor)")
        #expect(targets["ioThreadToCurlFloorMet"] is Bool && targets["restToCurlFloorMet"] is Bool)
        #expect(floor["mode"] as? String == "tuned")
        // The tuned floor ran before the worker as well: the reference line is the mean of both runs.
        let before = try #require(floor["before"] as? [String: Any])
        #expect(before["succeeded"] as? Int == 200 && before["mode"] as? String == "tuned", "floor before: \(before["output"] ?? "")")
        let floorBefore = try #require(floor["cpuMicrosPerRequestBefore"] as? Double)
        let floorAfter = try #require(floor["cpuMicrosPerRequestAfter"] as? Double)
        let floorMean = try #require(floor["cpuMicrosPerRequest"] as? Double)
        #expect(abs(floorMean - (floorBefore + floorAfter) / 2) <= 0.011, "\(floorBefore) \(floorAfter) \(floorMean)")
        #expect(floorBefore == before["cpuMicrosPerRequest"] as? Double)
        let plain = try #require(object["curlFloorPlain"] as? [String: Any])
        #expect(plain["mode"] as? String == "plain" && plain["succeeded"] as? Int == 200, "plain floor: \(plain["output"] ?? "")")
        let throughput = try #require(object["throughput"] as? [String: Any])
        #expect((throughput["resultsPerBucket"] as? [Int])?.reduce(0, +) == 120)
        let redis = try #require(object["redis"] as? [String: Any])
        #expect(redis["mode"] as? String == "standalone")
        #expect((redis["roundTripsPerJob"] as? Double ?? 0) > 0, "claims and records of 5 jobs")

        let chart = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(chart.hasPrefix("<svg") && chart.contains("</svg>"))
    }

    @Test("bench e2e --compare-standalone: the same workload on redis-server and on a 3-master Redis Cluster, the figures side by side")
    func tinyCompareRun() throws {
        let folder = try TemporaryFolder.make(prefix: "bench-compare-smoke")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "e2e", "--allow-debug", "--quiet", "--notifications", "120", "--job-size", "25", "--compare-standalone", "--rounds", "1",
            "--report", report, "--timeout", "120",
        ], timeout: 240)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(3000))\nstdout: \(run.stdout.suffix(1500))")
        #expect(run.stdout.contains("worker CPU cluster / standalone"))
        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["schema"] as? String == "pushworker-bench-e2e-compare/1")
        let runs = try #require(object["runs"] as? [[String: Any]])
        #expect(runs.map { $0["mode"] as? String } == ["standalone", "cluster"])
        for entry in runs {
            let figures = try #require(entry["figures"] as? [String: Any])
            #expect(figures["complete"] as? Bool == true, "\(entry)")
            #expect((figures["redisRoundTripsPerJob"] as? Double ?? 0) > 0)
            #expect(figures["workerCPUMicrosPerNotification"] is NSNumber)
        }
        let cluster = try #require(runs.last?["figures"] as? [String: Any])
        #expect((cluster["nodePipelinesPerRoundTrip"] as? Double ?? 0) > 1, "a batch reaches several masters")
        let ratio = try #require(object["ratio"] as? [String: Any])
        #expect(ratio["clusterToStandaloneWorkerCPU"] is NSNumber)
    }

    @Test("bench e2e --redis-tls --compare-plain: one worker on the server's TLS port (rediss://, its CA), one on its plain port, in one run; the TLS/plain ratio")
    func tinyTLSCompareRun() throws {
        let folder = try TemporaryFolder.make(prefix: "bench-tls-smoke")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "e2e", "--allow-debug", "--quiet", "--notifications", "200", "--job-size", "25", "--redis-tls", "--compare-plain",
            "--h2load-requests", "0", "--report", report, "--timeout", "120",
        ], timeout: 240)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(3000))\nstdout: \(run.stdout.suffix(1500))")
        #expect(run.stdout.contains("worker CPU TLS / plain"), "\(run.stdout)")
        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((object["results"] as? [String: Any])?["distinct"] as? Int == 200)
        #expect((object["redis"] as? [String: Any])?["tls"] as? Bool == true)
        let comparison = try #require(object["comparison"] as? [String: Any])
        #expect((comparison["redisA"] as? String)?.hasPrefix("rediss://127.0.0.1:") == true, "\(comparison)")
        #expect((comparison["redisB"] as? String)?.hasPrefix("redis://127.0.0.1:") == true, "\(comparison)")
        #expect(comparison.keys.contains("tlsToPlainWorkerCPU"))
        let perWorker = try #require((object["worker"] as? [String: Any])?["perWorker"] as? [[String: Any]])
        #expect(perWorker.map { $0["variant"] as? String } == ["A", "B"])
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["bench", "e2e", "--compare-plain"]).status == 64, "--compare-plain needs --redis-tls")
    }

    @Test("bench http with a tiny N sends every request through the client, then h2load, and reports every figure")
    func tinyHTTPRun() throws {
        let folder = try TemporaryFolder.make(prefix: "bench-http-smoke")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "http", "--allow-debug", "--quiet", "--requests", "300", "--warmup", "50", "--h2load-requests", "200",
            "--report", report, "--timeout", "60",
        ], timeout: 120)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(3000))\nstdout: \(run.stdout.suffix(1500))")
        #expect(run.stdout.contains("pushworker-dev bench http (debug build"))

        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["schema"] as? String == "pushworker-bench-http/1")
        #expect(object["build"] as? String == "debug")
        let config = try #require(object["config"] as? [String: Any])
        #expect(config["requests"] as? Int == 300)
        #expect(config["warmupRequests"] as? Int == 50)
        #expect(config["httpConnections"] as? Int == 2 && config["httpStreams"] as? Int == 100)
        #expect((config["url"] as? String)?.contains("/3/device/") == true)
        #expect((config["bodyBytes"] as? Int ?? 0) > 200)
        let headers = try #require(config["headers"] as? [String])
        #expect(Set(["apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "authorization"]).isSubset(of: headers))
        let client = try #require(object["client"] as? [String: Any])
        #expect(client["completed"] as? Int == 300)
        #expect(client["byStatus"] as? [String: Int] == ["200": 300], "the sandbox accepts every request")
        #expect((client["transportErrors"] as? [String: Int])?.isEmpty == true)
        for key in ["requestsPerSecond", "cpuMicrosPerRequest", "cpuSeconds", "userSeconds", "systemSeconds", "wallSeconds"] {
            #expect(client[key] is NSNumber, "client.\(key)")
        }
        let sandbox = try #require(object["sandbox"] as? [String: Any])
        #expect(sandbox["cpuSeconds"] is NSNumber)
        let h2load = try #require(object["h2load"] as? [String: Any])
        #expect(h2load["succeeded"] as? Int == 200, "h2load output: \(h2load["output"] ?? "")")
        #expect(h2load["status2xx"] as? Int == 200)
        #expect(h2load["cpuMicrosPerRequest"] is NSNumber)
        let ratio = try #require(object["ratio"] as? [String: Any])
        #expect(ratio["clientCPUPerRequestToH2loadCPUPerRequest"] is NSNumber)
        let floor = try #require(object["curlFloor"] as? [String: Any])
        #expect(floor["succeeded"] as? Int == 200, "curl floor output: \(floor["output"] ?? floor["skipped"] ?? "")")
        #expect(ratio["clientToCurlFloor"] is NSNumber && ratio["curlFloorToH2load"] is NSNumber)
        // The tuned floor is the reference line; the plain one is kept for the record.
        #expect(floor["mode"] as? String == "tuned" && (floor["command"] as? String)?.contains("--mode tuned") == true)
        let plain = try #require(object["curlFloorPlain"] as? [String: Any])
        #expect(plain["succeeded"] as? Int == 200, "plain floor output: \(plain["output"] ?? "")")
        #expect(ratio["ioThreadToCurlFloor"] is NSNumber && ratio["curlFloorPlainToTuned"] is NSNumber)
        #expect(client["ioThreadCPUMicrosPerRequest"] is NSNumber)
        let latency = try #require(client["latencyMs"] as? [String: Any])
        #expect(latency["count"] as? Int == 300 && latency["p99"] is NSNumber)
        let lone = try #require(client["loneRequestLatencyMs"] as? [String: Any])
        #expect(lone["count"] as? Int == 200 && lone["p50"] is NSNumber)
    }

    @Test("bench http --url sends to that origin with a throwaway key: every request gets an answer")
    func httpAgainstURL() throws {
        let sandbox = try SandboxServer()
        let folder = try TemporaryFolder.make(prefix: "bench-http-url")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "http", "--allow-debug", "--quiet", "--url", sandbox.origin + "/", "--ca-file", sandbox.certificatePath,
            "--requests", "100", "--warmup", "0", "--h2load-requests", "0", "--report", report,
        ], timeout: 120)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(3000))")
        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let config = try #require(object["config"] as? [String: Any])
        #expect(config["target"] as? String == "url")
        #expect((config["url"] as? String)?.hasPrefix(sandbox.origin + "/3/device/") == true)
        let client = try #require(object["client"] as? [String: Any])
        #expect(client["completed"] as? Int == 100)
        let byStatus = try #require(client["byStatus"] as? [String: Int])
        #expect(byStatus.values.reduce(0, +) == 100)
        #expect(byStatus["200"] == nil, "the sandbox does not know the throwaway key: \(byStatus)")
        #expect(object["h2load"] is NSNull)
    }

    @Test("bench http --busy-core runs a SCHED_IDLE spinner on the client's CPUs for the run, reports it, and leaves none behind")
    func busyCore() throws {
        let folder = try TemporaryFolder.make(prefix: "bench-http-busy")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "http", "--allow-debug", "--quiet", "--requests", "100", "--warmup", "0", "--lone-requests", "0",
            "--h2load-requests", "0", "--client-cpus", "0", "--busy-core", "--report", report,
        ], timeout: 120)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(3000))")
        #expect(run.stdout.contains("busy core: SCHED_IDLE spinner"))
        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let config = try #require(object["config"] as? [String: Any])
        let busy = try #require(config["busyCore"] as? [String: Any], "config: \(config)")
        #expect(busy["cpus"] as? String == "0")
        #expect(busy["policy"] as? Int == 5, "SCHED_IDLE, read from /proc/<pid>/stat while it ran")
        #expect((busy["spinnerCPUSeconds"] as? Double ?? -1) >= 0)
        let pid = try #require(busy["pid"] as? Int)
        // Stopped and reaped with the run: no process of that pid runs `bench idle-spinner`.
        let cmdline = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
        #expect(!cmdline.contains("idle-spinner"), "spinner \(pid) outlived the bench")

        let plain = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "http", "--allow-debug", "--quiet", "--requests", "20", "--warmup", "0", "--lone-requests", "0",
            "--h2load-requests", "0", "--report", report,
        ], timeout: 120)
        #expect(plain.status == 0, "stderr: \(plain.stderr.suffix(3000))")
        let withoutData = try #require(FileManager.default.contents(atPath: report))
        let without = try #require(try JSONSerialization.jsonObject(with: withoutData) as? [String: Any])
        #expect((without["config"] as? [String: Any])?["busyCore"] is NSNull, "no spinner unless asked for")
    }

    @Test("bench http refuses a debug build unless allowed, and a --url that is not http(s)")
    func httpRefusals() throws {
        let debug = try runCommand(BuiltProducts.pushworkerDev, ["bench", "http", "--requests", "1"], timeout: 30)
        #expect(debug.status == 64)
        #expect(debug.stderr.contains("DEBUG build"))
        let url = try runCommand(BuiltProducts.pushworkerDev, ["bench", "http", "--allow-debug", "--url", "ftp://127.0.0.1:1"], timeout: 30)
        #expect(url.status == 64)
        #expect(url.stderr.contains("--url expects"))
        let busy = try runCommand(BuiltProducts.pushworkerDev, ["bench", "http", "--allow-debug", "--busy-core"], timeout: 30)
        #expect(busy.status == 64)
        #expect(busy.stderr.contains("--busy-core needs --client-cpus"))
    }

    @Test("bench e2e --compare-wrapper: two workers in one run, A and B, each one's window and the B/A ratio reported")
    func tinyABRun() throws {
        let folder = try TemporaryFolder.make(prefix: "bench-ab")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "e2e", "--allow-debug", "--quiet", "--notifications", "800", "--job-size", "25", "--partitions", "8",
            "--h2load-requests", "0", "--compare-wrapper", "/usr/bin/env BENCH_VARIANT=B", "--report", report, "--timeout", "150",
        ], timeout: 240)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(3000))\nstdout: \(run.stdout.suffix(1500))")
        #expect(run.stdout.contains("A/B in one run") && run.stdout.contains("B/A"))
        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let config = try #require(object["config"] as? [String: Any])
        #expect(config["workers"] as? Int == 2, "--workers defaults to 2 when comparing")
        let worker = try #require(object["worker"] as? [String: Any])
        let perWorker = try #require(worker["perWorker"] as? [[String: Any]])
        #expect(perWorker.map { $0["variant"] as? String } == ["A", "B"])
        // Each worker counted its own results in the 10–90 % window; together about 80 % of them.
        let counted = perWorker.compactMap { $0["windowNotifications"] as? Int }
        #expect(counted.count == 2 && counted.allSatisfy { $0 > 0 }, "both workers took jobs: \(perWorker)")
        #expect((560...800).contains(counted.reduce(0, +)), "window counts \(counted)")
        for entry in perWorker { #expect(entry["windowCPUMicrosPerNotification"] is NSNumber && entry["windowIOThreadMicrosPerNotification"] is NSNumber) }
        let comparison = try #require(object["comparison"] as? [String: Any])
        #expect(comparison["wrapperB"] as? String == "/usr/bin/env BENCH_VARIANT=B")
        #expect(comparison["wrapperA"] as? String == "")
        for key in ["aCPUMicrosPerNotification", "bCPUMicrosPerNotification", "bToA", "ioThreadBToA", "restBToA"] {
            #expect(comparison[key] is NSNumber, "comparison.\(key)")
        }
    }

    @Test("bench e2e refuses an odd --workers with a comparison, a relative --compare-binary and a relative --compare-wrapper")
    func compareRefusals() throws {
        let odd = try runCommand(BuiltProducts.pushworkerDev, ["bench", "e2e", "--allow-debug", "--workers", "3", "--compare-wrapper", "/usr/bin/env A=1"], timeout: 30)
        #expect(odd.status == 64)
        #expect(odd.stderr.contains("even --workers"))
        let binary = try runCommand(BuiltProducts.pushworkerDev, ["bench", "e2e", "--allow-debug", "--compare-binary", "pushworker"], timeout: 30)
        #expect(binary.status == 64)
        #expect(binary.stderr.contains("--compare-binary needs the absolute path"))
        let wrapper = try runCommand(BuiltProducts.pushworkerDev, ["bench", "e2e", "--allow-debug", "--compare-wrapper", "env A=1"], timeout: 30)
        #expect(wrapper.status == 64)
        #expect(wrapper.stderr.contains("--compare-wrapper needs an absolute path"))
    }

    @Test("bench e2e refuses a debug build unless allowed")
    func refusesDebug() throws {
        let run = try runCommand(BuiltProducts.pushworkerDev, ["bench", "e2e", "--notifications", "1"], timeout: 30)
        #expect(run.status == 64)
        #expect(run.stderr.contains("DEBUG build"))
    }

    @Test("bench decode reports the decode CPU and what a held job keeps live: under 4.2 × its message (it was 5 × with the recipients' trees)")
    func decode() throws {
        let folder = try TemporaryFolder.make(prefix: "bench-decode")
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = folder.appendingPathComponent("report.json").path
        let run = try runCommand(BuiltProducts.pushworkerDev, [
            "bench", "decode", "--allow-debug", "--quiet", "--recipients", "200", "--jobs", "5", "--rounds", "1", "--report", report,
        ], timeout: 120)
        #expect(run.status == 0, "stderr: \(run.stderr.suffix(2000))")
        #expect(run.stdout.contains("held job"))
        let data = try #require(FileManager.default.contents(atPath: report))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let decode = try #require(object["decode"] as? [String: Any])
        #expect((decode["cpuMicrosPerRecipient"] as? Double ?? 0) > 0)
        let held = try #require(object["held"] as? [String: Any])
        let perRecipient = try #require(held["bytesPerRecipient"] as? Double)
        let message = try #require(held["messageBytesPerRecipient"] as? Double)
        #expect(perRecipient > message, "a held job keeps at least its recipients' fields")
        // The recipients stay as slices of the message instead of trees (docs/performance.md
        // "Memory"): a held job is well under 4.2 × its message.
        #expect(try #require(held["heldToMessage"] as? Double) < 4.2, "held \(perRecipient) bytes per recipient, message \(message)")
        let refused = try runCommand(BuiltProducts.pushworkerDev, ["bench", "decode", "--recipients", "0", "--allow-debug"], timeout: 30)
        #expect(refused.status == 64)
    }
}
