import Foundation
import PushTestSupport
import Testing

/// The production executable holds no development command: each one is refused with exit 64 and
/// a pointer to `pushworker-dev`, and the development executable sends production commands back.
@Suite("Production and development executables")
struct DevCommandsTests {
    @Test("`pushworker <development command>` exits 64 and names pushworker-dev",
          arguments: ["sandbox", "dev-broker", "demo", "bench", "chaos"])
    func developmentCommands(command: String) throws {
        let result = try runCommand(BuiltProducts.pushworker, [command, "--help"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("pushworker-dev \(command)"), "\(result.stderr)")
    }

    @Test("`pushworker-dev <production command>` exits 64 and names pushworker", arguments: ["run", "events", "send", "topics"])
    func productionCommands(command: String) throws {
        let result = try runCommand(BuiltProducts.pushworkerDev, [command])
        #expect(result.status == 64)
        #expect(result.stderr.contains("`pushworker \(command)`"), "\(result.stderr)")
    }

    @Test("both list their own commands in --help")
    func help() throws {
        let production = try runCommand(BuiltProducts.pushworker, ["--help"])
        let development = try runCommand(BuiltProducts.pushworkerDev, ["--help"])
        #expect(production.status == 0 && development.status == 0)
        #expect(production.stdout.contains("usage: pushworker <command>") && !production.stdout.contains("\n  sandbox "))
        #expect(development.stdout.contains("usage: pushworker-dev <command>") && development.stdout.contains("\n  sandbox "))
    }
}
