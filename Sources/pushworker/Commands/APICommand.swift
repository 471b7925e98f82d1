import Foundation
import PushAPI
import PushCLI
import PushCore
import PushRuntime

/// `pushworker api` (docs/reference/api.md): the operators' HTTP API.
enum APICommand {
    static let usage = """
    usage: pushworker api [--openapi]

    Serves the operators' HTTP API on PUSHWORKER_API_ADDR (default 0.0.0.0:9500):
      POST /v1/jobs                                  validate jobs, produce them to PUSHWORKER_TOPIC_JOBS
      GET  /v1/campaigns/{app}/{campaign}            a campaign's state, counts, rate, throttle, deadline, guardrail
      POST /v1/campaigns/{app}/{campaign}/pause      {"reason": "…"} optional
      POST /v1/campaigns/{app}/{campaign}/resume
      POST /v1/campaigns/{app}/{campaign}/cancel     {"reason": "…"} optional
      PUT  /v1/campaigns/{app}/{campaign}/throttle   {"perMinute": n | null}
      PUT  /v1/campaigns/{app}/{campaign}/deadline   {"sendBy": "RFC 3339" | null}
      GET  /openapi.json, /healthz, /readyz, /metrics (no token)
    Every /v1 request needs `Authorization: Bearer <token>`, a token of PUSHWORKER_API_TOKENS_FILE
    (one per line, at least 16 characters; # comments; re-read when the file changes). Failures
    are JSON: {"error": {"code", "message", "field"}}. Bodies over PUSHWORKER_API_MAX_BODY (8 MiB)
    get 413. POST /v1/jobs takes an Idempotency-Key header (answers kept in PUSHWORKER_REDIS_URL
    for PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS). SIGTERM answers the requests in progress, exits 0.

    options:
      --openapi   print the OpenAPI 3.1 document (docs/reference/openapi.json) and exit

    Exit 0 after SIGTERM, 64 usage, 69 Redis/Kafka client or listener cannot start,
    78 configuration (PUSHWORKER_API_TOKENS_FILE missing, unreadable or without a token).
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, flags: ["openapi"], exitCode: &code) else { return code }
        guard parsed.positionals.isEmpty else { return CommandSupport.usageError("unexpected argument '\(parsed.positionals[0])'", usage: usage) }
        if parsed.flag("openapi") {
            CommandSupport.writeOut(OpenAPIDocument.text)
            return ExitCode.ok
        }
        guard let configuration = CommandSupport.configuration(.api) else { return ExitCode.config }
        let tokens: APITokens
        do { tokens = try APITokens(path: configuration.apiTokensFile) } catch {
            printError("configuration problems:\n- PUSHWORKER_API_TOKENS_FILE: \(error.message)")
            return ExitCode.config
        }
        return APIProcess.run(configuration, tokens: tokens)
    }
}
