import CPushAllocator
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The process's allocator (CPushAllocator links jemalloc into every binary that depends on it,
/// this test binary included): malloc is jemalloc's, its defaults are ours, a purge works.
@Suite("CPushAllocator")
struct AllocatorTests {
    @Test("malloc is jemalloc 5: the version query answers")
    func version() throws {
        let version = String(cString: try #require(pw_allocator_version()))
        #expect(version.hasPrefix("5."), "\(version)")
    }

    @Test("our malloc_conf is the one in force (dirty pages decay after 2 s, no muzzy state)")
    func defaults() {
        #expect(Self.ssize("opt.dirty_decay_ms") == 2000)
        #expect(Self.ssize("opt.muzzy_decay_ms") == 0)
    }

    @Test("a purge succeeds and gives freed pages back: resident bytes fall after 64 MiB are freed")
    func purge() throws {
        let blocks = (0..<64).map { _ -> UnsafeMutableRawPointer? in
            let block = malloc(1 << 20)
            if let block { memset(block, 1, 1 << 20) }
            return block
        }
        #expect(blocks.allSatisfy { $0 != nil })
        let held = pw_allocator_resident_bytes()
        #expect(held >= 64 << 20, "resident \(held)")
        for block in blocks { free(block) }
        #expect(pw_allocator_purge() == 0)
        let after = pw_allocator_resident_bytes()
        #expect(after + (48 << 20) <= held, "resident \(held) → \(after) after the purge")
    }

    @Test("the thread counters see what this thread keeps live: a 1 MiB block, then its freeing")
    func threadCounters() throws {
        var allocated: UInt64 = 0, deallocated: UInt64 = 0
        #expect(pw_allocator_thread_counters(&allocated, &deallocated) == 0)
        let before = Int64(bitPattern: allocated &- deallocated)
        let block = try #require(malloc(1 << 20))
        #expect(pw_allocator_thread_counters(&allocated, &deallocated) == 0)
        let holding = Int64(bitPattern: allocated &- deallocated)
        free(block)
        #expect(pw_allocator_thread_counters(&allocated, &deallocated) == 0)
        let after = Int64(bitPattern: allocated &- deallocated)
        #expect(holding - before >= 1 << 20, "live \(before) → \(holding)")
        #expect(holding - after >= 1 << 20, "live \(holding) → \(after) after free")
    }

    /// An `ssize_t` option of jemalloc's.
    static func ssize(_ name: String) -> Int? {
        var value = 0
        return pw_allocator_read_ssize(name, &value) == 0 ? value : nil
    }
}
