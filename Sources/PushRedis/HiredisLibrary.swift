import CHiredis

/// The hiredis pushworker was built against.
public enum HiredisLibrary {
    /// The headers' `HIREDIS_MAJOR.MINOR.PATCH`, e.g. "0.14.1": hiredis has no function that
    /// reports the loaded library's version (the soname, libhiredis.so.0.14, pins the ABI).
    public static let version = "\(HIREDIS_MAJOR).\(HIREDIS_MINOR).\(HIREDIS_PATCH)"
}
