/// A failure talking to Redis.
///
/// `isConnectionError` is true when Redis could not be reached or the connection broke
/// (refused, reset, EOF, timeout, failed AUTH/SELECT during connect): the worker should treat Redis
/// as down (readiness false, stop taking jobs). Otherwise Redis answered with an error (a bad
/// command, a script error), or the call was invalid.
public struct RedisError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var isConnectionError: Bool

    public init(_ message: String, isConnectionError: Bool = false) {
        self.message = message
        self.isConnectionError = isConnectionError
    }

    public var description: String {
        isConnectionError ? "redis connection error: \(message)" : "redis error: \(message)"
    }
}
