import StallProc

/// The latest ptrace sample found the thread inside file I/O (write(2) to a regular file,
/// fsync): a running thread then counts as in I/O, since /proc shows only "running" while a
/// write copies into the page cache.
struct IOHint {
    private(set) var inFileIO = false

    /// What a sample says: the call it interrupted, when it knows one (`fileKind` names the
    /// target's descriptors); a stop that interrupted none says the thread left any I/O.
    mutating func learn(interruptedSyscall: (number: Int, firstArgument: UInt64)?, stopped: Bool, fileKind: (Int) -> String?) {
        if let (number, firstArgument) = interruptedSyscall {
            inFileIO = Self.isFileIO(syscall: number, fd: firstArgument, fileKind: fileKind)
        } else if stopped {
            inFileIO = false
        }
    }

    /// The thread is seen not busy, or runs another program: no I/O to go on with.
    mutating func clear() {
        inFileIO = false
    }

    /// An fsync-like call, or a file-I/O call on a descriptor naming a path (a regular file,
    /// not a socket or a pipe).
    static func isFileIO(syscall number: Int, fd: UInt64, fileKind: (Int) -> String?) -> Bool {
        if ThreadStateClassifier.fsyncLike.contains(number) { return true }
        guard ThreadStateClassifier.fileIO.contains(number), fd < 1 << 31 else { return false }
        return fileKind(Int(fd))?.hasPrefix("/") ?? false
    }
}
