import Synchronization

/// A value computed once, on first use, by whichever thread asks first.
final class LazyBox<Value>: @unchecked Sendable {
    private let lock = Mutex<Void>(())
    private var value: Value?

    func get(_ make: () -> Value) -> Value {
        lock.withLock { _ in
            if let value { return value }
            let made = make()
            value = made
            return made
        }
    }
}
