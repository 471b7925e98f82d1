// swift-tools-version:6.0
// pushworker — the delivery fleet of OpenNotification. See ../shared/DESIGN.md and README.md.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "pushworker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushworker", targets: ["pushworker"]),
        // The libcurl reference beside h2load in `pushworker bench` (docs/performance.md).
        .executable(name: "pushworker-curl-floor", targets: ["CurlFloor"]),
    ],
    targets: [
        // C modules: a module map + shim.h of typed wrappers for what Swift cannot call.
        .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka", providers: [.apt(["librdkafka-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CMalloc"), // glibc's malloc.h (allocator tuning at start-up)

        // Pure core: no C import, no I/O.
        .target(name: "PushCore", swiftSettings: strict),
        .target(name: "PushCrypto", dependencies: ["COpenSSL"], swiftSettings: strict),

        // Adapters: one Swift wrapper per C library.
        .target(name: "PushKafka", dependencies: ["CRdKafka"], swiftSettings: strict),
        .target(name: "PushRedis", dependencies: ["CHiredis"], swiftSettings: strict),
        .target(name: "PushHTTP", dependencies: ["CCurl"], swiftSettings: strict),
        .target(name: "PushHTTPServer", dependencies: ["CMicroHTTPD", "PushCore"], swiftSettings: strict),
        .target(name: "PushSandbox", dependencies: ["CNGHTTP2", "COpenSSL", "PushCrypto", "PushCore", "PushHTTPServer"], swiftSettings: strict),

        .target(
            name: "PushRuntime",
            dependencies: ["PushCore", "PushCrypto", "PushKafka", "PushRedis", "PushHTTP", "PushSandbox", "PushHTTPServer", "CMalloc"],
            swiftSettings: strict
        ),
        .executableTarget(name: "pushworker", dependencies: ["PushRuntime", "CMalloc"], swiftSettings: strict),
        // C, on purpose: libcurl with nothing of ours around it (the per-request floor).
        .executableTarget(name: "CurlFloor", dependencies: ["CCurl"]),

        .target(name: "PushTestSupport", path: "Tests/PushTestSupport", swiftSettings: strict),
        .testTarget(name: "PushCoreTests", dependencies: ["PushCore", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushCryptoTests", dependencies: ["PushCrypto"], swiftSettings: strict),
        .testTarget(name: "PushKafkaTests", dependencies: ["PushKafka", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushRedisTests", dependencies: ["PushRedis", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushHTTPTests", dependencies: ["PushHTTP", "PushSandbox", "PushCrypto", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushSandboxTests", dependencies: ["PushSandbox", "PushCrypto", "PushCore", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushRuntimeTests", dependencies: ["PushRuntime", "PushCore", "PushKafka", "PushCrypto", "PushHTTPServer", "PushTestSupport"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
