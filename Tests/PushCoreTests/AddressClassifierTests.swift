import Foundation
@testable import PushCore
import Testing

/// The one address classifier (docs/security.md), the IP parser under it, the
/// endpoint URL parser and the allow-list entry parser.
@Suite("Address classifier, IP parsing, endpoint URLs and allow-list entries")
struct AddressClassifierTests {
    @Test("every special range is recognised, including IPv4 embedded in mapped, NAT64 and 6to4 addresses", arguments: [
        // IPv4
        ("0.0.0.0", "0.0.0.0/8"), ("0.255.255.255", "0.0.0.0/8"),
        ("10.0.0.0", "10.0.0.0/8"), ("10.255.255.255", "10.0.0.0/8"),
        ("100.64.0.0", "100.64.0.0/10"), ("100.127.255.255", "100.64.0.0/10"),
        ("127.0.0.1", "127.0.0.0/8"), ("127.255.255.254", "127.0.0.0/8"),
        ("169.254.169.254", "169.254.0.0/16"),
        ("172.16.0.1", "172.16.0.0/12"), ("172.31.255.255", "172.16.0.0/12"),
        ("192.0.0.8", "192.0.0.0/24"), ("192.0.2.1", "192.0.2.0/24"), ("192.88.99.1", "192.88.99.0/24"),
        ("192.168.0.1", "192.168.0.0/16"), ("198.18.0.1", "198.18.0.0/15"), ("198.19.255.255", "198.18.0.0/15"),
        ("198.51.100.7", "198.51.100.0/24"), ("203.0.113.9", "203.0.113.0/24"),
        ("224.0.0.1", "224.0.0.0/4"), ("239.255.255.250", "224.0.0.0/4"),
        ("240.0.0.1", "240.0.0.0/4"), ("255.255.255.254", "240.0.0.0/4"), ("255.255.255.255", "255.255.255.255/32"),
        // IPv6
        ("::", "::/128"), ("::1", "::1/128"), ("[::1]", "::1/128"), ("0:0:0:0:0:0:0:1", "::1/128"),
        ("::127.0.0.1", "::/8"), ("::8.8.8.8", "::/8"), ("0064:ff9b:0001::a00:1", "64:ff9b:1::/48"),
        ("100::1", "100::/64"), ("2001::1", "2001::/23"), ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::/23"),
        ("2001:2::1", "2001::/23"), ("2001:db8::1", "2001:db8::/32"), ("3fff:fff::1", "3fff::/20"),
        ("fc00::1", "fc00::/7"), ("fd12:3456::1", "fc00::/7"), ("fe80::1", "fe80::/10"), ("fe80::1%eth0", "fe80::/10"),
        ("febf::1", "fe80::/10"), ("fec0::1", "fec0::/10"), ("ff02::1", "ff00::/8"), ("4000::1", "!2000::/3"), ("e000::1", "!2000::/3"),
        // The IPv4 behind an IPv6 address
        ("::ffff:10.0.0.1", "10.0.0.0/8"), ("::ffff:127.0.0.1", "127.0.0.0/8"), ("::ffff:7f00:1", "127.0.0.0/8"),
        ("64:ff9b::10.0.0.1", "10.0.0.0/8"), ("64:ff9b::7f00:1", "127.0.0.0/8"), ("64:ff9b::a9fe:a9fe", "169.254.0.0/16"),
        ("2002:c0a8:0101::1", "192.168.0.0/16"), ("2002:7f00:1::", "127.0.0.0/8"), ("2002:0a00:0001:1:2:3:4:5", "10.0.0.0/8"),
    ])
    func special(address: String, range: String) throws {
        let parsed = try #require(IPAddress(address), "\(address) parses")
        #expect(parsed.specialRange?.rawValue == range)
        #expect(parsed.isPrivate)
        #expect(IPAddress.isPrivate(address))
    }

    @Test("globally reachable addresses are not private, whatever their form", arguments: [
        "8.8.8.8", "1.1.1.1", "172.32.0.1", "172.15.255.255", "100.63.255.255", "100.128.0.0", "142.250.74.10", "192.0.3.1",
        "192.169.0.1", "198.17.255.255", "198.20.0.0", "223.255.255.255", "9.255.255.255", "11.0.0.0",
        "2a00:1450:4001:82b::200a", "2606:4700::1111", "2001:4860:4860::8888", "2001:200::1", "3ffe::1", "3fff:1000::1",
        "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:0808:0808::1",
    ])
    func global(address: String) throws {
        let parsed = try #require(IPAddress(address), "\(address) parses")
        #expect(parsed.specialRange == nil)
        #expect(!IPAddress.isPrivate(address))
    }

    @Test("a NAT64 or 6to4 address names its IPv4 destination")
    func embedded() throws {
        let nat64 = try #require(IPAddress("64:ff9b::c000:201")?.embeddedIPv4)
        #expect(nat64.0 == IPAddress("192.0.2.1") && nat64.1 == .nat64)
        let sixToFour = try #require(IPAddress("2002:c000:0201::1")?.embeddedIPv4)
        #expect(sixToFour.0 == IPAddress("192.0.2.1") && sixToFour.1 == .sixToFour)
        #expect(IPAddress("2001:db8::1")?.embeddedIPv4 == nil)
    }

    @Test("socket address bytes classify the same as text (the connect-time check's input)")
    func bytes() throws {
        #expect(IPAddress(bytes: [10, 1, 2, 3])?.specialRange == .privateUse10)
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 1]
        #expect(IPAddress(bytes: mapped) == IPAddress("127.0.0.1"))
        #expect(IPAddress(bytes: mapped)?.specialRange == .loopbackIPv4)
        #expect(IPAddress(bytes: [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0, 192, 168, 1, 1])?.specialRange == .privateUse192)
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [8, 8, 8, 8])?.isPrivate == false)
    }

    @Test("texts that are not strict addresses are refused (no octal, shorthand or decimal IPv4; no junk in IPv6)", arguments: [
        "", "localhost", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "010.0.0.1", "127.1", "2130706433", "0x7f.0.0.1",
        "1.2.3.4 ", " 1.2.3.4", "+1.2.3.4", "1:2:3:4:5:6:7:8:9", "1::2::3", ":1", "1:", "12345::", "::g", "::+1", "::-1",
        "1:2:3:4:5:6:7:8::", "::ffff:1.2.3", "::ffff:01.2.3.4", "fe80::1%", "[::1", "::1]",
        // Host names and near-addresses without a ':' (refused before any IPv6 parsing).
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "[fcm.googleapis.com]", "1.2.3.4\u{301}",
        "1.2.3.\u{661}", "١.٢.٣.٤", "1.2.3.a", "a.1.2.3", "1,2,3,4", "1.2.3.4.", ".1.2.3",
    ])
    func notAddresses(text: String) {
        #expect(IPAddress(text) == nil, "\(text)")
        #expect(!IPAddress.isPrivate(text))
    }

    @Test("the one-pass IPv4 parser answers as the split-and-check reference on every short text of digits and dots, and on generated ones")
    func ipv4AgainstReference() {
        // The split-and-check reference: four parts of 1–3 ASCII digits, ≤ 255, no leading zero.
        func reference(_ text: Substring) -> [UInt8]? {
            guard text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }) else { return nil }
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var bytes: [UInt8] = []
            for part in parts {
                guard !part.isEmpty, part.utf8.count <= 3, part.utf8.count == 1 || part.utf8.first != 0x30, let value = UInt8(part) else { return nil }
                bytes.append(value)
            }
            return bytes
        }
        var texts: [String] = [""]
        // Every text of up to 7 characters over "0", "1", "2", "5", "9", "." (the short ones and edges).
        let alphabet: [Character] = ["0", "1", "2", "5", "9", "."]
        var frontier = [""]
        for _ in 0..<7 {
            frontier = frontier.flatMap { prefix in alphabet.map { prefix + String($0) } }
            texts += frontier
        }
        // Generated dotted texts: parts of 0–4 digits, 3–5 parts, an odd byte now and then.
        var generator = SplitMix64(seed: 4)
        for _ in 0..<50_000 {
            let partCount = 3 + Int(generator.next() % 3)
            var parts: [String] = []
            for _ in 0..<partCount {
                let length = Int(generator.next() % 5)
                parts.append(String((0..<length).map { _ in Character(UnicodeScalar(UInt8(0x30 + generator.next() % 10))) }))
            }
            var text = parts.joined(separator: ".")
            if generator.next() % 16 == 0 { text.insert(["a", " ", "-", "/", ":", "é"][Int(generator.next() % 6)], at: text.startIndex) }
            texts.append(text)
        }
        texts += ["255.255.255.255", "256.0.0.1", "1.2.3.4", "01.2.3.4", "1.2.3.04", "0.0.0.0", "1.2.3.", ".1.2.3", "1..2.3", "1.2.3.4.5",
                  "999.1.1.1", "1.2.3.4\u{0}", "１.2.3.4"]
        let mismatches = texts.filter { IPAddress.parseIPv4($0[...]) != reference($0[...]) }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
        #expect(texts.count > 300_000)
        #expect(texts.contains { reference($0[...]) != nil }, "the texts include valid addresses")
    }

    @Test("the canonical text is dotted decimal or RFC 5952", arguments: [
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"), ("2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"), ("2001:DB8::A", "2001:db8::a"), ("0:0:0:0:0:0:0:0", "::"),
        ("1:0:0:0:0:0:0:0", "1::"), ("2001:db8:1:2:3:4:5:0", "2001:db8:1:2:3:4:5:0"), ("::ffff:192.0.2.1", "192.0.2.1"),
        ("[fe80::1%eth0]", "fe80::1"), ("192.0.2.1", "192.0.2.1"),
    ])
    func canonical(text: String, expected: String) {
        #expect(IPAddress(text)?.description == expected)
    }

    @Test("masking keeps the prefix and clears the rest")
    func masking() throws {
        let address = try #require(IPAddress("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff"))
        #expect(address.masked(prefixLength: 64).description == "2001:db8:aaaa:bbbb::")
        #expect(address.masked(prefixLength: 56).description == "2001:db8:aaaa:bb00::")
        #expect(address.masked(prefixLength: 0).description == "::")
        #expect(address.masked(prefixLength: 128) == address)
        let network = try #require(IPAddress("2001:db8:aaaa:bbbb::"))
        let other = try #require(IPAddress("2001:db8:aaaa:bbbc::"))
        #expect(address.hasPrefix(network, length: 64))
        #expect(!address.hasPrefix(other, length: 64))
        #expect(address.hasPrefix(other, length: 60))
        let v4 = try #require(IPAddress("192.168.0.0"))
        #expect(IPAddress("192.168.7.255")?.hasPrefix(v4, length: 21) == true)
        #expect(IPAddress("192.168.8.0")?.hasPrefix(v4, length: 21) == false)
        #expect(IPAddress("::ffff:192.168.1.1")?.hasPrefix(v4, length: 16) == true)
    }

    @Test("endpoint URLs: the host every component uses", arguments: [
        ("https://fcm.googleapis.com/fcm/send/x", "fcm.googleapis.com", nil, "https://fcm.googleapis.com"),
        ("HTTPS://Push.Example.COM:8443/a?b#c", "push.example.com", 8443, "https://push.example.com:8443"),
        ("https://[2001:DB8::1]:9443/x", "2001:db8::1", 9443, "https://[2001:db8::1]:9443"),
        ("https://127.0.0.1/x", "127.0.0.1", nil, "https://127.0.0.1"),
        ("https://a.b.example./x", "a.b.example.", nil, "https://a.b.example."),
    ] as [(String, String, Int?, String)])
    func endpointURL(text: String, host: String, port: Int?, origin: String) throws {
        let url = try #require(EndpointURL(text))
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(url.origin == origin)
    }

    @Test("endpoint URLs two parsers could read differently are refused", arguments: [
        "https://user@fcm.googleapis.com/x", "https://fcm.googleapis.com@10.0.0.1/x", "https://fcm.googleapis.com\\@10.0.0.1/",
        "https://fcm.googleapis.com%2f@x/", "https://2130706433/", "https://0x7F000001/", "https://127.1/", "https://0177.0.0.1/",
        "https://a.b.0x10/", "https://[fe80::1%25en0]/", "https://[v1.fe80::1]/", "https://fcm.googleapis.com:0/",
        "https://fcm.googleapis.com:65536/", "https://fcm.googleapis.com:+443/", "https://\u{FF41}.example/", "https://a b/",
        "https://x.example/\u{7F}", "//fcm.googleapis.com/x", "https:fcm.googleapis.com/x",
    ])
    func endpointURLRefused(text: String) {
        #expect(EndpointURL(text) == nil, "\(text)")
    }

    @Test("allow-list entries: host names, .suffixes and IP literals, normalised", arguments: [
        ("push.example.com", "push.example.com"), (" Push.Example.COM. ", "push.example.com"), (".corp.example", ".corp.example"),
        (".Corp.Example.", ".corp.example"), ("xn--bcher-kva.example", "xn--bcher-kva.example"), ("_push.example", "_push.example"),
        ("localhost", "localhost"), ("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("[0:0::1]", "::1"), ("[::ffff:10.0.0.1]", "10.0.0.1"),
    ])
    func entries(entry: String, normalized: String) {
        #expect(WebPushPolicy.parseEntry(entry) == .success(normalized))
    }

    @Test("allow-list entries that are not host names are refused, saying what to write", arguments: [
        ("https://push.example.com/", "is a URL; list its host name (push.example.com)"),
        ("http://push.example.com", "is a URL"),
        ("push.example.com:443", "without a port"), ("127.0.0.1:9443", "without a port"), ("[::1]:8443", "without a port"),
        ("push.example.com/path", "no path"), ("10.0.0.0/8", "no CIDR"),
        ("*.example.com", "wildcards are not supported"), ("push*.example.com", "wildcards"), ("*", "wildcards"),
        ("127.1", "not a dotted-decimal IPv4"), ("2130706433", "not a dotted-decimal IPv4"), ("010.0.0.1", "not a dotted-decimal"),
        ("push.example.1", "not a dotted-decimal"),
        ("push..example.com", "is not a host name"), (".", "is not a host name"), ("-push.example", "is not a host name"),
        ("push-.example", "is not a host name"), ("user@push.example", "is not a host name"), ("push example", "is not a host name"),
        ("pu\u{0161}h.example", "is not a host name"), (String(repeating: "a", count: 64) + ".example", "is not a host name"),
        ("[::1", "is not a host name"), ("[127.0.0.1]x", "is not a host name"),
    ])
    func refusedEntries(entry: String, message: String) {
        guard case .failure(let error) = WebPushPolicy.parseEntry(entry) else {
            Issue.record("\(entry) accepted")
            return
        }
        #expect(error.description.contains(message), "\(entry): \(error)")
        #expect(error.description.contains(entry.trimmingCharacters(in: .whitespaces)) || entry.isEmpty)
    }

    @Test("an empty entry is reported as empty (configuration skips them)")
    func emptyEntry() {
        #expect(WebPushPolicy.parseEntry("  ") == .failure(.empty))
    }
}

/// ``EndpointURL/endsInNumber(_:)`` reads bytes in place; it must answer as the `split` and
/// `lowercased` version it replaced (kept here as the reference).
@Suite("EndpointURL.endsInNumber")
struct EndsInNumberTests {
    static func reference(_ host: String) -> Bool {
        var name = Substring(host)
        if name.hasSuffix(".") { name = name.dropLast() }
        guard let last = name.split(separator: ".", omittingEmptySubsequences: false).last, !last.isEmpty else { return false }
        if last.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return true }
        let lower = last.lowercased()
        return lower.hasPrefix("0x") && lower.dropFirst(2).utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66)
        }
    }

    @Test("same answer as the reference on names, numbers, hex, dots and edge cases")
    func matchesReference() {
        let hosts = ["", ".", "..", "a", "a.", "a..", "1", "1.", "127.1", "2130706433", "0x7f000001", "0X7F.1", "0x", "0x.", "a.0x",
                     "a.0xg", "a.0xAbC", "a.0Xabc.", "fcm.googleapis.com", "a.b.c9", "9.a", "a.09", "a.x0", "a.0x0x", "_.1", "a-1.2",
                     "updates.push.services.mozilla.com", "a.0xff.", "a.1b", "a.-1", "0x7f.0x1"]
        for host in hosts {
            #expect(EndpointURL.endsInNumber(host) == Self.reference(host), "\(host)")
        }
        #expect(EndpointURL.endsInNumber("127.1") && EndpointURL.endsInNumber("a.0xFF") && !EndpointURL.endsInNumber("push.example.com"))
    }
}

/// ``WebPushPolicy/normalizeHost(_:)`` skips the IP parse and the lower-casing when the bytes
/// show neither can change anything; its answers must be the unconditional version's.
@Suite("WebPushPolicy.normalizeHost fast paths")
struct NormalizeHostTests {
    static func reference(_ host: String) -> String {
        if let address = IPAddress(host) { return address.description }
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }

    static let hosts = ["fcm.googleapis.com", "FCM.GoogleAPIs.com.", "1.2.3.4", "1.2.3.4.", "[1.2.3.4]", "[::1]", "::1", "fe80::1%eth0",
                        "::ffff:192.0.2.1", "İstanbul.example", "a..", "", ".", "010.0.0.1", "127.1", "updates.push.services.mozilla.com",
                        "x.notify.windows.com", "A", "0x7f.1", "1.2.3.4.5", "[2001:DB8::1]"]

    @Test("same normalized host as the reference, and never a skipped IP address")
    func matchesReference() {
        for host in Self.hosts {
            #expect(WebPushPolicy.normalizeHost(host) == Self.reference(host), "\(host)")
            if IPAddress(host) != nil { #expect(WebPushPolicy.mayBeIPAddress(host), "\(host)") }
        }
        let policy = WebPushPolicy(extraAllowedHosts: [])
        #expect(policy.allows(host: "fcm.googleapis.com") && policy.allows(host: "FCM.googleapis.com."))
        #expect(!policy.allows(host: "1.2.3.4") && !policy.allows(host: "evil.example"))
    }
}
