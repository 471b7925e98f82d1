/// `pushworker sandbox`: the HTTP/2 provider emulator (DESIGN §11).
public enum SandboxCommand {
    /// Runs the subcommand with `arguments` (after `sandbox`); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        print("pushworker sandbox: not built yet")
        return 70
    }
}
