// swift-tools-version:6.0
// pushworker — the delivery fleet of OpenNotification. See README.md and docs/reference/.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "pushworker",
    platforms: [.macOS(.v15)],
    products: [
        // Production: the worker, the tracking endpoint and the operators' commands (the image ships only this).
        .executable(name: "pushworker", targets: ["pushworker"]),
        // Development: the sandbox, the development broker, the demo, the benchmarks, the chaos drills.
        .executable(name: "pushworker-dev", targets: ["pushworker-dev"]),
        // The libcurl reference beside h2load in `pushworker-dev bench` (docs/performance.md).
        .executable(name: "pushworker-curl-floor", targets: ["CurlFloor"]),
    ],
    targets: [
        // C modules: a module map + shim.h of typed wrappers for what Swift cannot call
        // (variadic functions, function-like macros, composite constants); no logic.
        .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka", providers: [.apt(["librdkafka-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // C logic over those libraries, each with its own header (include/) and test target.
        .target(name: "CPushCrypto", dependencies: ["COpenSSL"]),  // RFC 8291 sender-side P-256 ECDH
        .target(name: "CPushHTTPD", dependencies: ["CMicroHTTPD"]), // libmicrohttpd daemon start, client address text
        .target(name: "CPushCurl", dependencies: ["CCurl"]), // the HTTP/2 I/O thread's epoll loop, request storage
        .target(name: "CPushKafka", dependencies: ["CRdKafka"]), // rd_kafka_produceva's argument list
        .target(name: "CPushSpawn"), // posix_spawn for the tools' and tests' child processes (Foundation's Process crashes)
        .target(name: "CPushBuildInfo"), // the git commit written at build time (scripts/write-build-info.sh)
        // TLS under hiredis 0.14 (which has none): OpenSSL on hiredis's socket, its output buffer and reply reader.
        .target(name: "CPushRedisTLS", dependencies: ["CHiredis", "COpenSSL"]),
        // jemalloc as the process's malloc (libjemalloc-dev) and its defaults: the worker frees
        // on other threads than it allocates (docs/performance.md "The allocator").
        .target(name: "CPushAllocator", linkerSettings: [.linkedLibrary("jemalloc")]),

        // Pure core: no C import, no I/O (and the one JSON parser/writer, base64url, RFC 3339).
        .target(name: "PushEncoding", swiftSettings: strict), // the one JSON parser/writer, base64url, RFC 3339, SplitMix64
        .target(name: "PushCore", dependencies: ["PushEncoding"], swiftSettings: strict),
        // Pure too: the provider payload builders and the reading of their answers.
        .target(name: "PushProviders", dependencies: ["PushCore", "PushEncoding"], swiftSettings: strict),
        .target(name: "PushCrypto", dependencies: ["COpenSSL", "CPushCrypto", "PushCore", "PushEncoding"], swiftSettings: strict),
        // Pure too: the pipeline's decisions (an attempt's outcome, breakers, admission, leases).
        .target(name: "PushPipeline", dependencies: ["PushCore", "PushProviders"], swiftSettings: strict),

        // Adapters: one Swift wrapper per C library.
        .target(name: "PushKafka", dependencies: ["CRdKafka", "CPushKafka", "PushCore", "PushEncoding"], swiftSettings: strict),
        .target(name: "PushRedis", dependencies: ["CHiredis", "CPushRedisTLS", "PushCore", "PushEncoding"], swiftSettings: strict),
        .target(name: "PushHTTP", dependencies: ["CCurl", "CPushCurl"], swiftSettings: strict),
        .target(name: "PushHTTPServer", dependencies: ["CMicroHTTPD", "CPushHTTPD", "PushCore", "PushEncoding"], swiftSettings: strict),

        // What every production process shares: logging, metrics and the operations endpoints,
        // configuration loading, credentials, signals, build info.
        .target(
            name: "PushRuntime",
            dependencies: ["PushCore", "PushEncoding", "PushProviders", "PushCrypto", "PushKafka", "PushRedis", "PushHTTP", "PushHTTPServer", "CPushAllocator", "CPushBuildInfo"],
            swiftSettings: strict
        ),
        // One provider request per recipient or batch: credentials → auth headers and tokens, the
        // transport, the answer's classification, the provider metrics.
        .target(name: "PushDelivery", dependencies: ["PushRuntime", "PushCore", "PushEncoding", "PushProviders", "PushCrypto", "PushHTTP"], swiftSettings: strict),
        // What runs in production: the worker and the tracking endpoint, each on the runtime.
        .target(
            name: "PushWorker",
            dependencies: ["PushRuntime", "PushDelivery", "PushCore", "PushEncoding", "PushProviders", "PushPipeline", "PushCrypto", "PushKafka", "PushRedis", "PushHTTP", "PushHTTPServer", "CPushAllocator"],
            swiftSettings: strict
        ),
        .target(name: "PushEvents", dependencies: ["PushRuntime", "PushCore", "PushEncoding", "PushCrypto", "PushHTTP", "PushKafka", "PushRedis", "PushHTTPServer"], swiftSettings: strict),

        // The operators' tools of the production executable: enqueue (job files to the jobs
        // topic) and the declared topics (print, apply).
        .target(name: "PushTools", dependencies: ["PushCore", "PushEncoding", "PushKafka"], swiftSettings: strict),
        // The operators' HTTP API (`pushworker api`): jobs to the jobs topic, campaign control;
        // routing, tokens, bodies and errors pure, the process on the runtime.
        .target(name: "PushAPI", dependencies: ["PushRuntime", "PushCore", "PushEncoding", "PushKafka", "PushRedis", "PushHTTPServer"], swiftSettings: strict),
        // The command plumbing both executables share: the argument parser, the dispatch, `--help`.
        .target(name: "PushCLI", dependencies: ["PushRuntime", "PushCore", "PushKafka"], swiftSettings: strict),

        // Development only (never linked into the production executable): the provider sandbox,
        // librdkafka's mock cluster, benchmarks, chaos drills, the demo.
        .target(name: "PushSandbox", dependencies: ["CNGHTTP2", "COpenSSL", "PushCrypto", "PushCore", "PushEncoding", "PushProviders", "PushHTTPServer", "PushInbox"], swiftSettings: strict),
        // The sandbox's web inbox: the accepted notifications drawn per surface, their page and API, the tracking posts.
        .target(name: "PushInbox", dependencies: ["PushCore", "PushEncoding", "PushProviders", "PushHTTPServer"], swiftSettings: strict),
        .target(name: "PushKafkaMock", dependencies: ["CRdKafka", "PushKafka"], swiftSettings: strict),
        .target(name: "PushProcess", dependencies: ["CPushSpawn"], swiftSettings: strict), // child processes (posix_spawn)
        .target(
            name: "PushDevTools",
            dependencies: ["PushRuntime", "PushTools", "PushWorker", "PushDelivery", "PushEvents", "PushCore", "PushEncoding", "PushCrypto", "PushKafka", "PushKafkaMock", "PushRedis", "PushHTTP", "PushSandbox", "PushProcess"],
            swiftSettings: strict
        ),
        // The chaos drills (`pushworker-dev chaos`, `make chaos`): the fleet, Redis and Kafka harmed on purpose.
        .target(name: "PushChaos", dependencies: ["PushRuntime", "PushTools", "PushWorker", "PushEvents", "PushCore", "PushEncoding", "PushCrypto", "PushKafka", "PushKafkaMock", "PushRedis", "PushHTTP", "PushSandbox", "PushProcess", "PushDevTools"], swiftSettings: strict),

        // The production executable: run, events, api, campaign, render, send, enqueue, topics, msgid, config, inspect, version.
        .executableTarget(
            name: "pushworker",
            dependencies: ["PushCLI", "PushRuntime", "PushTools", "PushAPI", "PushWorker", "PushDelivery", "PushEvents", "PushCore", "PushEncoding", "PushProviders", "PushPipeline", "PushCrypto", "PushKafka", "PushRedis", "PushHTTP", "PushHTTPServer", "CPushAllocator"],
            swiftSettings: strict
        ),
        // The development executable: sandbox, dev-broker, demo, bench, chaos.
        .executableTarget(
            name: "pushworker-dev",
            dependencies: ["PushCLI", "PushRuntime", "PushDevTools", "PushChaos", "PushSandbox", "PushInbox", "PushKafkaMock", "PushWorker", "PushEvents", "PushCore", "PushEncoding", "PushProviders", "PushPipeline", "PushCrypto", "PushKafka", "PushRedis", "PushHTTP", "PushProcess", "CPushAllocator"],
            swiftSettings: strict
        ),
        // C, on purpose: libcurl with nothing of ours around it (the per-request floor).
        .executableTarget(name: "CurlFloor", dependencies: ["CCurl"]),

        // Test fixtures and the fakes of the pipeline's ports (delivery state, message sink, provider transport, clock).
        .target(name: "PushTestSupport", dependencies: ["PushRuntime", "PushCore", "PushEncoding", "PushKafka", "PushProcess", "PushRedis", "PushProviders", "PushPipeline", "PushWorker", "PushDelivery"], path: "Tests/PushTestSupport", swiftSettings: strict),
        .testTarget(name: "CPushCryptoTests", dependencies: ["CPushCrypto", "COpenSSL"], swiftSettings: strict),
        .testTarget(name: "CPushCurlTests", dependencies: ["CPushCurl", "CCurl", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "CPushKafkaTests", dependencies: ["CPushKafka", "CRdKafka"], swiftSettings: strict),
        .testTarget(name: "CPushHTTPDTests", dependencies: ["CPushHTTPD", "CMicroHTTPD"], swiftSettings: strict),
        .testTarget(name: "PushProcessTests", dependencies: ["PushProcess"], swiftSettings: strict),
        .testTarget(name: "CPushBuildInfoTests", dependencies: ["CPushBuildInfo"], swiftSettings: strict),
        .testTarget(name: "CPushRedisTLSTests", dependencies: ["CPushRedisTLS", "CHiredis", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "CPushAllocatorTests", dependencies: ["CPushAllocator"], swiftSettings: strict),
        .testTarget(name: "PushCoreTests", dependencies: ["PushCore", "PushEncoding", "PushProviders", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushPipelineTests", dependencies: ["PushPipeline", "PushCore", "PushProviders"], swiftSettings: strict),
        .testTarget(name: "PushCryptoTests", dependencies: ["PushCrypto", "PushCore", "PushEncoding"], swiftSettings: strict),
        .testTarget(name: "PushKafkaTests", dependencies: ["PushKafka", "PushKafkaMock", "PushTestSupport", "CRdKafka"], swiftSettings: strict),
        .testTarget(name: "PushRedisTests", dependencies: ["PushRedis", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushHTTPTests", dependencies: ["PushHTTP", "PushSandbox", "PushCrypto", "PushTestSupport", "CCurl"], swiftSettings: strict),
        .testTarget(name: "PushHTTPServerTests", dependencies: ["PushHTTPServer", "PushCore", "PushEncoding", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushSandboxTests", dependencies: ["PushSandbox", "PushInbox", "PushCrypto", "PushCore", "PushEncoding", "PushProviders", "PushKafka", "PushKafkaMock", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushWorkerTests", dependencies: ["PushRuntime", "PushWorker", "PushDelivery", "PushCore", "PushEncoding", "PushProviders", "PushKafka", "PushKafkaMock", "PushCrypto", "PushHTTP", "PushHTTPServer", "PushRedis", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushEventsTests", dependencies: ["PushRuntime", "PushEvents", "PushWorker", "PushCore", "PushEncoding", "PushKafka", "PushKafkaMock", "PushRedis", "PushHTTP", "PushHTTPServer", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushAPITests", dependencies: ["PushAPI", "PushRuntime", "PushCore", "PushEncoding", "PushKafka", "PushKafkaMock", "PushRedis", "PushHTTPServer", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushCLITests", dependencies: ["PushCLI", "PushCore"], swiftSettings: strict),
        .testTarget(name: "PushToolsTests", dependencies: ["PushTools", "PushRuntime", "PushWorker", "PushCore", "PushEncoding", "PushKafka", "PushKafkaMock", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "PushDevToolsTests", dependencies: ["PushRuntime", "PushDevTools", "PushChaos", "PushWorker", "PushCore", "PushEncoding", "PushKafka", "PushKafkaMock", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "pushworker-devTests", dependencies: ["pushworker-dev", "PushTestSupport"], swiftSettings: strict),
        .testTarget(name: "pushworkerTests", dependencies: ["PushRuntime", "pushworker", "PushTools", "PushWorker", "PushEvents", "PushCore", "PushEncoding", "PushKafka", "PushKafkaMock", "PushRedis", "PushHTTP", "PushTestSupport"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
