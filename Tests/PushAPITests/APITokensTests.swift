import Foundation
import PushAPI
import PushTestSupport
import Testing

/// ``APITokens``: the tokens file's format, the Bearer header, the constant-time comparison and
/// the re-read of a changed file.
@Suite("API tokens")
struct APITokensTests {
    static let token = "tok_0123456789abcdef"
    static let other = "another-token-ABCDEFGH"

    @Test("the file: one token per line; blank lines, # comments and surrounding spaces ignored; CRLF accepted")
    func parses() throws {
        let text = "# operators\n\n  \(Self.token)  \r\n\t# the deploy bot\n\(Self.other)\n\nb64+/token0123456789==\n"
        #expect(try APITokens.parse(text).get() == [Self.token, Self.other, "b64+/token0123456789=="])
    }

    @Test("a file without a token, or with a line that is not one, is refused naming the line (never its text)", arguments: [
        ("", "no token"), ("# only a comment\n\n", "no token"), ("short\n", "line 1"), ("\(token)\nhas a space in it 0123\n", "line 2"),
        ("\(token)\nbad=token=0123456789\n", "line 2"), ("\(token)\n=================\n", "line 2"), ("tok\u{e9}n_0123456789abcd\n", "line 1"),
        ("\(token)\n\n\nquote\"0123456789abcdef\n", "line 4"),
    ])
    func refuses(text: String, mentions: String) throws {
        guard case .failure(let error) = APITokens.parse(text) else { Issue.record("accepted \(text)"); return }
        #expect(error.message.contains(mentions), "\(error.message)")
        #expect(!error.message.contains("space in it") && !error.message.contains("quote"))
    }

    @Test("Authorization: Bearer <token>, the scheme in any case; anything else is missing or refused")
    func bearer() {
        let tokens = APITokens(tokens: [Self.token, Self.other])
        guard case .accepted(let id) = tokens.check(authorization: "Bearer \(Self.token)") else { Issue.record("refused"); return }
        #expect(tokens.check(authorization: "bearer \(Self.token)") == .accepted(tokenID: id))
        #expect(tokens.check(authorization: "  BEARER   \(Self.token)  ") == .accepted(tokenID: id))
        #expect(tokens.check(authorization: "Bearer \(Self.other)") != .accepted(tokenID: id), "each token has its own id")
        #expect(id.count == 16 && !Self.token.contains(id))
        #expect(tokens.check(authorization: nil) == .missing)
        #expect(tokens.check(authorization: "") == .missing)
        #expect(tokens.check(authorization: "Bearer ") == .missing)
        #expect(tokens.check(authorization: "Basic dXNlcjpwYXNz") == .missing)
        #expect(tokens.check(authorization: Self.token) == .missing)
        #expect(tokens.check(authorization: "Bearer \(Self.token)x") == .refused)
        #expect(tokens.check(authorization: "Bearer \(Self.token.dropLast())") == .refused)
        #expect(tokens.check(authorization: "Bearer \(Self.token.uppercased())") == .refused)
        #expect(tokens.check(authorization: "Bearer \(Self.token) \(Self.other)") == .refused)
    }

    @Test("constantTimeEquals compares every byte: equal, different anywhere, different lengths")
    func constantTime() {
        let a = (0..<32).map { UInt8($0) }
        #expect(APITokens.constantTimeEquals(a, a))
        for index in [0, 15, 31] {
            var b = a
            b[index] ^= 0x01
            #expect(!APITokens.constantTimeEquals(a, b))
        }
        #expect(!APITokens.constantTimeEquals(a, Array(a.dropLast())))
        #expect(APITokens.constantTimeEquals([], []))
    }

    @Test("a changed file is re-read (at most once a second); a broken one keeps the tokens in force and says why")
    func reload() throws {
        let folder = try TemporaryFolder.make(prefix: "api-tokens")
        let path = folder.appendingPathComponent("tokens").path
        try "\(Self.token)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let tokens = try APITokens(path: path)
        var now = 1000.0
        #expect(tokens.check(authorization: "Bearer \(Self.token)", now: now) != .refused)

        try "# rotated\n\(Self.other)\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(tokens.check(authorization: "Bearer \(Self.other)", now: now + 0.5) == .refused, "not looked at within the second")
        now += 2
        #expect(tokens.check(authorization: "Bearer \(Self.other)", now: now) != .refused)
        #expect(tokens.check(authorization: "Bearer \(Self.token)", now: now) == .refused)
        #expect(tokens.reloadProblem == nil)

        try "too short\n".write(toFile: path, atomically: true, encoding: .utf8)
        now += 2
        #expect(tokens.check(authorization: "Bearer \(Self.other)", now: now) != .refused, "the previous tokens stay")
        #expect(tokens.reloadProblem?.contains("line 1") == true)

        try FileManager.default.removeItem(atPath: path)
        now += 2
        #expect(tokens.check(authorization: "Bearer \(Self.other)", now: now) != .refused)
        #expect(tokens.reloadProblem?.contains("cannot read") == true)

        try "\(Self.token)\n".write(toFile: path, atomically: true, encoding: .utf8)
        now += 2
        #expect(tokens.check(authorization: "Bearer \(Self.token)", now: now) != .refused)
        #expect(tokens.reloadProblem == nil)
        #expect(tokens.count == 1)
    }

    @Test("a missing, empty or binary file cannot be loaded")
    func unusableFiles() throws {
        let folder = try TemporaryFolder.make(prefix: "api-tokens-bad")
        #expect(throws: APITokens.FileError.self) { _ = try APITokens(path: folder.appendingPathComponent("absent").path) }
        let empty = folder.appendingPathComponent("empty").path
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        #expect(throws: APITokens.FileError.self) { _ = try APITokens(path: empty) }
        let binary = folder.appendingPathComponent("binary").path
        try Data([0xFF, 0xFE, 0x00, 0x41]).write(to: URL(fileURLWithPath: binary))
        #expect(throws: APITokens.FileError.self) { _ = try APITokens(path: binary) }
        #expect(throws: APITokens.FileError.self) { _ = try APITokens(path: folder.path) }
    }
}
