import CPosix

/// Reads another process's memory with `process_vm_readv`: no stop, no ptrace attach, the
/// same permission check as ptrace.
public enum TargetMemory {
    /// Returns the number of bytes read (short at an unmapped page), or -1 with errno set.
    @discardableResult
    public static func read(pid: Int32, address: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        return sa_read_memory(pid, address, base, buffer.count)
    }
}
