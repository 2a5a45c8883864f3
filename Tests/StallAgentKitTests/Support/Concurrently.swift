import Foundation

/// Runs `body` for every index in `0..<count` on `width` threads at once and returns the
/// results in index order (a thrown error is rethrown, the first by index). For tests whose
/// work is a series of independent commands: spawning them one by one is only waiting.
func concurrentMap<T: Sendable>(_ count: Int, width: Int = 4, _ body: @escaping @Sendable (Int) throws -> T) throws -> [T] {
    let results = IndexedResults<T>(count: count)
    let group = DispatchGroup()
    for lane in 0..<min(width, count) {
        group.enter()
        Thread {
            for index in stride(from: lane, to: count, by: width) {
                results.set(index, Result { try body(index) })
            }
            group.leave()
        }.start()
    }
    group.wait()
    return try results.values().map { try $0.get() }
}

private final class IndexedResults<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<T, any Error>) {
        lock.lock()
        slots[index] = result
        lock.unlock()
    }

    func values() -> [Result<T, any Error>] {
        lock.lock()
        defer { lock.unlock() }
        return slots.map { $0! }
    }
}
