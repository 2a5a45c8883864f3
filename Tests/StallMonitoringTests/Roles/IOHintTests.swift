import Testing

@testable import StallMonitoring

/// A running thread the latest sample found writing a regular file or syncing counts as in
/// I/O: /proc shows only "running" while a write copies into the page cache.
@Suite struct IOHintTests {
    static let fds: [Int: String] = [3: "/var/lib/db/wal", 4: "socket:[123]", 5: "pipe:[9]"]
    static func fileKind(_ fd: Int) -> String? { fds[fd] }

    @Test func fileIOIsAPathOrAnFsync() {
        #expect(IOHint.isFileIO(syscall: 1, fd: 3, fileKind: Self.fileKind), "write(2) to a file")
        #expect(!IOHint.isFileIO(syscall: 1, fd: 4, fileKind: Self.fileKind), "write(2) to a socket")
        #expect(!IOHint.isFileIO(syscall: 0, fd: 5, fileKind: Self.fileKind), "read(2) of a pipe")
        #expect(!IOHint.isFileIO(syscall: 1, fd: 9, fileKind: Self.fileKind), "an unknown descriptor")
        // fsync is I/O whatever its descriptor; a descriptor past 2^31 is no descriptor.
        #expect(IOHint.isFileIO(syscall: 74, fd: 4, fileKind: Self.fileKind))
        #expect(!IOHint.isFileIO(syscall: 1, fd: 1 << 31 | 3, fileKind: Self.fileKind))
        // Not a file-I/O call at all (futex).
        #expect(!IOHint.isFileIO(syscall: 202, fd: 3, fileKind: Self.fileKind))
    }

    /// A sample that names no interrupted call keeps the hint unless it stopped the thread;
    /// `clear` drops it.
    @Test func aSampleSetsAndClearsIt() {
        var hint = IOHint()
        hint.learn(interruptedSyscall: (1, 3), stopped: true, fileKind: Self.fileKind)
        #expect(hint.inFileIO)
        hint.learn(interruptedSyscall: nil, stopped: false, fileKind: Self.fileKind)
        #expect(hint.inFileIO, "a stop-free sample knows no interrupted call")
        hint.learn(interruptedSyscall: nil, stopped: true, fileKind: Self.fileKind)
        #expect(!hint.inFileIO)
        hint.learn(interruptedSyscall: (75, 4), stopped: false, fileKind: Self.fileKind)
        #expect(hint.inFileIO)
        hint.learn(interruptedSyscall: (1, 4), stopped: false, fileKind: Self.fileKind)
        #expect(!hint.inFileIO)
        hint.learn(interruptedSyscall: (1, 3), stopped: false, fileKind: Self.fileKind)
        hint.clear()
        #expect(!hint.inFileIO)
    }
}
