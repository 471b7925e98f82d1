import CCurl
import CPushCurl
import PushTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The C side of PushHTTP's libcurl use (CPushCurl) on its own: request storage, and the epoll
/// loop driving one real transfer to a loopback server this test plays by hand.
@Suite("CPushCurl: request storage and the event loop")
struct CurlEventsTests {
    struct ListenerError: Error {}

    /// A multi handle with its event loop, cleaned up in the order the loop requires.
    final class Loop {
        let multi: UnsafeMutableRawPointer
        let events: UnsafeMutablePointer<pw_curl_events>

        init(cork: Bool) throws {
            _ = curl_global_init(pw_curl_global_default())
            guard let multi = curl_multi_init() else { throw ListenerError() }
            guard let events = pw_curl_events_create(multi, cork ? 1 : 0) else { throw ListenerError() }
            self.multi = multi
            self.events = events
        }

        deinit {
            curl_multi_cleanup(multi)
            pw_curl_events_destroy(events)
        }

        /// One turn: libcurl's timer if due, then a wait of up to `ms`.
        @discardableResult
        func turn(_ ms: Int32) -> Int32 {
            pw_curl_events_run_timer(events)
            return pw_curl_events_wait(events, ms)
        }

        /// The result of the transfer that finished, if one did.
        func finished() -> CURLcode? {
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                if message.pointee.msg == CURLMSG_DONE { return message.pointee.data.result }
            }
            return nil
        }
    }

    @Test("request storage: any size, zero included, is writable and freed")
    func storage() throws {
        for size in [0, 1, 16, 4096] {
            let storage = try #require(pw_curl_storage_alloc(size))
            storage.storeBytes(of: 0x5A, as: UInt8.self)
            #expect(storage.load(as: UInt8.self) == 0x5A)
            #expect(Int(bitPattern: storage) % MemoryLayout<curl_slist>.alignment == 0, "the storage holds curl_slist nodes")
            pw_curl_storage_free(storage)
        }
    }

    @Test("without a timer the wait is the cap; a wake-up ends the wait at once, however many were asked")
    func wakeup() throws {
        let loop = try Loop(cork: true)
        #expect(pw_curl_events_timer_wait_ms(loop.events, 250) == 250)
        #expect(pw_curl_events_wait(loop.events, 0) == 0, "nothing pending")
        pw_curl_events_wakeup(loop.events)
        pw_curl_events_wakeup(loop.events)
        let started = pw_curl_events_now_ms()
        #expect(pw_curl_events_wait(loop.events, 5000) == 1, "one event however many wake-ups")
        #expect(pw_curl_events_now_ms() - started < 1000)
        #expect(pw_curl_events_wait(loop.events, 0) == 0, "the wake-up was consumed")
        #expect(pw_curl_events_corked_count(loop.events) == 0 && pw_curl_events_flush_count(loop.events) == 0)
    }

    @Test("a transfer runs on the loop: libcurl's 0 ms timer, the connection corked and flushed each turn, forgotten when closed",
          arguments: [true, false])
    func transfer(cork: Bool) throws {
        let listener = try LoopbackListener()
        let loop = try Loop(cork: cork)
        let easy = try #require(curl_easy_init())
        let url = "http://127.0.0.1:\(listener.port)/"
        #expect(pw_curl_easy_setopt_str(easy, CURLOPT_URL, url) == CURLE_OK)
        #expect(pw_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1) == CURLE_OK)
        #expect(pw_curl_easy_setopt_str(easy, CURLOPT_PROXY, "") == CURLE_OK)
        #expect(pw_curl_events_attach(easy, loop.events) == CURLE_OK)
        #expect(curl_multi_add_handle(loop.multi, easy) == CURLM_OK)
        #expect(pw_curl_events_timer_wait_ms(loop.events, 1000) == 0, "adding a handle sets a 0 ms timer")

        var connection: Int32 = -1
        let deadline = pw_curl_events_now_ms() + 10_000
        while connection < 0 && pw_curl_events_now_ms() < deadline {
            loop.turn(20)
            connection = listener.accept()
        }
        #expect(connection >= 0, "libcurl connected")
        defer { if connection >= 0 { close(connection) } }
        #expect(pw_curl_events_corked_count(loop.events) == (cork ? 1 : 0))

        // Read the request, answer it, and let the loop finish the transfer.
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: request, as: UTF8.self).contains("\r\n\r\n") && pw_curl_events_now_ms() < deadline {
            loop.turn(20)
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { request += buffer[0..<count] }
        }
        #expect(String(decoding: request, as: UTF8.self).hasPrefix("GET / HTTP/1.1"))
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
        #expect(answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, 0) } == answer.count)
        var result: CURLcode?
        while result == nil && pw_curl_events_now_ms() < deadline {
            loop.turn(20)
            result = loop.finished()
        }
        #expect(result == CURLE_OK)
        var status = 0
        #expect(pw_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 200)
        #expect((pw_curl_events_flush_count(loop.events) > 0) == cork, "corked connections are flushed before each wait")
        curl_multi_remove_handle(loop.multi, easy)
        curl_easy_cleanup(easy)
        #expect(pw_curl_events_corked_count(loop.events) == 0, "a closed connection is forgotten")
    }
}
