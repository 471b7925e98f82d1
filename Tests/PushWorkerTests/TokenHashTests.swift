import Testing
import PushCore
import PushWorker

@Suite("TokenHash")
struct TokenHashTests {
    @Test("the first 16 bytes of SHA-256 of the token, as lower-case hex")
    func knownValue() {
        // SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223 b00361a3…
        #expect(TokenHash.of("abc") == "ba7816bf8f01cfea414140de5dae2223")
        #expect(TokenHash.of("") == "e3b0c44298fc1c149afbf4c8996fb924")
        let apnsToken = String(repeating: "a1", count: 32)
        let hash = TokenHash.of(apnsToken)
        #expect(hash.utf8.count == 32)
        #expect(hash.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        #expect(hash != TokenHash.of(String(repeating: "a1", count: 31) + "a2"))
    }
}
