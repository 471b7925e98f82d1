import PushCore
import PushRuntime
import Synchronization

/// The per-request provider metrics of one platform (`pushworker_provider_request_seconds`,
/// `pushworker_provider_responses_total`), resolved once: a request's completion on the I/O
/// thread then updates two series without building label arrays, formatting the status or
/// hashing label strings.
package final class ProviderMetrics: Sendable {
    let provider: String
    let requestSeconds: HistogramSeries
    private let metrics: Metrics
    private let errors: CounterSeries
    /// Response counters by HTTP status, created on first sight (libcurl reports 100…999).
    private let byStatus = Mutex<[Int: CounterSeries]>([:])

    init(provider: String, metrics: Metrics) {
        self.provider = provider
        self.metrics = metrics
        requestSeconds = metrics.histogramSeries("pushworker_provider_request_seconds", [("provider", provider)])
        errors = metrics.counterSeries("pushworker_provider_responses_total", [("provider", provider), ("status", "error")])
    }

    /// One request ended after `seconds` with an HTTP answer (`status`) or none (nil).
    func record(seconds: Double, status: Int?) {
        requestSeconds.observe(seconds)
        guard let status else { return errors.increment() }
        let known = byStatus.withLock { $0[status] }
        if let known { return known.increment() }
        let series = metrics.counterSeries("pushworker_provider_responses_total", [("provider", provider), ("status", String(status))])
        byStatus.withLock { $0[status] = series }
        series.increment()
    }

    /// One per platform, in ``index(_:)`` order.
    static func all(_ metrics: Metrics) -> [ProviderMetrics] {
        [Platform.ios, .android, .web, .huawei].map { ProviderMetrics(provider: Deliverer.providerLabel($0), metrics: metrics) }
    }

    package static func index(_ platform: Platform) -> Int {
        switch platform {
        case .ios: 0
        case .android: 1
        case .web: 2
        case .huawei: 3
        }
    }
}
