#if canImport(Glibc)
import Glibc
#endif

/// Writes `message` and a newline to standard error.
public func printError(_ message: String) {
    var text = message
    text.append("\n")
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}
