import Dispatch
import Foundation
import PushCore
import PushHTTP
import PushHTTPServer
import PushKafka
import PushRuntime

/// The `pushworker run` process: libcurl check, librdkafka logs, the worker, its
/// metrics/health listener and the SIGTERM drain (docs/pipeline.md, docs/operations.md). The CLI parses, this runs.
public enum WorkerProcess {
    /// Runs a worker until SIGTERM (or `stop` is set by the caller, for the demo).
    public static func run(_ configuration: Configuration, installSignalHandlers: Bool, started: (@Sendable (Worker) -> Void)? = nil) -> Int32 {
        let logger = Logger(level: configuration.logLevel, format: configuration.logFormat)
        do {
            let info = try LibcurlCheck.validate(allowCleartextHTTP2: false)
            logger.info("libcurl", ["curl.version": info.version, "curl.ssl": info.sslVersion])
        } catch {
            logger.error("refusing to start", ["error": error.description])
            return ExitCode.unavailable
        }
        logger.receiveKafkaLogs()
        let metrics = Metrics()
        metrics.registerStartup(.worker)
        logger.info("pushworker", ["version": BuildInfo.version, "commit": BuildInfo.commit])
        let worker: Worker
        do { worker = try Worker(configuration: configuration, logger: logger, metrics: metrics) } catch {
            logger.error("cannot start the worker", ["error": "\(error)"])
            return ExitCode.unavailable
        }
        var listener: HTTPListener?
        if let address = HostPort(configuration.httpAddr) {
            do {
                listener = try HTTPListener(address: address,
                                            handler: OperationsEndpoints.handler(metrics: metrics, readiness: { worker.readiness }))
                logger.info("http listener", ["http.addr": configuration.httpAddr, "http.port": "\(listener?.port ?? 0)"])
            } catch {
                logger.error("cannot listen for metrics/health", ["http.addr": configuration.httpAddr, "error": "\(error)"])
                return ExitCode.unavailable
            }
        }
        let signals = Signals()
        if installSignalHandlers {
            signals.handleTermination(logger: logger) { worker.requestStop() }
        }
        started?(worker)
        let status = worker.run()
        listener?.stop()
        signals.cancel()
        return status
    }
}
