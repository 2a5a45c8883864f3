#if canImport(Glibc)
import Glibc
#endif

/// The buffer a stack is copied into while its thread is stopped, one per OS thread rather
/// than one per capturer: captures happen one at a time on the thread that traces, and a
/// zeroed 512 KiB buffer per watched process was most of the agent's memory for a family
/// (200 idle processes: ~100 MB of it).
final class StackScratch {
    var bytes: [UInt8]

    private init(count: Int) { bytes = [UInt8](repeating: 0, count: count) }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            if let raw { Unmanaged<StackScratch>.fromOpaque(raw).release() }
        }
        return key
    }()

    /// This thread's buffer, at least `minimum` bytes long.
    static func forCurrentThread(minimum: Int) -> StackScratch {
        if let raw = pthread_getspecific(key) {
            let scratch = Unmanaged<StackScratch>.fromOpaque(raw).takeUnretainedValue()
            if scratch.bytes.count < minimum { scratch.bytes = [UInt8](repeating: 0, count: minimum) }
            return scratch
        }
        let scratch = StackScratch(count: minimum)
        pthread_setspecific(key, Unmanaged.passRetained(scratch).toOpaque())
        return scratch
    }
}
