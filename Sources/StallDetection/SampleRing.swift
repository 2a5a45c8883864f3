import DequeModule

/// The bounded buffer of stack samples for the current busy episode; when full, appending drops
/// the oldest sample (a long stall keeps its most recent minute at the default 1200 × 50 ms).
/// Statistics that must cover the whole episode (heaviest stack, stall frame) are kept
/// incrementally elsewhere, so they do not change when old samples fall out of here.
public struct SampleRing: Sendable, Sequence {
    public let capacity: Int
    private var storage: Deque<StackSample>
    /// Samples ever appended since the last `removeAll()`.
    public private(set) var appendedCount: Int = 0

    /// `capacity` below 1 is raised to 1: a ring that cannot hold a sample would make every
    /// report stackless.
    public init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
        self.storage = Deque(minimumCapacity: Swift.min(self.capacity, 1024))
    }

    /// Appends, returning the sample that was dropped to make room, if any.
    @discardableResult
    public mutating func append(_ sample: StackSample) -> StackSample? {
        var dropped: StackSample?
        if storage.count >= capacity { dropped = storage.popFirst() }
        storage.append(sample)
        appendedCount += 1
        return dropped
    }

    public mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        appendedCount = 0
    }

    public var count: Int { storage.count }
    public var isEmpty: Bool { storage.isEmpty }
    public var isFull: Bool { storage.count >= capacity }
    /// Samples appended but no longer held.
    public var droppedCount: Int { appendedCount - storage.count }
    public var oldest: StackSample? { storage.first }
    public var newest: StackSample? { storage.last }
    /// The held samples, oldest first.
    public var samples: [StackSample] { Array(storage) }

    public func makeIterator() -> Deque<StackSample>.Iterator {
        storage.makeIterator()
    }
}
