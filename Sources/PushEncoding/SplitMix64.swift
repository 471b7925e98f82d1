/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seeded generator, so benchmark workloads,
/// chaos/fuzz inputs and the sandbox's fault draws are reproducible from a seed. Not for secrets.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// A uniform double in [0, 1).
    public mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// SplitMix64's finalizer: spreads every input bit over the whole word (also a good finish
    /// for a weaker hash such as FNV-1a).
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
