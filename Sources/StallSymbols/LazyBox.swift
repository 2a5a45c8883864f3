import Synchronization

/// A value computed once, on first use, by whichever thread asks first.
final class LazyBox<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)

    func get(_ make: () -> Value) -> Value {
        value.withLock { value in
            if let value { return value }
            let made = make()
            value = made
            return made
        }
    }
}
