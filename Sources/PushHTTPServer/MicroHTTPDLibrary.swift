import CMicroHTTPD

/// The libmicrohttpd loaded at run time.
public enum MicroHTTPDLibrary {
    /// `MHD_get_version()`, e.g. "0.9.75".
    public static var version: String { MHD_get_version().map { String(cString: $0) } ?? "unknown" }
}
