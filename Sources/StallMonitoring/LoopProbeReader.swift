import StallProc
import StallCapture
import StallSymbols

/// Reads what libstallprobe.so (probe/stallprobe.h) publishes in a target that was started
/// with it preloaded: the main thread's loop iterations and the exact times it began and
/// ended each idle wait. One process_vm_readv of 560 bytes per probe.
public final class LoopProbeReader {
    public struct Wait: Sendable, Equatable {
        public var waitNanos: UInt64
        public var wokeNanos: UInt64
    }

    public struct State: Sendable {
        public var iterations: UInt64
        public var inWait: Bool
        /// Wait number n (1-based) is `waits[n % ringSize]`.
        public var waits: [Wait]

        public func wait(number n: UInt64) -> Wait { waits[Int(n % UInt64(LoopProbeReader.ringSize))] }
    }

    static let ringSize = 32
    static let size = 48 + ringSize * 16
    public let pid: Int32
    public let address: UInt64
    private var buffer = [UInt8](repeating: 0, count: LoopProbeReader.size)

    /// Finds the probe in the target's modules; nil when it was not preloaded.
    public init?(pid: Int32, modules: ProcessModules) {
        guard let module = modules.modules.first(where: { $0.name.hasPrefix("libstallprobe") }),
            let offset = module.image?.address(ofSymbol: "stallprobe_state")
        else { return nil }
        self.pid = pid
        address = offset &+ module.bias
        guard read() != nil else { return nil }
    }

    public func read() -> State? {
        let n = buffer.withUnsafeMutableBytes { TargetMemory.read(pid: pid, address: address, into: $0) }
        guard n == LoopProbeReader.size else { return nil }
        return buffer.withUnsafeBytes { raw in
            // "STALLPROBE v1"
            guard raw[0] == 0x53, raw[1] == 0x54, raw[10] == 0x20, raw[11] == 0x76, raw[12] == 0x31 else { return nil }
            var waits: [Wait] = []
            waits.reserveCapacity(LoopProbeReader.ringSize)
            for i in 0..<LoopProbeReader.ringSize {
                waits.append(
                    Wait(
                        waitNanos: raw.loadUnaligned(fromByteOffset: 48 + i * 16, as: UInt64.self),
                        wokeNanos: raw.loadUnaligned(fromByteOffset: 56 + i * 16, as: UInt64.self)))
            }
            return State(
                iterations: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                inWait: raw.loadUnaligned(fromByteOffset: 40, as: UInt32.self) != 0, waits: waits)
        }
    }
}
