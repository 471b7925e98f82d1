import PushHTTP

/// The client configuration the PushHTTP tests start from: defaults, plus `caFile` (the test
/// server's self-signed certificate, or nil) and whatever `adjust` changes.
func configuration(caFile: String?, _ adjust: (inout HTTPClientConfiguration) -> Void = { _ in }) -> HTTPClientConfiguration {
    var configuration = HTTPClientConfiguration()
    configuration.caFile = caFile
    adjust(&configuration)
    return configuration
}

/// Seconds since `start`.
func elapsed(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}
