#if canImport(Glibc)
import Glibc
#endif

/// One pipeline to each of several servers at once, on the calling thread: every command is
/// written to every socket first, then `poll(2)` reads the replies as they arrive, so a batch
/// spread over N servers costs one round-trip time, not N. Every exchange over TLS runs here
/// too, one server included (hiredis's blocking read would bypass the TLS session).
enum HiredisExchange {
    /// One server's share of a batch.
    struct Part {
        let context: HiredisContext
        let commands: [[RedisArgument]]
    }

    /// Sends every part its commands and returns, per part, its replies in order or the connection
    /// error that ended it (that context is then dead: the owner drops it). `timeoutMs` bounds the
    /// time without progress (a byte written or read) before the parts still waiting fail.
    static func run(_ parts: [Part], timeoutMs: Int) -> [Result<[RedisReply], RedisError>] {
        if parts.count == 1 && !parts[0].context.isTLS {
            // One plain server: hiredis's blocking read is one syscall less than poll + recv.
            let part = parts[0]
            do throws(RedisError) { return [.success(try part.context.run(part.commands))] } catch { return [.failure(error)] }
        }
        var results = [Result<[RedisReply], RedisError>?](repeating: nil, count: parts.count)
        var replies = [[RedisReply]](repeating: [], count: parts.count)
        var active: [Int] = []
        active.reserveCapacity(parts.count)
        for (index, part) in parts.enumerated() {
            do throws(RedisError) {
                try part.context.append(contentsOf: part.commands)
                try part.context.writeAvailable()
                replies[index].reserveCapacity(part.commands.count)
                active.append(index)
            } catch {
                results[index] = .failure(error)
            }
        }
        var fds: [pollfd] = []
        fds.reserveCapacity(parts.count)
        let clock = ContinuousClock()
        var lastProgress = clock.now
        while !active.isEmpty {
            fds.removeAll(keepingCapacity: true)
            for index in active {
                let context = parts[index].context
                let events = Int16(POLLIN) | (context.hasPendingOutput ? Int16(POLLOUT) : 0)
                fds.append(pollfd(fd: context.fileDescriptor, events: events, revents: 0))
            }
            let waited = clock.now - lastProgress
            let remainingMs = timeoutMs - Int(waited.components.seconds * 1000 + waited.components.attoseconds / 1_000_000_000_000_000)
            if remainingMs <= 0 {
                for index in active {
                    results[index] = .failure(RedisError("redis connection error: no reply within \(timeoutMs) ms", isConnectionError: true))
                }
                break
            }
            let ready = poll(&fds, nfds_t(fds.count), Int32(clamping: remainingMs))
            if ready < 0 {
                if errno == EINTR { continue }
                for index in active { results[index] = .failure(RedisError("redis connection error: poll failed", isConnectionError: true)) }
                break
            }
            if ready == 0 { continue }
            var stillActive: [Int] = []
            for (slot, index) in active.enumerated() {
                let revents = fds[slot].revents
                if revents == 0 {
                    stillActive.append(index)
                    continue
                }
                lastProgress = clock.now
                let part = parts[index]
                do throws(RedisError) {
                    if revents & Int16(POLLOUT) != 0 { try part.context.writeAvailable() }
                    // A TLS session may need the socket writable to go on reading (a key update):
                    // it reads on any event.
                    if revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 || part.context.isTLS {
                        // Read and parse until the replies are complete or the socket has no more
                        // for now (a full buffer means more is likely waiting).
                        var read = 0
                        repeat {
                            read = try part.context.readAvailable()
                            while replies[index].count < part.commands.count, let reply = try part.context.parsedReply() {
                                replies[index].append(reply)
                            }
                        } while read == 16384 && replies[index].count < part.commands.count
                    }
                    if replies[index].count == part.commands.count {
                        results[index] = .success(replies[index])
                    } else {
                        stillActive.append(index)
                    }
                } catch {
                    results[index] = .failure(error)
                }
            }
            active = stillActive
        }
        return results.map { $0 ?? .failure(RedisError("redis connection error: no reply", isConnectionError: true)) }
    }
}
