/// A first-in first-out queue over one array and a moving head: `append` and `popFirst` are
/// O(1) amortized, and a taken slot is emptied at once (what it held is released then, not
/// when the array is next compacted). The array is emptied when the head reaches its end and
/// compacted when the taken half is large, so a queue that never drains (new entries arrive
/// while old ones leave) stays bounded by twice what it holds, plus 1,024 slots.
///
/// Used on the I/O thread (``TransferDeadlines``) and by the worker's admission gate, so it is
/// `public` and inlinable: specialized where it is used, no generic dispatch per call. (As
/// `package` with `@inlinable`, Swift 6.3 left PushWorker calling the unspecialized generic
/// entry points: `objdump -d` of the release binary.)
public struct FIFOQueue<Element> {
    @usableFromInline var slots: [Element?] = []
    @usableFromInline var head = 0

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { head == slots.count }

    @inlinable public var count: Int { slots.count - head }

    @inlinable public var first: Element? { head < slots.count ? slots[head] : nil }

    @inlinable public mutating func append(_ element: Element) { slots.append(element) }

    @inlinable @discardableResult
    public mutating func popFirst() -> Element? {
        guard head < slots.count else { return nil }
        let next = slots[head].take()
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
        return next
    }
}
