import CPushAllocator

/// The allocator's per-thread byte counters (jemalloc's `thread.allocated` and
/// `thread.deallocated`): what a stretch of code on this thread left live, to the byte
/// (`pushworker-dev bench decode`).
public enum AllocatorCounters {
    /// Bytes allocated minus bytes freed by this thread so far; nil when malloc is not jemalloc.
    public static func threadLiveBytes() -> Int64? {
        var allocated: UInt64 = 0, deallocated: UInt64 = 0
        guard pw_allocator_thread_counters(&allocated, &deallocated) == 0 else { return nil }
        return Int64(bitPattern: allocated &- deallocated)
    }
}
