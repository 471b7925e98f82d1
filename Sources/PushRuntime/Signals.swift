import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM and SIGINT of a production process (docs/operations.md): the first one starts the
/// graceful drain, a second one exits at once with status 1.
public final class Signals: Sendable {
    private let count = Atomic<Int>(0)
    private let sources = Mutex<[Source]>([])

    /// Thread safety: a dispatch source may be resumed and cancelled from any thread.
    private struct Source: @unchecked Sendable { let source: any DispatchSourceSignal }

    public init() {}

    /// Counts one more signal; returns how many arrived so far (the second one exits at once).
    public func received() -> Int { count.add(1, ordering: .relaxed).newValue }

    /// From now on SIGTERM and SIGINT no longer kill the process: the first one is logged and
    /// calls `drain` (on a global queue), a second one exits at once with status 1. The handlers
    /// stay until ``cancel()``.
    public func handleTermination(logger: Logger, drain: @escaping @Sendable () -> Void) {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                if received() > 1 {
                    logger.warning("second signal: exiting at once")
                    _exit(1)
                }
                logger.info("signal received: draining", ["signal": "\(number)"])
                drain()
            }
            source.resume()
            sources.withLock { $0.append(Source(source: source)) }
        }
    }

    /// Removes the handlers (the signals stay ignored).
    public func cancel() {
        let installed = sources.withLock { sources in
            defer { sources = [] }
            return sources
        }
        for installed in installed { installed.source.cancel() }
    }
}
